"""Multi-process training under torchrun: the process group, each rank's share of a batch, and
the few collectives the trainer needs. In a single process every helper is a cheap no-op, so
the trainer has one code path.

torchrun sets ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE``; :func:`init` joins the process
group (gloo for CPU tensors, and NCCL for CUDA tensors when there is a GPU). The data order
does not depend on the number of processes: every rank builds the same *global* batches from
``trainer.batch_tokens`` and keeps every N-th sentence of each (:func:`shard`), so each rank
works on about ``batch_tokens / N`` tokens and the loss is summed over all ranks and divided by
the global batch's token count. N processes therefore take the same optimizer steps as one
process, up to floating-point rounding (and dropout, whose masks differ), and a run can be
resumed with a different number of processes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from minitrans.core.sharing import Share

# Rank 0 writes checkpoints and logs while the others wait at a collective; give it time.
TIMEOUT = timedelta(minutes=60)


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


# what torchrun sets, and init_process_group's env:// rendezvous needs
TORCHRUN_VARIABLES = ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")


def torchrun_env_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """Why this environment cannot be torchrun's, as one line, or None: a ``WORLD_SIZE`` above 1
    left over from another job, without the ``RANK`` and rendezvous address that go with it, would
    otherwise end in a rendezvous traceback (or a wait for processes that never come)."""
    if "WORLD_SIZE" not in environ:
        return None
    advice = "unset WORLD_SIZE or start with torchrun"
    numbers = {name: environ[name] for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK") if name in environ}
    for name, value in numbers.items():
        if not value.strip().isdigit():
            return f"the environment sets {name}={value!r}, which is not a whole number; {advice}"
    world = int(environ["WORLD_SIZE"])
    if world <= 1:
        return None
    given = [f"{name}={environ[name]}" for name in TORCHRUN_VARIABLES if environ.get(name)]
    missing = [name for name in TORCHRUN_VARIABLES if not environ.get(name)]
    if missing:
        return f"the environment sets {', '.join(given)} but not {', '.join(missing)} (a leftover?); {advice}"
    if int(environ["RANK"]) >= world:
        return f"the environment sets {', '.join(given)}, but RANK must be below WORLD_SIZE; {advice}"
    return None


def from_env() -> DistInfo:
    """This process's place in the job, as torchrun describes it (one process otherwise)."""
    return DistInfo(
        rank=int(os.environ.get("RANK", 0)),
        world_size=int(os.environ.get("WORLD_SIZE", 1)),
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
    )


def init() -> DistInfo:
    """Join torchrun's process group (once); a no-op in a single process."""
    info = from_env()
    if info.enabled and not dist.is_initialized():
        backend = "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(info.local_rank)
            backend = "cpu:gloo,cuda:nccl"
        dist.init_process_group(backend, timeout=TIMEOUT)
    return info


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def local_device(device: torch.device, info: DistInfo) -> torch.device:
    """Under torchrun each process on a node drives its own GPU."""
    if info.enabled and device.type == "cuda":
        return torch.device("cuda", info.local_rank)
    return device


def shard(indices: Sequence[int], info: DistInfo) -> tuple[list[int], float]:
    """This rank's sentences of a global batch, and the weight of its loss. Sentences are dealt
    out in turn (the batch is sorted by length, so shards have similar shapes). A rank left
    without a sentence computes the first one with weight 0: DDP needs every rank's backward."""
    mine = list(indices[info.rank :: info.world_size])
    return (mine, 1.0) if mine else (list(indices[:1]), 0.0)


def all_reduce_sum(tensor: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if info.enabled:
        dist.all_reduce(tensor)
    return tensor


def all_reduce_max(values: Sequence[float], info: DistInfo, device: torch.device) -> list[float]:
    """Each value's largest over the ranks (a time budget's seconds, which differ a little from
    rank to rank): one small all-reduce, in float64. In one process, the values themselves."""
    if not info.enabled:
        return [float(value) for value in values]
    tensor = torch.tensor([float(value) for value in values], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def any_rank(flags: Sequence[bool], info: DistInfo, device: torch.device) -> list[bool]:
    """Each flag, true on every rank if it is true on one (a stop signal that reached one
    process): one small all-reduce."""
    return [value > 0 for value in all_reduce_max([float(flag) for flag in flags], info, device)]


def all_gather_object(value: Any, info: DistInfo) -> list[Any]:
    """Every rank's ``value``, in rank order (a list of one in a single process)."""
    if not info.enabled:
        return [value]
    gathered: list[Any] = [None] * info.world_size
    dist.all_gather_object(gathered, value)
    return gathered


def differing_settings(settings: Mapping[str, Any], info: DistInfo) -> dict[str, dict[str, list[int]]]:
    """The settings whose values differ between the ranks: setting -> {value as written: the
    ranks with it}, in the settings' order (empty when all agree; always in one process). One
    all-gather of every rank's ``settings`` (a flat mapping of plain values)."""
    gathered = all_gather_object(dict(settings), info)
    keys = list(dict.fromkeys(key for each in gathered for key in each))
    missing = object()
    differ = {}
    for key in keys:
        values = [each.get(key, missing) for each in gathered]
        if any(value != values[0] for value in values[1:]):
            ranks: dict[str, list[int]] = {}
            for rank, value in enumerate(values):
                ranks.setdefault("(not set)" if value is missing else repr(value), []).append(rank)
            differ[key] = ranks
    return differ


def gather_object(value: Any, info: DistInfo) -> list[Any] | None:
    """Every rank's ``value`` in rank order on rank 0, None on the others (a list of one in a
    single process): for what only rank 0 needs, such as the attention cards it logs."""
    if not info.enabled:
        return [value]
    gathered: list[Any] | None = [None] * info.world_size if info.is_main else None
    dist.gather_object(value, gathered, dst=0)
    return gathered


def evaluation_share(info: DistInfo) -> Share:
    """This rank's part in an evaluation that every rank shares (:mod:`minitrans.core.sharing`)."""
    return Share(
        info.rank,
        info.world_size,
        lambda value: all_gather_object(value, info),
        lambda value: gather_object(value, info),
    )


def broadcast_tensors(tensors: Sequence[torch.Tensor], info: DistInfo) -> None:
    """Rank 0's values of ``tensors`` copied into every rank's, in place (the weights rank 0
    chose for the final evaluation)."""
    if info.enabled:
        for tensor in tensors:
            dist.broadcast(tensor, src=0)


def broadcast_object(value: Any, info: DistInfo) -> Any:
    """Rank 0's ``value`` on every rank."""
    if not info.enabled:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


class InTurn:
    """Run a block on rank 0 first, then on the first rank of every node, then on the rest:
    caches (tokenizer, tokenised corpus) are written once per machine, and then only read."""

    def __init__(self, info: DistInfo) -> None:
        self.info = info
        self.turn = 0 if info.rank == 0 else 1 if info.local_rank == 0 else 2

    def __enter__(self) -> None:
        for _ in range(self.turn):
            barrier(self.info)

    def __exit__(self, *exc) -> None:
        if exc[0] is None:  # on an error this rank exits and torchrun stops the others
            for _ in range(self.turn, 3):
                barrier(self.info)

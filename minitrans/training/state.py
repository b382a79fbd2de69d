"""What a training run is at any moment, what its checkpoints hold, and how it comes back.

:class:`TrainState` is the loop's position (step, epoch, batch within the epoch, best BLEU,
counters); :func:`checkpoint_payload` is what a checkpoint holds (the one builder: the trainer's
and the tests' checkpoints alike): weights, configuration and tokenizer, and for a training
checkpoint the optimizer, schedule and loop position beside them (the trainer adds every rank's
random generators). :func:`restore_training` puts all of them back, refusing anything malformed
with one :class:`~minitrans.core.checkpoint.CheckpointError` line.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.checks import first_line
from minitrans.core.utils import set_rng_state
from minitrans.training.distributed import DistInfo
from minitrans.training.resume import AFRESH
from minitrans.training.step import load_optimizer_state

if TYPE_CHECKING:
    from minitrans.core.config import TrainConfig
    from minitrans.data.tokenizer import Tokenizer
    from minitrans.inference.coverage import TrainingRecord

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. too many non-finite steps); the last checkpoint is intact."""


class TrainingStopped(Exception):
    """SIGINT / SIGTERM stopped the run after writing a checkpoint; ``exit_code`` is 128 + signal,
    ``run_dir`` the folder to resume in (re-running into it continues from its last.pt), ``then``
    what running again does there ("resume" training, or "finish" the final evaluation)."""

    def __init__(self, message: str, exit_code: int, run_dir: Path, then: str = "resume") -> None:
        super().__init__(message)
        self.exit_code, self.run_dir, self.then = exit_code, Path(run_dir), then

    def resume_line(self, overrides: Sequence[str], program: str = "python scripts/train.py") -> str:
        """The line that says how to go on: the run's own ``overrides`` with ``hydra.run.dir`` set
        to its folder, so a run in a time-stamped folder continues there instead of in a new one."""
        kept = [arg for arg in overrides if not arg.startswith("hydra.run.dir=")]
        return f"to {self.then}, run: {program} {shlex.join([*kept, f'hydra.run.dir={self.run_dir}'])}"


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of ``epoch`` already trained on
    best_bleu: float = -1.0
    bad_steps: int = 0  # consecutive non-finite steps
    skipped_steps: int = 0
    train_seconds: float = 0.0


def checkpoint_payload(
    cfg: TrainConfig,
    tokenizer: Tokenizer,
    model: torch.nn.Module,
    step: int = 0,
    record: TrainingRecord | None = None,
    *,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    state: TrainState | None = None,
    world_size: int | None = None,
) -> dict:
    """What a checkpoint holds, in the order it is written: the run's configuration, tokenizer,
    weights and step, the record of the training data when there is one (translate.py warns and
    ``--info`` reports from it), and with ``optimizer`` the training state (schedule, loop
    position, number of processes) that resuming needs; all four or none of those."""
    payload = {
        "config": asdict(cfg),
        "tokenizer": tokenizer.to_state(),
        "model": model.state_dict(),
        "step": step,
    }
    if record is not None:
        payload["training_data"] = record.to_state()
    training = (optimizer, scheduler, state, world_size)
    if any(part is not None for part in training):
        if any(part is None for part in training):
            raise ValueError("a training checkpoint needs the optimizer, scheduler, state and world_size together")
        payload |= {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "state": asdict(state),
            "world_size": world_size,
        }
    return payload


def crash_after(step: int) -> Callable[[TrainState], None]:
    """A step hook for ``trainer.crash_at_step``, a testing aid: SIGKILL this process right after
    ``step``, as a crash would (the resume tests need a run that dies without a chance to save)."""

    def hook(state: TrainState) -> None:
        if state.step == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def restore_training(
    payload: dict,
    path: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    dist: DistInfo,
) -> TrainState:
    """Weights, optimizer, schedule, loop position and this rank's generators from a training
    checkpoint; a weights-only or malformed one is a CheckpointError saying how to start afresh."""
    if "optimizer" not in payload:
        raise CheckpointError(f"{path} holds weights only (no optimizer or data position); resume from a last.pt")
    try:
        model.load_state_dict(payload["model"])
        load_optimizer_state(optimizer, payload["optimizer"])
        scheduler.load_state_dict(payload["scheduler"])
        state = _checked_state(payload["state"])
        rng = payload["rng"]  # one state per rank of the run that wrote it
        if not isinstance(rng, list) or not rng:
            raise ValueError("no random generator state")
        if dist.rank < len(rng):
            set_rng_state(rng[dist.rank])
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as error:
        raise CheckpointError(
            f"{path} does not hold a usable training state ({type(error).__name__}: {first_line(error, '')}); {AFRESH}"
        ) from None
    if len(rng) != dist.world_size and dist.is_main:  # the data order is still the same
        log.warning("resuming a %d-process run with %d: dropout masks will differ", len(rng), dist.world_size)
    if dist.is_main:
        log.info("resumed from %s at step %d (epoch %d)", path, state.step, state.epoch)
    return state


def _checked_state(values: dict) -> TrainState:
    state = TrainState(**values)
    for name, default in asdict(TrainState()).items():
        value = getattr(state, name)
        if isinstance(value, bool) or not isinstance(value, (int, float) if isinstance(default, float) else int):
            raise TypeError(f"state.{name} is {value!r}")
    return state


__all__ = ["TrainState", "TrainingError", "TrainingStopped", "checkpoint_payload", "crash_after", "restore_training"]

"""A run's checkpoints as the trainer sees them: what one holds, what a run writes, which weights
it is judged by, and how a run comes back from one.

- What a checkpoint holds: :func:`checkpoint_payload` (the one builder, the trainer's and the tests'
  alike): weights, configuration and tokenizer, and for a training checkpoint the optimizer,
  schedule and loop position beside them (the trainer adds every rank's random generators).
- What a run writes: :class:`Checkpoints`, the trainer's policy on top of the folder's layout
  (:class:`minitrans.core.checkpoint.CheckpointFolder`): last.pt at every checkpoint, best.pt
  whenever validation BLEU is at least the best so far (unless the run is judged by its last
  weights, ``keep_best=False``), the newest ``keep_steps`` step files for averaging, and at the end
  :meth:`Checkpoints.final_weights`: the average of those step files when more than one is kept,
  else the best validation BLEU's, or the last weights.
- Resuming: :func:`resume_checkpoint` picks the checkpoint a run continues from and checks it is of
  this run (a run resumes only the model, training data and seed it was trained with;
  ``trainer.*`` may change, and so may what is evaluated, :data:`EVALUATION_ONLY`);
  :func:`restore_training` puts weights, optimizer, schedule, loop position and generators back,
  refusing anything malformed with one :class:`~minitrans.core.checkpoint.CheckpointError` line.

Reading and writing one file safely is :mod:`minitrans.core.checkpoint`'s.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from minitrans.core.checkpoint import (
    CheckpointError,
    CheckpointFolder,
    average_state_dicts,
    load_checkpoint,
    save_checkpoint,
)
from minitrans.core.checks import ConfigError, first_line
from minitrans.core.config import TrainConfig, TrainerConfig
from minitrans.core.saved_config import EVALUATION_ONLY, normalized_model
from minitrans.core.utils import set_rng_state
from minitrans.data.tokenizer import Tokenizer
from minitrans.training import distributed
from minitrans.training.distributed import DistInfo
from minitrans.training.state import TrainState
from minitrans.training.step import load_optimizer_state

if TYPE_CHECKING:
    from minitrans.inference.coverage import TrainingRecord

log = logging.getLogger(__name__)


@dataclass
class FinalWeights:
    """The weights a finished run is judged by: ``state`` to load (None: the model's own, e.g. a
    run started with ``resume_from`` at a finished step), and how they were chosen."""

    state: dict[str, torch.Tensor] | None
    source: str  # "average of last N checkpoints" | "best validation BLEU" | "last weights"
    is_averaged: bool = False


class Checkpoints(CheckpointFolder):
    """A run's ``checkpoints/`` folder as the trainer writes it (see the module's docstring)."""

    def __init__(self, folder: str | Path, keep_steps: int = 1, keep_best: bool = True) -> None:
        super().__init__(folder)
        self.keep_steps, self.keep_best = keep_steps, keep_best

    def save_last(self, payload: dict[str, Any]) -> Path:
        save_checkpoint(payload, self.last)
        return self.last

    def save_best(self, payload: dict[str, Any]) -> None:
        if self.keep_best:
            save_checkpoint(payload, self.best)

    def save_step(self, payload: dict[str, Any], step: int) -> None:
        """Keep the weights of ``step`` for averaging, and only the newest ``keep_steps`` files."""
        save_checkpoint(payload, self.folder / f"step_{step:07d}.pt")
        for old in self.step_files()[: -self.keep_steps]:
            old.unlink()

    def save_averaged(self, payload: dict[str, Any]) -> None:
        save_checkpoint(payload, self.averaged)

    def final_weights(self, map_location: str | torch.device = "cpu") -> FinalWeights:
        """The average of the kept step files when the run keeps more than one, else best.pt, or
        the last weights (the model's own) when the run keeps no best.pt. A stale averaged.pt (say
        of a finish with ``average_last=3``, resumed with 1), or a stale best.pt of a run now
        judged by its last weights, is removed: left there, :meth:`preferred` would pick it over
        the weights reported now."""
        paths = self.step_files()[-self.keep_steps :]
        if self.keep_steps > 1 and paths:
            state = average_state_dicts([load_checkpoint(path)["model"] for path in paths])
            return FinalWeights(state, f"average of last {len(paths)} checkpoints", is_averaged=True)
        self.averaged.unlink(missing_ok=True)
        if not self.keep_best:
            self.best.unlink(missing_ok=True)
        if not self.best.exists():
            return FinalWeights(None, "last weights")
        return FinalWeights(load_checkpoint(self.best, map_location=map_location)["model"], "best validation BLEU")


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


AFRESH = "to start afresh: trainer.resume=false or a new run folder"


def resume_checkpoint(
    checkpoints: Checkpoints, cfg: TrainConfig, device: torch.device
) -> tuple[Path | None, dict | None]:
    """The checkpoint a run continues from and its contents, checked to be of this run (model,
    data and seed) with a usable tokenizer; ``(None, None)`` for a fresh start."""
    path = find_resume_checkpoint(checkpoints, cfg.trainer)
    payload = load_resume_checkpoint(path, device)
    if payload is not None:
        check_same_run(payload.get("config", {}), cfg, path)
        try:
            Tokenizer.from_state(payload["tokenizer"])
        except (KeyError, TypeError, AttributeError, RuntimeError, OSError):
            raise CheckpointError(f"{path} holds no usable tokenizer; {AFRESH}") from None
    return path, payload


def find_resume_checkpoint(checkpoints: Checkpoints, tcfg: TrainerConfig) -> Path | None:
    """The checkpoint a run starts from: its own ``last.pt`` first (so a re-run continues where
    it stopped), then ``trainer.resume_from``; None for a fresh start."""
    if tcfg.resume and checkpoints.last.exists():
        return checkpoints.last
    if tcfg.resume_from is not None:
        if not Path(tcfg.resume_from).is_file():
            raise CheckpointError(f"trainer.resume_from: no checkpoint at {tcfg.resume_from}")
        return Path(tcfg.resume_from)
    return None


def load_resume_checkpoint(path: Path | None, device: torch.device) -> dict | None:
    """The checkpoint's contents (None for a fresh start); a problem says how to start afresh."""
    if path is None:
        return None
    try:
        return load_checkpoint(path, map_location=device)
    except CheckpointError as error:
        raise CheckpointError(f"{error} ({AFRESH})") from None


def _same_value(saved, value) -> bool:
    """Equal, or the same number spelt another way ('2' and '2.0' of model.attention_scale): a
    text field holding a number means the number."""
    if saved == value:
        return True
    if not (isinstance(saved, str) and isinstance(value, str)):
        return False
    try:
        return float(saved) == float(value)
    except ValueError:
        return False


def check_same_run(saved_config: dict, cfg: TrainConfig, path: Path) -> None:
    """Refuse (ConfigError naming the key) a checkpoint of another model, corpus or seed."""
    config = asdict(cfg)
    for section in ("model", "data"):
        saved = saved_config.get(section, {})
        if section == "model":
            saved = normalized_model(saved)
        for key, value in config[section].items():
            if key not in EVALUATION_ONLY and key in saved and not _same_value(saved[key], value):
                raise ConfigError(
                    f"{section}.{key}: {path} was trained with {saved[key]!r}, not {value!r}; resume with "
                    "the original value, use a new run folder, or set trainer.resume=false"
                )
    saved_seed = saved_config.get("seed", cfg.seed)
    if saved_seed != cfg.seed:  # the data order and every random stream follow the seed
        raise ConfigError(
            f"seed: {path} was trained with seed={saved_seed}, not {cfg.seed}; resume with "
            "the original seed, use a new run folder, or set trainer.resume=false"
        )


def load_final_weights(model, checkpoints: Checkpoints, dist, device: torch.device, averaged_payload) -> str:
    """Load the weights a run is judged by (see :meth:`Checkpoints.final_weights`), chosen by
    rank 0 and sent to the other ranks; an average is saved as averaged.pt (``averaged_payload()``
    builds its checkpoint). Returns how they were chosen (on rank 0; an empty string elsewhere)."""
    chosen = checkpoints.final_weights(map_location=device) if dist.is_main else None
    if chosen is not None and chosen.state is not None:
        model.load_state_dict(chosen.state)
    with torch.no_grad():
        distributed.broadcast_tensors(list(model.state_dict().values()), dist)
    if chosen is not None and chosen.is_averaged:
        checkpoints.save_averaged(averaged_payload())
    return chosen.source if chosen is not None else ""


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


__all__ = [
    "AFRESH",
    "Checkpoints",
    "FinalWeights",
    "check_same_run",
    "checkpoint_payload",
    "find_resume_checkpoint",
    "load_final_weights",
    "load_resume_checkpoint",
    "restore_training",
    "resume_checkpoint",
]

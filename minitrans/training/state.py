"""What a training run is at any moment, and what ends it early.

:class:`TrainState` is the loop's position (step, epoch, batch within the epoch, best BLEU,
counters), which a training checkpoint holds (:mod:`minitrans.training.checkpoints`);
:class:`TrainingError` and :class:`TrainingStopped` are how a run ends before its last step, and
:func:`crash_after` kills it outright, as a crash would.
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


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


def crash_after(step: int) -> Callable[[TrainState], None]:
    """A step hook for ``trainer.crash_at_step``, a testing aid: SIGKILL this process right after
    ``step``, as a crash would (the resume tests need a run that dies without a chance to save)."""

    def hook(state: TrainState) -> None:
        if state.step == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


__all__ = ["TrainState", "TrainingError", "TrainingStopped", "crash_after"]

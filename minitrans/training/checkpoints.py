"""What a training run writes into its ``checkpoints/`` folder, and which weights it is judged by.

The layout itself (file names, the file translation takes) is
:class:`minitrans.core.checkpoint_folder.CheckpointFolder`'s; this is the trainer's policy on top of
it: last.pt at every checkpoint, best.pt whenever validation BLEU is at least the best so far
(unless the run is judged by its last weights, ``keep_best=False``), the newest ``keep_steps``
step files for averaging, and at the end :meth:`Checkpoints.final_weights`: the average of those
step files when more than one is kept, else the best validation BLEU's, or the last weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from minitrans.core.checkpoint import average_state_dicts, load_checkpoint, save_checkpoint
from minitrans.core.checkpoint_folder import CheckpointFolder


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


__all__ = ["Checkpoints", "FinalWeights"]

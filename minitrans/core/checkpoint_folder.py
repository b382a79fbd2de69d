"""Where a run keeps its checkpoints, as everything that reads them sees it.

A run's ``checkpoints/`` folder holds:

    last.pt          the training state to resume from (weights, optimizer, data position, RNG)
    best.pt          the weights chosen by validation so far
    step_NNNNNNN.pt  the weights at each validation, the newest few kept (for averaging)
    averaged.pt      the mean of the kept step files, written when the run finishes

:class:`CheckpointFolder` knows these names and which one translation and evaluation take
(:meth:`~CheckpointFolder.preferred`: averaged, else best, else last); :func:`resolve_checkpoint`
turns a run folder into that file. What a run writes there and which weights it is judged by
is the trainer's policy (:class:`minitrans.training.checkpoints.Checkpoints`); reading and writing
one file safely is :mod:`minitrans.core.checkpoint`'s.
"""

from __future__ import annotations

from pathlib import Path

from minitrans.core.checkpoint import CheckpointError


class CheckpointFolder:
    """The ``checkpoints/`` folder of a run: its file names, and the file to translate with."""

    LAST, BEST, AVERAGED = "last.pt", "best.pt", "averaged.pt"
    PREFERENCE = (AVERAGED, BEST, LAST)
    STEP_PATTERN = "step_*.pt"

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @classmethod
    def of_run(cls, run_dir: str | Path, **options):
        """The checkpoints of the run in ``run_dir`` (its ``checkpoints/`` folder)."""
        return cls(Path(run_dir) / "checkpoints", **options)

    @classmethod
    def find(cls, path: str | Path):
        """The checkpoints of a run folder, given the run folder or a folder of checkpoints."""
        path = Path(path)
        return cls.of_run(path) if (path / "checkpoints").is_dir() else cls(path)

    @staticmethod
    def run_folder_of(checkpoint: str | Path) -> Path:
        """The run folder a checkpoint file belongs to (``RUN/checkpoints/best.pt`` -> ``RUN``;
        any other file: its own folder). The one answer every reader uses: where evaluate.py
        writes eval/, where a model card finds the training command, what the web app calls a run."""
        parent = Path(checkpoint).parent
        return parent.parent if parent.name == "checkpoints" else parent

    @property
    def last(self) -> Path:
        return self.folder / self.LAST

    @property
    def best(self) -> Path:
        return self.folder / self.BEST

    @property
    def averaged(self) -> Path:
        return self.folder / self.AVERAGED

    def step_files(self) -> list[Path]:
        """The kept ``step_*.pt`` files, oldest first."""
        return sorted(self.folder.glob(self.STEP_PATTERN))

    def preferred(self) -> Path | None:
        """The checkpoint to translate with: averaged.pt, else best.pt, else last.pt; None if none."""
        return next((self.folder / name for name in self.PREFERENCE if (self.folder / name).is_file()), None)


def resolve_checkpoint(path: str | Path) -> Path:
    """A ``.pt`` file as it is; a run folder (or its ``checkpoints/``) -> its preferred checkpoint
    (averaged.pt, else best.pt, else last.pt)."""
    path = Path(path)
    if not path.is_dir():
        return path
    for checkpoints in (CheckpointFolder.of_run(path), CheckpointFolder(path)):
        found = checkpoints.preferred()
        if found is not None:
            return found
    names = ",".join(CheckpointFolder.PREFERENCE)
    raise CheckpointError(f"no checkpoint in {path} (looked for checkpoints/{{{names}}})")


__all__ = ["CheckpointFolder", "resolve_checkpoint"]

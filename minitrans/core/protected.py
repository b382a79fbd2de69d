"""What no command may write over: its own input, a checkpoint, or the record a run or an
export keeps.

Every command that writes a file the user names (``translate.py -o`` and ``--attention``,
``average.py -o``) asks :func:`output_problem` before anything is read or written, so a slip
of the hand costs one ``error:`` line, never a run. Refused:

- one of the command's own inputs, however spelt: another relative path, a symbolic or hard
  link, or the file that stdin was redirected from;
- a file of a run's ``checkpoints/`` (``last.pt`` may be the run's only resumable state);
- anything inside a run folder that the run wrote: ``checkpoints/``, ``.hydra/``,
  ``tokenizer/``, ``translations/``, ``eval/``, ``summary.json``, ``train.log``, its lock and
  its TensorBoard events (a run folder is one holding ``checkpoints/``, ``.hydra/`` or
  ``summary.json``);
- an existing file of an exported folder (``minitrans.json``: CTranslate2; ``model.safetensors``:
  the shareable folder);
- a sweep's ``multirun.yaml``;
- an existing checkpoint anywhere, by its suffix (``.pt``, ``.safetensors``, ...) or, under
  another name, by its content (PyTorch's zip archive).

A new file next to a run's record (``RUN/avg.pt``, ``RUN/out.de``) is allowed.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

from minitrans.core.checkpoint import CheckpointFolder

RUN_MARKERS = ("checkpoints", ".hydra", "summary.json")  # what makes a folder a run's
RUN_RECORD = (
    "checkpoints",
    ".hydra",
    "tokenizer",
    "translations",
    "eval",
    "summary.json",
    "train.log",
    ".lock",
    ".lock.holder",
    "events.out.tfevents.*",
)
EXPORT_MARKERS = ("minitrans.json", "model.safetensors")  # a CTranslate2 export; a shareable folder
SWEEP_RECORD = "multirun.yaml"  # what Hydra writes at the top of a sweep's folder
MODEL_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".model")

# an input: a path, or an open file descriptor (stdin), with what the message calls it
Input = tuple[str | os.PathLike | int, str]


def _is_input(output: Path, target: Path, source: str | os.PathLike | int) -> bool:
    try:
        if isinstance(source, int):
            found = os.fstat(source)
            return stat.S_ISREG(found.st_mode) and output.exists() and os.path.samestat(found, os.stat(output))
        source = Path(source)
        return target == source.resolve() or (output.exists() and source.exists() and output.samefile(source))
    except (OSError, ValueError):
        return False


def _is_run_folder(folder: Path) -> bool:
    return any((folder / name).exists() for name in RUN_MARKERS)


def _run_record(target: Path) -> tuple[Path, str] | None:
    """(run folder, the part of its record) when ``target`` lies in a run's record."""
    for folder in (target.parent, target.parent.parent):
        if folder == target or not _is_run_folder(folder):
            continue
        first = target.relative_to(folder).parts[0]
        if any(fnmatch(first, name) for name in RUN_RECORD):
            return folder, first
    return None


def _is_torch_file(path: Path) -> bool:
    """True for a file ``torch.save`` wrote (a zip archive holding a pickle), whatever its name."""
    try:
        with path.open("rb") as file:
            if file.read(4) != b"PK\x03\x04":
                return False
        with zipfile.ZipFile(path) as archive:
            return any(name.endswith("data.pkl") for name in archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def output_problem(output: str | os.PathLike, inputs: Sequence[Input] = (), flag: str = "-o") -> str | None:
    """Why ``output`` must not be written (one line, starting ``FLAG OUTPUT:``), or None.

    ``inputs`` are what the command reads, each with the words that name it in the message
    ("the input", "one of the checkpoints to average")."""
    output = Path(output)
    target = output.resolve()
    for source, what in inputs:
        if _is_input(output, target, source):
            return f"{flag} {output}: it is {what}; name a new file"
    owned = target.name in CheckpointFolder.PREFERENCE or target.match(CheckpointFolder.STEP_PATTERN)
    if owned and (target.parent.name == "checkpoints" or (target.parent / CheckpointFolder.LAST).is_file()):
        return (
            f"{flag} {output}: {target.name} belongs to the run in {CheckpointFolder.run_folder_of(target)} "
            "(its training writes it); name a file outside the run's checkpoints/ (e.g. RUN/avg.pt)"
        )
    record = _run_record(target)
    if record is not None:
        folder, part = record
        return (
            f"{flag} {output}: {part} is part of the record of the run in {folder} (the run wrote it); "
            f"name a new file beside it (e.g. {folder / 'out.txt'})"
        )
    if target.is_file() and any((target.parent / name).is_file() for name in EXPORT_MARKERS):
        return f"{flag} {output}: it belongs to the exported model in {target.parent}; name a new file outside it"
    if target.name == SWEEP_RECORD and target.is_file():
        return f"{flag} {output}: it is the record of the sweep in {target.parent}; name a new file"
    if target.is_file() and target.suffix.lower() in MODEL_SUFFIXES:
        return f"{flag} {output}: an existing {target.suffix} file (a model's weights or tokenizer); name a new file"
    if target.is_file() and _is_torch_file(target):
        return f"{flag} {output}: it holds a checkpoint (a PyTorch file); name a new file"
    return None


__all__ = ["EXPORT_MARKERS", "MODEL_SUFFIXES", "RUN_RECORD", "output_problem"]

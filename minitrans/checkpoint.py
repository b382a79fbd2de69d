"""Checkpoints: atomic to write, safe to load, and self-contained.

A checkpoint is a plain dict of tensors, numbers, strings and bytes: the model config, the
serialized SentencePiece models, the weights, and (for training checkpoints) the optimizer,
schedule, data position and random generator states. It is always loaded with
``torch.load(weights_only=True)``, which refuses pickled code, and it is written to a
temporary file that is flushed and renamed, so a crash during a save leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

FORMAT = "minitrans-checkpoint"
VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupt, unsafe or of the wrong kind."""


def save_checkpoint(payload: dict[str, Any], path: str | Path) -> None:
    """Write atomically: a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "version": VERSION, **payload}
    handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(payload, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform can open a folder
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a minitrans checkpoint safely; any problem becomes one clear CheckpointError."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else "unsafe content"
        raise CheckpointError(f"{path} was refused by the safe loader (weights_only=True): {first_line}") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or corrupt ({type(error).__name__}); it cannot be loaded") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a minitrans checkpoint")
    if payload.get("version", 0) > VERSION:
        raise CheckpointError(
            f"{path} has checkpoint version {payload['version']}; this minitrans reads up to {VERSION}"
        )
    return payload

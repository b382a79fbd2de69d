"""Checkpoints: atomic to write, safe to load, and self-contained.

A checkpoint is a plain dict of tensors, numbers, strings and bytes: the model config, the
serialized SentencePiece models, the weights, and (for training checkpoints) the optimizer,
schedule, data position and random generator states.

Writing: a temporary file in the same folder, flushed and fsynced, then renamed over the old
one, so a crash or a kill during a save leaves the previous checkpoint intact.

Loading never runs code from the file. Before torch sees it, the archive's CRCs are checked,
member names that collide case-insensitively are refused, and the pickle record torch's own
zip reader returns (the one ``torch.load`` will unpickle) is scanned: every global it names
must be one of the few that dense tensors, state dicts and bytes need, and opcodes that
build anything else (sets) are refused, so a ``set``, an ``nn.Parameter``, a sparse or
subclassed tensor never load. Then it is read with ``torch.load(weights_only=True)``, passed
explicitly (torch's ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` only changes calls that leave
``weights_only`` unset, and the scan holds even if something has patched ``torch.load``). Any
problem is one :class:`CheckpointError` with a one-line message.

A run keeps its checkpoints in one folder, :class:`CheckpointFolder` (below): ``last.pt``, the
training state to resume from; ``best.pt``, the weights chosen by validation so far;
``step_NNNNNNN.pt``, the weights at each validation (the newest few kept, for averaging); and
``averaged.pt``, the mean of the kept step files, written when the run finishes. It knows these
names and which file translation and evaluation take (averaged, else best, else last);
:func:`resolve_checkpoint` turns a run folder into that file. What a run writes there, and which
weights it is judged by, is the trainer's policy (:mod:`minitrans.training.checkpoints`).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import pickletools
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from minitrans.core.checks import first_line
from minitrans.core.utils import atomic_file, disk_space

FORMAT = "minitrans-checkpoint"
VERSION = 1

# What torch.save writes for dense tensors, storages, state dicts and bytes, and nothing else
# (``__builtin__ bytes``: how protocol 2 spells an empty bytes object).
_ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),
    ("torch", "Size"),
    ("torch", "device"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("__builtin__", "bytes"),
    ("builtins", "bytes"),
}
_NAMING_OPCODES = {"GLOBAL", "STACK_GLOBAL", "INST", "EXT1", "EXT2", "EXT4"}
_REFUSED_OPCODES = {"EMPTY_SET", "ADDITEMS", "FROZENSET", "OBJ", "NEWOBJ", "NEWOBJ_EX"}  # not in a checkpoint
_ZIP_MAGIC = b"PK\x03\x04"  # torch.load reads anything else as a legacy (non-zip) pickle


# torch.load(weights_only=True) itself had holes: CVE-2025-32434 (code execution, torch <= 2.5.1)
# and CVE-2026-24747 (memory corruption in the weights-only unpickler, torch < 2.10).
SAFE_TORCH = "2.10"


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupt, unsafe or of the wrong kind."""


def save_checkpoint(payload: dict[str, Any], path: str | Path) -> None:
    """Write atomically: a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format": FORMAT, "version": VERSION, **payload}
    if isinstance(payload.get("config"), dict) and "model" in payload["config"]:
        payload["model_config_sha256"] = model_config_digest(payload["config"])
    try:
        with atomic_file(path) as file:
            torch.save(payload, file)
    except OSError as error:  # a full disk, a quota: one line, and the previous file stands
        raise CheckpointError(
            f"could not write {path}: {error.strerror or error} ({disk_space(path)}); "
            "the previous checkpoint there is intact"
        ) from None
    except RuntimeError as error:
        if "unexpected pos" not in str(error):  # not the writer's failure: a bug to see whole
            raise
        # torch's zip writer turns a failed write (a full disk, a quota) into this RuntimeError
        raise CheckpointError(
            f"could not write {path}: the write failed (disk full? {disk_space(path)}); "
            "the previous checkpoint there is intact"
        ) from None
    _fsync_dir(path.parent)


def model_config_digest(config: dict) -> str:
    """A digest of a checkpoint's model config, saved with its weights: an edit that leaves every
    weight's shape as it was (``num_heads`` with the default ``d_k``) still shows."""
    return hashlib.sha256(json.dumps(config["model"], sort_keys=True).encode()).hexdigest()


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
    if _is_safetensors(path):
        raise CheckpointError(
            f"{path} is a safetensors file (the weights of a shared folder, export.py --to hf), not a .pt "
            "checkpoint; give the folder where a model is read, a run's checkpoints where one is trained or averaged"
        )
    _check_archive(path)
    if torch.__version__ < SAFE_TORCH:
        warnings.warn(
            f"torch {torch.__version__} has known weights-only unpickler vulnerabilities (CVE-2025-32434, "
            f"CVE-2026-24747); use torch>={SAFE_TORCH} before loading checkpoints from others",
            stacklevel=2,
        )
    try:
        with torch.serialization.safe_globals([bytes]):  # b"" is pickled as bytes(); torch refuses it alone
            payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        reason = first_line(error, "unsafe content")
        raise CheckpointError(f"{path} was refused by the safe loader (weights_only=True): {reason}") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or corrupt ({type(error).__name__}); it cannot be loaded") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a minitrans checkpoint")
    if payload.get("version", 0) > VERSION:
        raise CheckpointError(
            f"{path} has checkpoint version {payload['version']}; this minitrans reads up to {VERSION}"
        )
    digest = payload.get("model_config_sha256")  # absent from checkpoints written before it existed
    if digest is not None:
        try:
            same = model_config_digest(payload["config"]) == digest
        except (KeyError, TypeError, ValueError):
            same = False
        if not same:
            raise CheckpointError(
                f"{path} was refused: its model config is not the one its weights were saved with (edited?)"
            )
    return payload


def _is_safetensors(path: Path) -> bool:
    """A safetensors file starts with its header's length (8 bytes, little-endian), then '{'."""
    try:
        with open(path, "rb") as file:
            head = file.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < path.stat().st_size


def _check_archive(path: Path) -> None:
    """torch.save's zip archive, whole (CRCs), unambiguous (no two member names that differ
    only in case: torch's reader matches names case-insensitively), whose pickle, read with
    torch's own reader, names only what tensors need."""
    try:
        with open(path, "rb") as file:
            magic = file.read(len(_ZIP_MAGIC))
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or corrupt ({error}); it cannot be loaded") from None
    if magic != _ZIP_MAGIC:
        raise CheckpointError(f"{path} is corrupt (it does not start as a zip archive); it cannot be loaded")
    if damaged is not None:
        raise CheckpointError(f"{path} is corrupt (member {damaged} fails its CRC check); it cannot be loaded")
    folded = [name.lower() for name in names]
    if len(set(folded)) != len(folded):
        twin = next(name for name in names if folded.count(name.lower()) > 1)
        raise CheckpointError(f"{path} was refused: two members are named {twin!r} up to case")
    try:  # exactly the record torch.load will unpickle
        data = torch._C.PyTorchFileReader(str(path)).get_record("data.pkl")
    except (RuntimeError, OSError, ValueError):
        raise CheckpointError(f"{path} is not a minitrans checkpoint (torch finds no data.pkl in it)") from None
    unsafe = _unsafe_global(bytes(data), path)
    if unsafe is not None:
        raise CheckpointError(f"{path} was refused: its pickle refers to {unsafe}, which a checkpoint never needs")


def _unsafe_global(data: bytes, path: Path) -> str | None:
    """The first object the pickle would import that a checkpoint never needs, or None.

    torch.save writes protocol 2, which names every object with GLOBAL; the opcodes that name
    one another way (STACK_GLOBAL, INST, EXT*) are refused outright, so nothing escapes."""
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in _REFUSED_OPCODES:
                return f"a {opcode.name} opcode"
            if opcode.name in _NAMING_OPCODES:
                module, _, attr = str(arg).partition(" ") if opcode.name == "GLOBAL" else (opcode.name, "", "")
                if not _is_allowed(module, attr):
                    return f"{module}.{attr}" if attr else f"an object named by {module}"
    except Exception as error:  # genops meets a damaged pickle with ValueError and others
        raise CheckpointError(f"{path} is truncated or corrupt ({type(error).__name__}); it cannot be loaded") from None
    return None


def _is_allowed(module: str, attr: str) -> bool:
    if (module, attr) in _ALLOWED_GLOBALS:
        return True
    return module == "torch" and (attr.endswith("Storage") or isinstance(getattr(torch, attr, None), torch.dtype))


# -- a run folder's checkpoints ---------------------------------------------------------------
def average_state_dicts(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts with the same keys and shapes, in float32 or wider,
    each result cast back to its original dtype (integer buffers are taken from the last)."""
    averaged = {}
    for key, last in states[-1].items():
        if last.is_floating_point():
            wide = torch.promote_types(last.dtype, torch.float32)
            averaged[key] = (sum(state[key].to(wide) for state in states) / len(states)).to(last.dtype)
        else:
            averaged[key] = last.clone()
    return averaged


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

"""Reading a shareable model folder (``scripts/export.py RUN --to hf DIR``) without pickle.

The folder's layout (file names, the ``format`` its ``config.json`` states) and what reads it back:
:func:`is_hf_export` tells such a folder from a checkpoint, :func:`read_hf_folder` builds its model,
tokenizer and training record from safetensors, JSON and SentencePiece files alone (no
``torch.load``), and ``Translator.from_pretrained`` makes a PyTorch translator of it. Writing the
folder is :mod:`minitrans.export.hf_export`'s; telling it apart from the other formats a path may
hold, :mod:`minitrans.export.loading`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_file

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.saved_config import model_from_dict
from minitrans.core.textio import check_regular_file, read_json
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.coverage import TrainingRecord
from minitrans.models.build import build_model_for_weights
from minitrans.models.interface import Seq2SeqModel

HF_FORMAT = "minitrans-hf"  # config.json's "format": marks a folder this module wrote
HF_VERSION = 1
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
RECORD = "training_data.json"
CARD = "README.md"
SUMMARY = "summary.json"  # the run's record (scores, data report), as the run folder has it


def hf_folder(path: str | Path) -> Path:
    """The folder itself for FOLDER or FOLDER/model.safetensors."""
    path = Path(path)
    return path.parent if path.name == WEIGHTS else path


def is_hf_export(path: str | Path) -> bool:
    """True for a folder ``export_hf`` wrote, or its model.safetensors (config.json says so)."""
    try:
        config = read_json(hf_folder(path) / CONFIG)  # a FIFO or /dev/zero: refused, not waited on
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("format") == HF_FORMAT


@dataclass
class HfFolder:
    """What a shareable folder holds, read back: the model (on CPU), its tokenizer and limits."""

    model: Seq2SeqModel
    tokenizer: Tokenizer
    max_len: int
    run_config: dict  # the run's configuration: model, data, trainer
    record: TrainingRecord | None
    weights: Path  # FOLDER/model.safetensors


def _object(values: object, key: str, where: str) -> dict:
    """``values[key]``, which must be a JSON object (ValueError naming ``where`` otherwise)."""
    if not isinstance(values, dict) or not isinstance(values.get(key), dict):
        found = type(values.get(key)).__name__ if isinstance(values, dict) else type(values).__name__
        raise ValueError(f"{where}: {key!r} must be an object, not {found}")
    return values[key]


def read_hf_folder(path: str | Path) -> HfFolder:
    """The model of a folder ``export_hf`` wrote: weights through safetensors, the rest from JSON
    and SentencePiece files (no pickle is read). Raises CheckpointError."""
    path = hf_folder(path)
    if not is_hf_export(path):
        raise CheckpointError(f"{path} is not a folder written by export.py --to hf (no {CONFIG} of {HF_FORMAT})")
    try:  # every file regular and bounded (core.textio), every JSON value of the kind expected
        run_config = _object(read_json(path / CONFIG), "config", CONFIG)
        model_cfg = model_from_dict(_object(run_config, "model", f"{CONFIG}'s config"))
        tokenizer = Tokenizer.load(path)
        check_regular_file(path / WEIGHTS)  # load_file maps it: a FIFO or /dev/zero must not get there
        weights = load_file(str(path / WEIGHTS))  # tensors only: nothing in the file is executed
        model = build_model_for_weights(model_cfg, tokenizer, weights)
        model.load_state_dict(weights)
        record_file = path / RECORD
        state = read_json(record_file) if record_file.exists() else None
        if state is not None and not isinstance(state, dict):
            raise ValueError(f"{RECORD} holds a {type(state).__name__}, not an object")
        record = TrainingRecord.from_state(state) if state else None
    except (OSError, KeyError, TypeError, ValueError, AttributeError, RuntimeError, SafetensorError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise CheckpointError(f"{path} does not hold a usable model ({type(error).__name__}: {reason})") from None
    return HfFolder(model, tokenizer, model_cfg.max_len, run_config, record, path / WEIGHTS)


__all__ = [
    "CARD",
    "CONFIG",
    "HF_FORMAT",
    "HF_VERSION",
    "RECORD",
    "SUMMARY",
    "WEIGHTS",
    "HfFolder",
    "hf_folder",
    "is_hf_export",
    "read_hf_folder",
]

"""A model folder to share, in the Hugging Face Hub's layout, loaded without pickle.

    python scripts/export.py RUN --to hf OUT_DIR [--license mit] [--push-to-hub OWNER/NAME]

The folder holds:

    model.safetensors    the weights (safetensors: tensors only, nothing to execute on load)
    config.json          what builds the model: the run's configuration, max_len, the format
    src.model, tgt.model the SentencePiece model(s) (tgt.model only for separate vocabularies)
    training_data.json   the record of the training data (coverage warnings, translate.py --info)
    README.md            the model card in the Hub's format (:mod:`minitrans.inference.hub_card`)
    summary.json         the run's scores and data report (when the run has one)

:func:`load_pretrained` (``Translator.from_pretrained``, and every script given such a folder)
reads it back with ``safetensors`` and JSON only: no ``torch.load``. ``--push-to-hub`` hands the
folder to ``huggingface_hub.upload_folder``. The safe-replacement rules of the CTranslate2
export hold here too (:func:`minitrans.inference.export.check_replaceable`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from minitrans.core.textio import check_regular_file, read_json
from minitrans.inference.export import (
    ExportError,
    check_replaceable,
    shareable_config,
    shareable_source,
    staged_export,
)

if TYPE_CHECKING:
    from minitrans.inference.translator import Translator

HF_FORMAT = "minitrans-hf"  # config.json's "format": marks a folder this module wrote
HF_VERSION = 1
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
RECORD = "training_data.json"
CARD = "README.md"
SUMMARY = "summary.json"  # the run's record (scores, data report), as the run folder has it


def _folder(path: str | Path) -> Path:
    path = Path(path)
    return path.parent if path.name == WEIGHTS else path  # FOLDER/model.safetensors names the folder too


def is_hf_export(path: str | Path) -> bool:
    """True for a folder :func:`export_hf` wrote, or its model.safetensors (config.json says so)."""
    try:
        config = read_json(_folder(path) / CONFIG)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("format") == HF_FORMAT


def export_hf(
    checkpoint: str | Path, out_dir: str | Path, force: bool = False, license: str = "mit"
) -> tuple[Path, Translator]:
    """Write a run folder's (or ``.pt`` checkpoint's) model as a shareable folder; returns the
    folder and the loaded translator. An existing ``out_dir`` is replaced only with ``force``,
    and only when it is empty or an earlier export."""
    from safetensors.torch import save_file

    from minitrans.core.checkpoint import resolve_checkpoint
    from minitrans.inference.hub_card import hub_card
    from minitrans.inference.model_card import find_summary
    from minitrans.inference.translator import Translator

    checkpoint = resolve_checkpoint(checkpoint)
    out_dir = check_replaceable(out_dir, force, keep=checkpoint)
    translator = Translator.from_checkpoint(checkpoint, "cpu")
    config = {
        "format": HF_FORMAT,
        "version": HF_VERSION,
        "model_type": "minitrans",
        "architectures": [type(translator.model).__name__],
        "max_len": translator.max_len,
        "joint_vocab": translator.tokenizer.is_joint,
        "source": shareable_source(checkpoint),
        "config": shareable_config(translator.config),  # the run's configuration, without our paths
    }
    with staged_export(out_dir, force, keep=checkpoint) as folder:
        folder.mkdir()
        # every entry of the state dict, a tied matrix under each of its names: loading checks the
        # shapes of all of them against the config before it builds anything (as for a checkpoint)
        weights = {
            key: value.detach().cpu().clone().contiguous() for key, value in translator.model.state_dict().items()
        }
        save_file(weights, str(folder / WEIGHTS), metadata={"format": "pt"})
        (folder / CONFIG).write_text(json.dumps(config, indent=2, default=str) + "\n", encoding="utf-8")
        translator.tokenizer.save(folder)
        if translator.record is not None:
            (folder / RECORD).write_text(json.dumps(translator.record.to_state()) + "\n", encoding="utf-8")
        (folder / CARD).write_text(hub_card(translator, checkpoint, license), encoding="utf-8")
        summary = find_summary(checkpoint)
        if summary is not None:  # the run's scores and data report: translate.py --info shows them
            (folder / SUMMARY).write_text(json.dumps(summary[0], indent=2) + "\n", encoding="utf-8")
        for file in folder.iterdir():
            file.chmod(0o644)  # a folder to share: readable by others (safetensors writes 0600)
    return out_dir, translator


def _object(values: object, key: str, where: str) -> dict:
    """``values[key]``, which must be a JSON object (ValueError naming ``where`` otherwise)."""
    if not isinstance(values, dict) or not isinstance(values.get(key), dict):
        found = type(values.get(key)).__name__ if isinstance(values, dict) else type(values).__name__
        raise ValueError(f"{where}: {key!r} must be an object, not {found}")
    return values[key]


def load_pretrained(path: str | Path, device: str | torch.device = "auto") -> Translator:
    """The translator of a folder :func:`export_hf` wrote: weights through safetensors, the
    rest from JSON and SentencePiece files (no pickle is read). Raises CheckpointError."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.config import model_from_dict
    from minitrans.core.utils import pick_device
    from minitrans.data.tokenizer import Tokenizer
    from minitrans.inference.coverage import TrainingRecord
    from minitrans.inference.translator import Translator
    from minitrans.models.build import build_model_for_weights

    path = _folder(path)
    device = pick_device(device) if isinstance(device, str) else device
    if not is_hf_export(path):
        raise CheckpointError(f"{path} is not a folder written by export.py --to hf (no {CONFIG} of {HF_FORMAT})")
    try:
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
    return Translator(model.to(device).eval(), tokenizer, model_cfg.max_len, device, run_config, record, path / WEIGHTS)


def push_to_hub(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Create (if needed) the model repository ``repo_id`` on the Hub and upload ``folder`` to
    it with ``huggingface_hub.upload_folder``; returns the commit's URL."""
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise ExportError("--push-to-hub needs huggingface_hub: pip install huggingface_hub") from None
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder), repo_id=repo_id, repo_type="model", commit_message="Upload minitrans model"
    )
    return str(getattr(commit, "commit_url", commit))


__all__ = [
    "CARD",
    "CONFIG",
    "HF_FORMAT",
    "RECORD",
    "WEIGHTS",
    "export_hf",
    "is_hf_export",
    "load_pretrained",
    "push_to_hub",
]

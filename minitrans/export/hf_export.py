"""A model folder to share, in the Hugging Face Hub's layout, loaded without pickle.

    python scripts/export.py RUN --to hf OUT_DIR [--license mit] [--push-to-hub OWNER/NAME]

The folder holds:

    model.safetensors    the weights (safetensors: tensors only, nothing to execute on load)
    config.json          what builds the model: the run's configuration, max_len, the format
    src.model, tgt.model the SentencePiece model(s) (tgt.model only for separate vocabularies)
    training_data.json   the record of the training data (coverage warnings, translate.py --info)
    README.md            the model card in the Hub's format (:mod:`minitrans.export.hub_card`)
    summary.json         the run's scores and data report (when the run has one)

``Translator.from_pretrained`` (and every script given such a folder) reads it back with
``safetensors`` and JSON only, no ``torch.load`` (:mod:`minitrans.inference.hf_folder`).
``--push-to-hub`` hands the folder to ``huggingface_hub.upload_folder``. The safe-replacement rules of the CTranslate2
export hold here too (:func:`minitrans.export.ct2_export.check_replaceable`).
"""

from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import save_file

from minitrans.core.checkpoint import resolve_checkpoint
from minitrans.export.ct2_export import (
    ExportError,
    check_replaceable,
    shareable_config,
    shareable_source,
    staged_export,
)
from minitrans.export.hub_card import hub_card
from minitrans.export.loading import load_torch_translator
from minitrans.inference.hf_folder import CARD, CONFIG, HF_FORMAT, HF_VERSION, RECORD, SUMMARY, WEIGHTS
from minitrans.inference.model_card import find_summary
from minitrans.inference.translator import Translator


def export_hf(
    checkpoint: str | Path, out_dir: str | Path, force: bool = False, license: str = "mit"
) -> tuple[Path, Translator]:
    """Write a run folder's (or ``.pt`` checkpoint's) model as a shareable folder; returns the
    folder and the loaded translator. An existing ``out_dir`` is replaced only with ``force``,
    and only when it is empty or an earlier export."""
    checkpoint = resolve_checkpoint(checkpoint)
    out_dir = check_replaceable(out_dir, force, keep=checkpoint)
    translator = load_torch_translator(checkpoint, "cpu")
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


__all__ = ["export_hf", "push_to_hub"]

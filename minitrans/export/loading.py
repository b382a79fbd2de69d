"""One loader for every path a script is given: it decides which engine and format the path needs.

- a CTranslate2 export (a folder with ``minitrans.json``): :class:`~minitrans.export.ct2_translator.Ct2Translator`;
- a shareable folder of ``export.py --to hf`` (read without pickle): the PyTorch engine,
  :meth:`~minitrans.inference.translator.Translator.from_pretrained`;
- anything else, a ``.pt`` checkpoint or a run folder: the PyTorch engine,
  :meth:`~minitrans.inference.translator.Translator.from_checkpoint`.

Tools that need what only the PyTorch engine gives (attention maps, forced scores, head
ablation) call :func:`load_torch_translator`, which refuses a CTranslate2 export in one line.
"""

from __future__ import annotations

from pathlib import Path

import torch

from minitrans.core.checkpoint import CheckpointError
from minitrans.export.ct2_translator import Ct2Translator, is_exported
from minitrans.inference.base import BaseTranslator
from minitrans.inference.hf_folder import is_hf_export
from minitrans.inference.translator import Translator


def load_torch_translator(path: str | Path, device: str | torch.device = "auto") -> Translator:
    """The PyTorch translator of a shareable folder, a ``.pt`` checkpoint or a run folder; a
    CTranslate2 export, which has no PyTorch model, raises CheckpointError (as does any unusable
    checkpoint)."""
    if is_exported(path):
        raise CheckpointError(
            f"{path} is a CTranslate2 export, which has no PyTorch model: give the run folder, "
            "its checkpoint or a shareable folder (export.py --to hf)"
        )
    if is_hf_export(path):
        return Translator.from_pretrained(path, device)
    return Translator.from_checkpoint(path, device)


def load_translator(path: str | Path, device: str | torch.device = "auto", **engine_options) -> BaseTranslator:
    """The translator of what ``path`` holds (see the module's docstring); ``engine_options``
    (``compute_type``, ``threads``) go to CTranslate2. Raises CheckpointError."""
    if is_exported(path):
        return Ct2Translator.from_folder(path, device, **engine_options)
    return load_torch_translator(path, device)


__all__ = ["load_torch_translator", "load_translator"]

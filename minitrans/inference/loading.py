"""One loader for every path a script is given: it decides which engine the path needs.

- a CTranslate2 export (a folder with ``minitrans.json``): :class:`~minitrans.inference.ct2.Ct2Translator`;
- anything else, for the PyTorch engine (``Translator.from_checkpoint``, which tells its two formats
  apart): a shareable folder of ``export.py --to hf`` (read without pickle), a ``.pt`` checkpoint
  or a run folder.

It sits above both engines, so neither imports the other.
"""

from __future__ import annotations

from pathlib import Path

import torch

from minitrans.inference.base import BaseTranslator
from minitrans.inference.ct2 import Ct2Translator, is_exported
from minitrans.inference.translator import Translator


def load_translator(path: str | Path, device: str | torch.device = "auto", **engine_options) -> BaseTranslator:
    """The translator of what ``path`` holds (see the module's docstring); ``engine_options``
    (``compute_type``, ``threads``) go to CTranslate2. Raises CheckpointError."""
    if is_exported(path):
        return Ct2Translator.from_folder(path, device, **engine_options)
    return Translator.from_checkpoint(path, device)


__all__ = ["load_translator"]

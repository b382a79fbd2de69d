"""Multi30k (task 1): a preset of the parallel-files loader, with its default folder
(data/multi30k, filled by ``data/multi30k/prepare.py``) and a hint that says how to fill it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import datasets

from minitrans.data.parallel import available_splits, load_parallel, read_lines

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "data" / "multi30k"


def prepare_hint(root: str | Path) -> str:
    command = "python data/multi30k/prepare.py"
    if Path(root).resolve() != DEFAULT_ROOT:
        command += f" --out {root}"
    return f"Prepare it with `{command}` (downloads it) or `{command} --source DIR` (copies it)"


def load_multi30k(
    root: str | Path = DEFAULT_ROOT,
    src_lang: str = "de",
    tgt_lang: str = "en",
    splits: Iterable[str] | str | None = None,
) -> datasets.DatasetDict:
    """:func:`~minitrans.data.parallel.load_parallel` on a Multi30k folder."""
    return load_parallel(root, src_lang, tgt_lang, splits, hint=prepare_hint(root))


__all__ = ["DEFAULT_ROOT", "available_splits", "load_multi30k", "prepare_hint", "read_lines"]

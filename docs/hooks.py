"""MkDocs hook: fill the generated parts of the pages (see gen_reference.py) at build time."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS), str(DOCS.parent)]  # gen_reference, and minitrans from this checkout

import gen_reference  # noqa: E402


def on_page_markdown(markdown: str, **kwargs) -> str:
    return gen_reference.expand(markdown)

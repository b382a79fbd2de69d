"""Text in and out for the command-line tools: sentences from bytes, one output line per input
line, numbered output files, and warnings as plain ``warning: ...`` lines.

Input policies (the README repeats them):
- Text read from bytes (files, stdin) is split on "\\n" only, a trailing "\\r" (CRLF) is dropped,
  a leading byte-order mark is ignored, and invalid UTF-8 raises :class:`InputError` naming
  the line.
- A translation never contains a line break: any the model spells out becomes a space
  (:func:`one_line`).
"""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from pathlib import Path


class InputError(ValueError):
    """Input text that cannot be read (e.g. invalid UTF-8); the message names the line."""


def read_sentences(data: bytes, source: str = "input") -> list[str]:
    """Bytes of UTF-8 text -> one sentence per line (see the module's input policies)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    sentences = []
    for number, line in enumerate(lines, 1):
        try:
            text = line.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"{source}, line {number}: not valid UTF-8 (byte 0x{line[error.start]:02x} at column {error.start + 1})"
            ) from None
        sentences.append(text.removeprefix("\ufeff") if number == 1 else text)
    return sentences


LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")  # what str.splitlines splits at


def one_line(text: str) -> str:
    """A translation as one line: each line break (and the spaces around it) becomes a space."""
    return LINE_BREAK.sub(" ", text).strip()


def numbered_path(path: str | Path, number: int, count: int) -> Path:
    """``attn.png`` for a single sentence; ``attn.1.png``, ``attn.2.png``, ... for several."""
    path = Path(path)
    return path if count == 1 else path.with_name(f"{path.stem}.{number}{path.suffix or '.png'}")


@contextlib.contextmanager
def plain_truncation_warnings():
    """For command-line tools: every cut sentence is reported, each as one ``warning: ...``
    line on stderr rather than Python's file-and-line format."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=r"sentence \d+ has")
        warnings.showwarning = show
        yield


__all__ = ["InputError", "numbered_path", "one_line", "plain_truncation_warnings", "read_sentences"]

"""Text in and out for the command-line tools: sentences from bytes, one output line per input
line, numbered output files, and warnings as plain ``warning: ...`` lines.

Input policies (the README repeats them):
- Text read from bytes (files, stdin) is split on "\\n" only, a trailing "\\r" (CRLF) is dropped,
  a leading byte-order mark is ignored, and invalid UTF-8 raises :class:`InputError` naming
  the line.
- A translation never contains a line break: any the model spells out becomes a space
  (:func:`one_line`).
- A file of a folder someone else made (a shared model) is read only when it is a regular
  file of bounded size (:func:`read_bounded`, :func:`read_json`): a FIFO, a device such as
  ``/dev/zero``, or a file over its limit is refused, never waited on or read whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import warnings
from pathlib import Path
from typing import Any

MB = 1 << 20
JSON_LIMIT = 16 * MB  # a config.json, training_data.json or summary.json of a shared folder


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


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file (a symlink to one included) of at most
    ``limit`` bytes; else ValueError saying what it is. Opened without blocking, so a FIFO
    neither hangs the read nor is read at all."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a missing file: OSError
    try:
        info = os.fstat(fd)  # of what was opened, not of a name that may have changed since
        _check_regular(path, info.st_mode)
        if info.st_size > limit:
            raise ValueError(f"{path.name} has {info.st_size:,} bytes; at most {limit:,} are read")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew after fstat
        raise ValueError(f"{path.name} has over {limit:,} bytes; at most {limit:,} are read")
    return data


def check_regular_file(path: str | Path) -> None:
    """ValueError unless ``path`` is a regular file (a symlink to one included); OSError if missing."""
    _check_regular(Path(path), os.stat(path).st_mode)


def _check_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) else "not a file"
        raise ValueError(f"{path.name} is {kind}, not a regular file")


def read_json(path: str | Path, limit: int = JSON_LIMIT) -> Any:
    """JSON of a bounded regular file (:func:`read_bounded`); ValueError for anything else,
    nesting too deep to parse included (Python's parser would raise RecursionError)."""
    data = read_bounded(path, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{Path(path).name} nests its JSON too deeply to read") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{Path(path).name} is not UTF-8 (byte {error.start})") from None


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

"""Content digests of sentence pairs, in an unambiguous encoding: the number of pairs, then
each column's string lengths (8 bytes each) and its UTF-8 bytes. No separator a sentence could
contain, so ("a\\tb", "c") and ("a", "b\\tc"), or one row holding a newline and two rows, never
collide. Vectorised over Arrow buffers: a million pairs take well under a second."""

from __future__ import annotations

import hashlib
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa


def _update(digest, column: pa.ChunkedArray | pa.Array) -> None:
    column = column.cast(pa.large_string()).fill_null("")
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    lengths, data = [], []
    for chunk in chunks:
        offsets_buffer, data_buffer = chunk.buffers()[1:3]
        offsets = np.frombuffer(offsets_buffer, np.int64)[chunk.offset : chunk.offset + len(chunk) + 1]
        if len(offsets):
            lengths.append(np.diff(offsets))
            if data_buffer is not None:
                data.append(memoryview(data_buffer)[offsets[0] : offsets[-1]])
    digest.update(np.concatenate(lengths or [np.zeros(0, np.int64)]).astype("<i8").tobytes())
    for part in data:
        digest.update(part)


def pairs_digest(pairs: pa.Table | datasets.Dataset, prefix: bytes = b"") -> str:
    """The hex SHA-256 of a table (or ``datasets.Dataset``) of ``src``/``tgt`` string columns,
    after ``prefix`` (e.g. the tokenizer's models, for a cache key)."""
    if isinstance(pairs, datasets.Dataset):
        pairs = (pairs.flatten_indices() if pairs._indices is not None else pairs).data.table
    digest = hashlib.sha256(prefix)
    digest.update(len(pairs).to_bytes(8, "little"))
    for name in ("src", "tgt"):
        _update(digest, pairs.column(name))
    return digest.hexdigest()


def files_digest(paths: list[Path], root: Path | None = None) -> str:
    """The hex SHA-256 of files' names (relative to ``root``), sizes and every byte: what a cache
    of something read from them is keyed by. Reading is cheap next to what is derived (a GB
    in a second or two); sizes and times alone miss an edit that keeps them."""
    digest = hashlib.sha256()
    for path in paths:
        name = str(path.relative_to(root) if root is not None else path.name)
        digest.update(f"{len(name)}:{name}:{path.stat().st_size}:".encode())
        with open(path, "rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()

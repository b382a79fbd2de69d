"""Token ids of many sentences held compactly: one flat integer array and the offsets where
each sentence starts, instead of a Python list per sentence (a million pairs of ~30 subwords
take ~0.25 GB instead of ~2.4 GB). Saved as ``.npy`` files and memory-mapped back, so a second start reads
nothing it does not use."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np


class TokenIds(Sequence):
    """``ids[i]`` is sentence i's ids (an int32 array view); ``ids.lengths`` are all lengths."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        self.flat, self.offsets = flat, offsets  # offsets: (N + 1,), sentence i is flat[o[i]:o[i+1]]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.flat[self.offsets[index] : self.offsets[index + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @classmethod
    def from_lists(cls, lists: Iterable[Sequence[int]]) -> TokenIds:
        return cls.concatenate([_chunk(list(lists))])

    @classmethod
    def concatenate(cls, parts: Sequence[TokenIds]) -> TokenIds:
        flat = np.concatenate([p.flat for p in parts]) if parts else np.zeros(0, np.int32)
        lengths = np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, np.int64)
        return cls(flat, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))

    @classmethod
    def encode(cls, texts: Iterable[list[str]], encode: Callable[[list[str]], list[list[int]]]) -> TokenIds:
        """Encode chunks of sentences (each chunk a list) with ``encode``, keeping only arrays."""
        return cls.concatenate([_chunk(encode(chunk)) for chunk in texts])

    def select(self, indices: np.ndarray) -> TokenIds:
        """The sentences at ``indices`` (an index array or a boolean mask), as a new compact copy."""
        indices = np.flatnonzero(indices) if np.asarray(indices).dtype == bool else np.asarray(indices, np.int64)
        lengths = self.lengths[indices]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        # every kept position: its sentence's start in ``flat`` plus its place within the sentence
        starts = np.repeat(self.offsets[indices] - offsets[:-1], lengths)
        flat = self.flat[starts + np.arange(offsets[-1], dtype=np.int64)]
        return TokenIds(flat, offsets)

    # -- on disk -----------------------------------------------------------------------
    def save(self, folder: Path, name: str) -> None:
        np.save(folder / f"{name}.flat.npy", self.flat)
        np.save(folder / f"{name}.offsets.npy", self.offsets)

    @classmethod
    def load(cls, folder: Path, name: str) -> TokenIds:
        return cls(
            np.load(folder / f"{name}.flat.npy", mmap_mode="r"), np.load(folder / f"{name}.offsets.npy", mmap_mode="r")
        )


def _chunk(lists: list[Sequence[int]]) -> TokenIds:
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int32, count=int(lengths.sum()))
    return TokenIds(flat, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def save_atomically(folder: Path, write: Callable[[Path], None]) -> None:
    """Let ``write`` fill a temporary folder beside ``folder``, then rename it into place: an
    interrupted run never leaves a half-written cache entry (a finished one by another process wins)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        write(tmp)
        os.replace(tmp, folder)
    except OSError:
        if not folder.exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

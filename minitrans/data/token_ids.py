"""Token ids of many sentences held compactly: one flat integer array and the offsets where
each sentence starts, instead of a Python list per sentence (a million pairs of ~30 subwords
take ~0.25 GB instead of ~2.4 GB). Saved as ``.npy`` files and memory-mapped back, so a second start reads
nothing it does not use."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
import time
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

    def check(self, count: int, vocab_size: int) -> None:
        """Raise ValueError unless these are ``count`` sentences of ids below ``vocab_size`` with
        ordered offsets: a damaged file of the right size loads, as garbage."""
        offsets, flat = np.asarray(self.offsets), np.asarray(self.flat)
        if len(offsets) != count + 1 or offsets[0] != 0 or offsets[-1] != len(flat) or (np.diff(offsets) < 0).any():
            raise ValueError("offsets do not describe the corpus")
        if len(flat) and not (0 <= int(flat.min()) and int(flat.max()) < vocab_size):
            raise ValueError("ids outside the vocabulary")

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


PARTIAL_MARK = ".minitrans-partial"  # in a folder being written: "host pid"; only such folders are ever removed
STALE_SECONDS = 24 * 3600  # a partial folder of another machine (a shared cache) is removed only this late


def save_atomically(folder: Path, write: Callable[[Path], None]) -> None:
    """Let ``write`` fill a temporary folder beside ``folder``, then rename it into place: an
    interrupted run never leaves a half-written cache entry (a finished one by another process
    wins). A killed run's temporary folder is removed by :func:`remove_partial_folders`."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        (tmp / PARTIAL_MARK).write_text(f"{socket.gethostname()} {os.getpid()}", encoding="utf-8")
        write(tmp)
        (tmp / PARTIAL_MARK).unlink()
        os.replace(tmp, folder)
    except OSError:
        if not folder.exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_partial_folders(parent: Path) -> list[Path]:
    """Remove the temporary folders that killed runs left in ``parent`` (a cache folder); returns
    them. Only a folder holding our mark is removed, and only once the process that wrote it is
    gone (same machine), or a day after it was written (another machine sharing the cache)."""
    removed = []
    for path in parent.glob(".*.*") if parent.is_dir() else []:
        mark = path / PARTIAL_MARK
        try:
            host, pid = mark.read_text(encoding="utf-8").split()
            age = time.time() - mark.stat().st_mtime
        except (OSError, ValueError):
            continue  # not ours, or already gone
        if path.is_symlink() or not (age > STALE_SECONDS or (host == socket.gethostname() and _is_gone(int(pid)))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _is_gone(pid: int) -> bool:
    if os.name != "posix" or pid == os.getpid():
        return False  # no safe way to ask here (on Windows os.kill ends the process): wait for STALE_SECONDS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # e.g. another user's process: alive
        return False
    return False

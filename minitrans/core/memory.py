"""The process's memory: how much is resident now, and giving the C heap's free pages back.

A CPU training run allocates tensors of a new shape at almost every step (token-count batches
each have their own (B, S) and (B, T)), and validation decodes with beams of other shapes
again. glibc's malloc keeps what is freed in its arenas for reuse; with so many sizes the free
pieces do not fit the next requests, the heap grows, and the resident set with it.
:func:`release_free_memory` (``malloc_trim(0)``) hands every free page of every arena back to
the system; the trainer calls it after each validation and checkpoint.

Another C allocator can serve the training processes instead (``trainer.allocator``): a run
with several processes starts them with the library in ``LD_PRELOAD``. On the Multi30k recipe,
glibc's ``malloc`` took a fifth of a training process's time, and tcmalloc trained the same
steps faster with the same weights bit for bit (docs/performance.md, the allocator). :func:`allocator_library` finds one on this system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

# trainer.allocator's choices: the library names ctypes.util.find_library looks up, best first
ALLOCATOR_LIBRARIES = {"tcmalloc": ("tcmalloc_minimal", "tcmalloc"), "jemalloc": ("jemalloc",)}
ALLOCATORS = ("system", "auto", *ALLOCATOR_LIBRARIES)  # auto: tcmalloc, else jemalloc, else the system's
INSTALL_HINT = {
    "tcmalloc": "apt install libtcmalloc-minimal4 (Debian, Ubuntu) or brew install gperftools",
    "jemalloc": "apt install libjemalloc2 (Debian, Ubuntu) or brew install jemalloc",
}


def resident_mib() -> float | None:
    """This process's resident set now, in MiB (Linux ``/proc/self/statm``); None elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library: macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter already runs on
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim(0)``). Returns
    whether this platform has the call (False: nothing was done)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def allocator_library(choice: str, find=None) -> str | None:
    """The shared library ``LD_PRELOAD`` takes for ``trainer.allocator=choice``: None for
    ``system``, and for ``auto`` where neither tcmalloc nor jemalloc is installed (or off Linux,
    where ``LD_PRELOAD`` means nothing). An allocator asked for by name and missing is an error
    that says how to install it."""
    if choice not in ALLOCATORS:
        raise ValueError(f"trainer.allocator: must be one of {', '.join(ALLOCATORS)}, got {choice!r}")
    if choice == "system" or not sys.platform.startswith("linux"):
        return None
    find = find or ctypes.util.find_library  # looked up at the call, so a test can stand in for it
    for name in ALLOCATOR_LIBRARIES if choice == "auto" else (choice,):
        for library in ALLOCATOR_LIBRARIES[name]:
            found = find(library)
            if found:
                return found
    if choice == "auto":
        return None
    raise ValueError(f"trainer.allocator={choice}: the library is not installed here ({INSTALL_HINT[choice]})")


def preloaded(current: str | None, library: str | None) -> str | None:
    """An ``LD_PRELOAD`` value: ``current`` with ``library`` first, and only once (unchanged when None)."""
    if library is None:
        return current
    others = [entry for entry in (current or "").split(":") if entry and entry != library]
    return ":".join([library, *others])


__all__ = ["ALLOCATORS", "allocator_library", "preloaded", "release_free_memory", "resident_mib"]

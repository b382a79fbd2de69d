"""The process's memory: how much is resident now, and giving the C heap's free pages back.

A CPU training run allocates tensors of a new shape at almost every step (token-count batches
each have their own (B, S) and (B, T)), and validation decodes with beams of other shapes
again. glibc's malloc keeps what is freed in its arenas for reuse; with so many sizes the free
pieces do not fit the next requests, the heap grows, and the resident set with it.
:func:`release_free_memory` (``malloc_trim(0)``) hands every free page of every arena back to
the system; the trainer calls it after each validation and checkpoint.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys


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


__all__ = ["release_free_memory", "resident_mib"]

"""The process's memory: how much of it is resident now."""

from __future__ import annotations

import os


def resident_mib() -> float | None:
    """This process's resident set now, in MiB (Linux ``/proc/self/statm``); None elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


__all__ = ["resident_mib"]

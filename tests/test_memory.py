"""The memory helpers: the resident set is read where the system tells it."""

from __future__ import annotations

import sys

import pytest

from minitrans.core import memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_resident_set_grows_with_memory_that_is_touched():
    before = memory.resident_mib()
    block = bytearray(64 * 2**20)  # zero-filled: every page written
    after = memory.resident_mib()
    assert before is not None and after - before > 32
    del block


def test_no_proc_means_no_figure(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("/proc/self/statm")

    monkeypatch.setattr("builtins.open", missing)
    assert memory.resident_mib() is None

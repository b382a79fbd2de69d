"""The memory helpers: the resident set is read where the system tells it, and giving free heap
pages back is glibc's malloc_trim where there is one and a no-op elsewhere."""

from __future__ import annotations

import sys

import pytest

from minitrans.core import memory


@pytest.fixture
def fresh_lookup():
    memory._malloc_trim.cache_clear()
    yield
    memory._malloc_trim.cache_clear()


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


def test_release_is_a_no_op_without_glibc(monkeypatch, fresh_lookup):
    monkeypatch.setattr(memory.sys, "platform", "darwin")
    assert memory.release_free_memory() is False


@pytest.mark.skipif(memory._malloc_trim() is None, reason="not glibc")
def test_release_gives_freed_heap_pages_back(fresh_lookup):
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    # many blocks under the mmap threshold, written, then freed: they stay in malloc's heap
    blocks = [libc.malloc(64 * 1024) for _ in range(2000)]
    for block in blocks:
        ctypes.memset(block, 1, 64 * 1024)
    kept = blocks[-1]  # keeps the heap's top in use, so free() alone cannot shrink it
    for block in blocks[:-1]:
        libc.free(block)
    held = memory.resident_mib()
    assert memory.release_free_memory() is True
    assert held - memory.resident_mib() > 64
    libc.free(kept)


def finder(*installed: str):
    """ctypes.util.find_library as a system with ``installed`` libraries would answer."""
    return lambda name: f"lib{name}.so.4" if name in installed else None


def test_the_allocator_is_found_by_name_or_chosen_by_auto(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    assert memory.allocator_library("system", finder("tcmalloc_minimal")) is None
    assert memory.allocator_library("auto", finder("tcmalloc_minimal", "jemalloc")) == "libtcmalloc_minimal.so.4"
    assert memory.allocator_library("auto", finder("tcmalloc")) == "libtcmalloc.so.4"
    assert memory.allocator_library("auto", finder("jemalloc")) == "libjemalloc.so.4"
    assert memory.allocator_library("auto", finder()) is None  # nothing installed: the system's, quietly
    assert memory.allocator_library("jemalloc", finder("jemalloc", "tcmalloc")) == "libjemalloc.so.4"
    with pytest.raises(
        ValueError, match=r"trainer.allocator=tcmalloc: the library is not installed here \(apt install"
    ):
        memory.allocator_library("tcmalloc", finder("jemalloc"))
    with pytest.raises(ValueError, match="must be one of system, auto, tcmalloc, jemalloc, got 'mimalloc'"):
        memory.allocator_library("mimalloc", finder())
    monkeypatch.setattr(sys, "platform", "darwin")  # LD_PRELOAD means nothing there
    assert memory.allocator_library("tcmalloc", finder("tcmalloc_minimal")) is None


def test_the_allocator_goes_first_in_ld_preload_and_only_once():
    assert memory.preloaded("libx.so", None) == "libx.so"
    assert memory.preloaded(None, "libtcmalloc.so.4") == "libtcmalloc.so.4"
    assert memory.preloaded("libx.so:libtcmalloc.so.4", "libtcmalloc.so.4") == "libtcmalloc.so.4:libx.so"

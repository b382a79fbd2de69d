"""One training job's error lines (:mod:`minitrans.training.job`): a write that fails for want
of room says where, and how much room each place has left."""

from __future__ import annotations

import errno
import shutil

import pytest

import minitrans.training.trainer as trainer
from minitrans.core.utils import atomic_file
from minitrans.training.job import Job, os_error_line, run_job


def little_room(monkeypatch, free: int = 4096) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(10**9, 10**9 - free, free))


def test_a_failed_atomic_write_names_its_file(tmp_path):
    """A write's ENOSPC names no file; the line built from it said "writing the run"."""
    target = tmp_path / "cache" / "corpus.pt"
    target.parent.mkdir()
    with pytest.raises(OSError) as error, atomic_file(target):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert error.value.filename == str(target) and error.value.errno == errno.ENOSPC
    assert list(target.parent.iterdir()) == []


def test_a_full_cache_disk_is_not_blamed_on_writing_the_run(tmp_path, monkeypatch, capsys, tiny_config):
    cache, run = tmp_path / "cache", tmp_path / "run"
    cache.mkdir()
    cfg = tiny_config(f"data.cache_dir={cache}")

    def cache_write_fails(cfg, out_dir):
        with atomic_file(cache / "corpus.pt") as file:
            file.write(b"x")
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trainer, "train", cache_write_fails)
    little_room(monkeypatch)
    assert run_job(cfg, Job(str(run), False, [], "python train.py")) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"error: {cache / 'corpus.pt'}: No space left on device (4096 bytes free on the disk of {cache})"]


def test_a_write_that_names_no_file_names_both_places_it_may_have_been(tmp_path, monkeypatch):
    little_room(monkeypatch, 100)
    line = os_error_line(OSError(errno.ENOSPC, "No space left on device"), str(tmp_path / "run"), str(tmp_path))
    assert "writing the run" not in line
    assert line.startswith(f"a write to the run folder {tmp_path / 'run'} or the cache {tmp_path} failed: ")
    assert line.endswith(f"(100 bytes free on the disk of {tmp_path})")  # one disk, said once

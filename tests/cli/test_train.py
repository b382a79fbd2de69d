"""One training job's error lines (:mod:`minitrans.cli.train`): a write that fails for want
of room says where, and how much room each place has left."""

from __future__ import annotations

import errno
import shutil

import pytest

import minitrans.training.trainer as trainer
from minitrans.cli.train import Job, os_error_line, run_job
from minitrans.core.utils import atomic_file


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


def test_ranks_started_with_different_settings_are_named_each_with_its_values(monkeypatch, tiny_config):
    """What every rank gathers at the rendezvous, here four ranks faked: the settings that
    differ, each value with its ranks, a node's own cache folder and thread count let be."""
    from minitrans.cli.train import flat_settings, nodes_disagree
    from minitrans.training import distributed

    configs = [
        tiny_config(f"seed={seed}", f"data.cache_dir=/node{rank}", f"trainer.num_threads={rank + 1}")
        for rank, seed in enumerate([0, 0, 1, 0])
    ]
    configs[3] = tiny_config("seed=0", "model.d_ff=96", "trainer.max_steps=7", "data.cache_dir=/node3")
    monkeypatch.setattr(distributed, "init", lambda: distributed.DistInfo(rank=0, world_size=4))
    sent = []  # what each rank puts into the all-gather
    monkeypatch.setattr(distributed, "all_gather_object", lambda value, info: sent.append(value) or [value] * 4)
    assert [nodes_disagree(config) for config in configs] == [None] * 4
    monkeypatch.setattr(distributed, "all_gather_object", lambda value, info: sent)
    line = nodes_disagree(configs[0])
    assert line == (
        f"the training processes were started with different settings (model.d_ff: {configs[0].model.d_ff} on ranks "
        f"0, 1, 2, 96 on rank 3; trainer.max_steps: {configs[0].trainer.max_steps} on ranks 0, 1, 2, 7 on rank 3; "
        "seed: 0 on ranks 0, 1, 3, 1 on rank 2); start every node with the same command line"
    )
    monkeypatch.setattr(distributed, "all_gather_object", lambda value, info: [value] * 4)
    assert nodes_disagree(configs[0]) is None
    assert flat_settings(configs[0])["data.cache_dir"] == "/node0" and "model.d_ff" in flat_settings(configs[0])


def test_a_named_allocator_missing_here_is_refused_in_a_one_process_run_too(tmp_path, monkeypatch, capsys, tiny_config):
    import ctypes.util

    from minitrans.cli import train as job_module

    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)  # neither tcmalloc nor jemalloc here
    ran = []
    monkeypatch.setattr(job_module, "run_job", lambda cfg, job: ran.append(job) or 0)
    job = Job(str(tmp_path / "run"), False, [], "train.py")
    with pytest.raises(SystemExit) as stop:
        job_module.train_job(tiny_config("trainer.allocator=jemalloc", "trainer.processes=1"), job, False, False, {})
    assert stop.value.code == 2 and not ran
    assert "trainer.allocator=jemalloc: the library is not installed here" in capsys.readouterr().err

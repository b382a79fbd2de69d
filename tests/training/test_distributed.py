"""Multi-process training: shards of a global batch, and a real 2-process torchrun (gloo, CPU)
that resumes a 1-process checkpoint and ends where one process would, within rounding."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import TRAIN_SCRIPT, last_weights, script_env
from helpers.runs import scalars
from helpers.scripts import assert_one_error_line

from minitrans.core.checkpoint import load_checkpoint
from minitrans.training.distributed import DistInfo, all_reduce_max, any_rank, shard, torchrun_env_problem
from minitrans.training.trainer import train


def test_every_sentence_of_a_global_batch_goes_to_exactly_one_rank():
    batch = list(range(10, 17))
    shards = [shard(batch, DistInfo(rank=r, world_size=3)) for r in range(3)]
    assert sorted(i for mine, weight in shards for i in mine) == batch
    assert [len(mine) for mine, _ in shards] == [3, 2, 2] and all(weight == 1.0 for _, weight in shards)
    assert shard(batch, DistInfo()) == (batch, 1.0)


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({"WORLD_SIZE": "2"}, ["WORLD_SIZE=2", "RANK, MASTER_ADDR, MASTER_PORT"]),
        ({"WORLD_SIZE": "2", "RANK": "0"}, ["WORLD_SIZE=2, RANK=0", "not MASTER_ADDR, MASTER_PORT"]),
        ({"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, None),
        ({"WORLD_SIZE": "2", "RANK": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, ["RANK must be below"]),
        ({"WORLD_SIZE": "two", "RANK": "0"}, ["WORLD_SIZE='two'", "whole number"]),
        ({"WORLD_SIZE": "1"}, None),
        ({}, None),
    ],
)
def test_a_leaked_world_size_without_the_rest_of_torchruns_environment_is_named(environ, names):
    problem = torchrun_env_problem(environ)
    if names is None:
        assert problem is None
    else:
        assert problem is not None and problem.endswith("unset WORLD_SIZE or start with torchrun"), problem
        assert all(name in problem for name in names), problem


@pytest.mark.slow
def test_the_script_refuses_a_leaked_world_size_in_one_line(tmp_path, tiny_overrides):
    """It was a rendezvous traceback from init_process_group (issue 33, item 11)."""
    env = {**script_env(), "WORLD_SIZE": "2"}
    command = [sys.executable, str(TRAIN_SCRIPT), *tiny_overrides, f"hydra.run.dir={tmp_path / 'run'}"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert_one_error_line(done, "WORLD_SIZE=2", "RANK", "MASTER_ADDR", "unset WORLD_SIZE or start with torchrun")
    assert not (tmp_path / "run").exists()


def test_a_rank_without_a_sentence_still_steps_with_weight_zero():
    assert shard([7], DistInfo(rank=1, world_size=2)) == ([7], 0.0)


def _agree(rank: int, world_size: int, init_file: str, results) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        info, cpu = DistInfo(rank=rank, world_size=world_size), torch.device("cpu")
        seconds = 100.0 + 1e-9 * (rank + 1)  # clocks that differ below float32's resolution
        results.put((rank, all_reduce_max([rank == 1, seconds], info, cpu), any_rank([rank == 0, False], info, cpu)))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ranks_agree_on_the_largest_training_time_and_on_any_flag(tmp_path):
    """What a time budget's decay reads: the same seconds on every rank (else each rank would
    train at its own rate), exact in float64; in one process, the value itself."""
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_agree, args=(2, str(tmp_path / "init"), results), nprocs=2, start_method="spawn")
    answers = dict((rank, (agreed, flags)) for rank, agreed, flags in (results.get() for _ in range(2)))
    assert answers[0] == answers[1] == ([1.0, 100.0 + 2e-9], [True, False])
    assert all_reduce_max([False, 3.25], DistInfo(), torch.device("cpu")) == [0.0, 3.25]


# Same global batches in both runs; only the order of float additions differs (the all-reduce
# sums two half-batch gradients). Losses agree to 1e-4 (relative). Weights agree to 1e-3: a
# parameter whose true gradient is zero (a key bias: softmax ignores a constant shift) gets
# pure rounding noise, which Adam turns into steps of up to the learning rate (1e-3 here).
LOSS_TOLERANCE = 1e-4
WEIGHT_TOLERANCE = 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["trainer.subword_sampling=0.2"]], ids=["best-pieces", "sampled-pieces"])
def test_two_processes_resume_a_run_and_match_one_process(tmp_path, tiny_overrides, tiny_config, extra):
    # no dropout: the masks differ; subword sampling: each rank draws the same pieces as one process
    common = ["model.dropout=0", "trainer.log_every=1", "trainer.eval_every=1000", *extra]
    threads = torch.get_num_threads()
    try:
        train(tiny_config(*common, "trainer.max_steps=12"), tmp_path / "one")  # the reference
        train(tiny_config(*common, "trainer.max_steps=4"), tmp_path / "start")  # 4 steps in one process
    finally:
        torch.set_num_threads(threads)
    start = tmp_path / "start" / "checkpoints" / "last.pt"
    workdir = tmp_path / "work"
    workdir.mkdir()
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(TRAIN_SCRIPT),
        *tiny_overrides,
        *common,
        "trainer.max_steps=12",
        f"trainer.resume_from={start}",
    ]  # no hydra.run.dir: rank 0 picks one folder for both ranks
    result = subprocess.run(command, cwd=workdir, env=script_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = list((workdir / "outputs").glob("*/*"))
    assert len(runs) == 1, runs
    run = runs[0]
    assert len(list(run.glob("events.out.tfevents.*"))) == 1  # only rank 0 logs
    assert "resumed from" in (run / "train.log").read_text() and "2 process(es)" in (run / "train.log").read_text()
    assert result.stdout.count("test BLEU") == 1  # only rank 0 reports

    reference, resumed = (
        scalars(tmp_path / "one", "train/loss_label_smoothed"),
        scalars(run, "train/loss_label_smoothed"),
    )
    assert sorted(resumed) == list(range(5, 13))
    for step in resumed:
        assert resumed[step] == pytest.approx(reference[step], rel=LOSS_TOLERANCE), step
    one, two = last_weights(tmp_path / "one"), last_weights(run)
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=0, atol=WEIGHT_TOLERANCE, msg=name)
    saved = load_checkpoint(run / "checkpoints" / "last.pt")
    assert saved["world_size"] == 2 and len(saved["rng"]) == 2  # each rank's generators

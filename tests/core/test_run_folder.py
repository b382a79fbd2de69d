"""A run folder belongs to one run: names that cannot collide, a lock that a second process
meets with one line naming the holder, folders that cannot work refused before anything is
written, and stale or half-written leftovers cleaned when a run takes its folder over."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import script_env, train_command
from helpers import REPO

from minitrans.core.checkpoint import resolve_checkpoint
from minitrans.core.checks import ConfigError
from minitrans.core.run_folder import (
    HOLDER_NAME,
    LOCK_NAME,
    MAX_NAME_BYTES,
    RunLock,
    _claim,
    check_run_dir,
    job_folder_name,
    lock_holder,
)
from minitrans.training.trainer import Trainer, train


def test_a_new_folder_never_collides_with_an_existing_one(tmp_path):
    base = tmp_path / "outputs" / "2026-01-01" / "09-00-00"
    claimed = [_claim(base) for _ in range(3)]
    assert claimed == [str(base), f"{base}_1", f"{base}_2"]
    assert all(os.path.isdir(path) for path in claimed)


def test_the_default_run_folder_is_claimed_through_the_resolver(tmp_path, monkeypatch):
    from helpers.compose import compose_experiment
    from omegaconf import OmegaConf

    monkeypatch.chdir(tmp_path)
    cfg = compose_experiment(hydra=True)
    raw = OmegaConf.to_container(cfg.hydra.run, resolve=False)["dir"]
    assert raw.startswith("${new_folder:outputs/")
    stamp = time.strftime("%Y-%m-%d/%H-%M-%S")
    (tmp_path / "outputs" / stamp).mkdir(parents=True)  # a run started this second already has it
    fresh = OmegaConf.create({"dir": f"${{new_folder:outputs/{stamp}}}"}).dir
    assert fresh == f"outputs/{stamp}_1" and (tmp_path / fresh).is_dir()


@pytest.mark.parametrize("kind", ["empty", "file", "devnull", "under_a_file"])
def test_a_run_dir_that_cannot_work_is_refused_before_anything_is_written(tmp_path, kind):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    path = {"empty": "", "file": str(a_file), "devnull": "/dev/null", "under_a_file": str(a_file / "run")}[kind]
    with pytest.raises(ConfigError, match=r"^hydra\.run\.dir: ") as error:
        check_run_dir(path)
    assert "\n" not in str(error.value)


@contextlib.contextmanager
def held_by_another_process(folder):
    """A forked child (no new interpreter) takes ``folder``'s lock and keeps it until the block ends."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only system calls, nothing that could deadlock after a fork
        try:
            held = RunLock(folder).acquire()  # noqa: F841 -- held while this reference lives
            os.write(ready_write, b"x")
            os.read(done_read, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(ready_read, 1) == b"x"
        yield pid
    finally:
        os.write(done_write, b"x")
        os.waitpid(pid, 0)
        for fd in (ready_read, ready_write, done_read, done_write):
            os.close(fd)


def test_a_folder_in_use_by_another_process_is_refused_with_the_holder_named(tmp_path, tiny_config):
    run = tmp_path / "run"
    with held_by_another_process(run) as pid:
        assert lock_holder(run).startswith(f"pid {pid} on {socket.gethostname()}")
        with pytest.raises(
            ConfigError, match=rf"^hydra\.run\.dir: {run} is in use by another training process \(pid {pid} on "
        ):
            check_run_dir(str(run))
        with pytest.raises(ConfigError, match=f"in use by another training process \\(pid {pid} "):
            Trainer(tiny_config("trainer.max_steps=1"), run)
    assert lock_holder(run) is None
    check_run_dir(str(run))  # free again, the kernel released it with the process
    with RunLock(run), RunLock(run):  # within one process the lock is shared, released by the last
        assert lock_holder(run).endswith("(this process)")
    assert lock_holder(run) is None


def test_the_lock_is_held_while_training_and_released_after(tmp_path, tiny_config, monkeypatch):
    import minitrans.training.trainer as trainer_module

    run, seen = tmp_path / "run", []
    real_step = trainer_module.Trainer.train_batch

    def step(self, indices):
        seen.append(lock_holder(run))
        return real_step(self, indices)

    monkeypatch.setattr(trainer_module.Trainer, "train_batch", step)
    train(tiny_config("trainer.max_steps=2", "trainer.eval_every=1000"), run)
    assert seen and all(holder and holder.startswith(f"pid {os.getpid()}") for holder in seen)
    assert lock_holder(run) is None


def test_a_killed_save_leaves_nothing_behind_at_the_next_start(tmp_path, tiny_config):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "tokenizer").mkdir()
    leftovers = [run / "checkpoints" / ".last.pt.k2j3l.tmp", run / "tokenizer" / "tmpab12.tmp"]
    for path in leftovers:
        path.write_bytes(b"\x00" * 1000)
    keep = run / "checkpoints" / "notes.txt"
    keep.write_text("mine")
    Trainer(tiny_config("trainer.max_steps=1"), run).lock.release()
    assert not any(path.exists() for path in leftovers) and keep.exists()


def test_a_stale_average_never_wins_over_the_weights_the_summary_reports(tmp_path, tiny_config):
    run = tmp_path / "run"
    common = ("trainer.eval_every=2", "trainer.eval_sentences=2")
    train(tiny_config("trainer.max_steps=4", "trainer.average_last=2", *common), run)
    assert resolve_checkpoint(run).name == "averaged.pt"
    summary = train(tiny_config("trainer.max_steps=6", "trainer.average_last=1", *common), run)
    assert summary.weights == "best validation BLEU"
    assert json.loads((run / "summary.json").read_text())["weights"] == "best validation BLEU"
    assert resolve_checkpoint(run).name == "best.pt"  # not the averaged.pt of the first finish


def test_final_weights_last_reports_and_keeps_the_last_weights(tmp_path, tiny_config):
    run = tmp_path / "run"
    common = ("trainer.eval_every=2", "trainer.eval_sentences=2", "trainer.final_weights=last")
    summary = train(tiny_config("trainer.max_steps=4", *common), run)
    assert summary.weights == "last weights"
    assert not (run / "checkpoints" / "best.pt").exists()
    assert resolve_checkpoint(run).name == "last.pt"
    with pytest.raises(ConfigError, match=r"trainer\.final_weights: must be one of best, last, got 'first'"):
        tiny_config("trainer.final_weights=first")


@pytest.mark.slow
def test_a_second_training_process_gets_one_line_and_exit_2_and_writes_nothing(tmp_path, run_train):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from minitrans.core.run_folder import RunLock; held = RunLock({str(run)!r}).acquire(); input()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(200):  # until the holder has the lock
            if lock_holder(run):
                break
            time.sleep(0.05)
        result = run_train(f"hydra.run.dir={run}", "trainer.max_steps=1", timeout=60)
    finally:
        holder.communicate("\n", timeout=30)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        f"error: hydra.run.dir: {run} is in use by another training process (pid {holder.pid} on "
        + lines[0].split(f"pid {holder.pid} on ", 1)[1]
    ]
    assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME, HOLDER_NAME]  # Hydra wrote nothing into it


@pytest.mark.slow
def test_a_named_run_folder_is_locked_before_hydra_writes_so_a_rerun_changes_nothing(
    tmp_path, tiny_overrides, run_train
):
    """Two runs started together into one folder: the first holds the lock before Hydra writes
    its .hydra/ there, so the second is refused with the folder as the first wrote it; the first
    run's two training processes train under their parent's lock."""
    run = tmp_path / "run"
    long_run = ("trainer.processes=2", "trainer.max_steps=100000", "trainer.eval_every=100000")
    first = subprocess.Popen(
        train_command(*tiny_overrides, *long_run, f"hydra.run.dir={run}"),
        cwd=REPO,
        env=script_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        written = run / ".hydra" / "config.yaml"
        for _ in range(12000):  # the first moment Hydra's files are there
            if written.exists() or first.poll() is not None:
                break
            time.sleep(0.005)
        assert written.exists(), first.communicate(timeout=30)
        holder = lock_holder(run)
        assert holder is not None and holder.startswith(f"pid {first.pid} on ")
        for _ in range(1200):  # until the training processes run: past their lock
            if "training pairs" in (run / "train.log").read_text() or first.poll() is not None:
                break
            time.sleep(0.1)
        hydra_files = {path.name: path.read_bytes() for path in (run / ".hydra").iterdir()}
        second = run_train(*tiny_overrides, f"hydra.run.dir={run}", "model.d_model=64", timeout=60)
        assert second.returncode == 2, second.stderr
        assert f"is in use by another training process (pid {first.pid} on " in second.stderr
        assert {path.name: path.read_bytes() for path in (run / ".hydra").iterdir()} == hydra_files
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=300)  # a loaded machine (two suites on 2 cores) once needed over 120 s
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 130, err
    assert "in use" not in err and "training pairs" in (run / "train.log").read_text()  # rank 0 trained


@pytest.mark.slow
def test_a_sweep_into_a_folder_in_use_is_refused_before_hydra_writes_into_it(tmp_path, run_train):
    sweep = tmp_path / "sweep"
    with held_by_another_process(sweep) as pid:
        result = run_train("-m", "model.num_heads=1,2", "trainer.max_steps=1", f"hydra.sweep.dir={sweep}", timeout=60)
    assert result.returncode == 2, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith(f"error: hydra.sweep.dir: {sweep} is in use by another training process (pid {pid} on ")
    assert sorted(p.name for p in sweep.iterdir()) == [LOCK_NAME, HOLDER_NAME]  # no multirun.yaml, no job


SPELLINGS = [
    ("hydra.run.dir={}",),
    ("++hydra.run.dir={}",),
    ('hydra.run.dir="{}"',),
    ("hydra.run.dir='{}'",),
    ("hydra.run={{dir:'{}'}}",),
    ("hydra={{run:{{dir:'{}'}}}}",),
    ("hydra.run.dir=elsewhere", "hydra.run.dir={}"),  # the last one wins, as in Hydra
    ("-m", "++hydra.sweep.dir={}", "model.num_heads=1,2"),
    ("hydra.mode=MULTIRUN", 'hydra.sweep.dir="{}"'),
    ("-m", "hydra.sweep={{dir:'{}'}}"),
]


@pytest.mark.parametrize("spelling", SPELLINGS, ids=[" ".join(s) for s in SPELLINGS])
def test_every_hydra_spelling_of_the_run_folder_is_refused_before_hydra_writes(spelling, tmp_path, monkeypatch):
    """``++hydra.run.dir=X`` and a quoted ``hydra.run.dir="X"`` name the same folder as the
    plain spelling: a folder in use is refused at once, and no folder named ``"X"`` appears."""
    from minitrans.cli.train import hold_run_dir_argument

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    key = "hydra.sweep.dir" if "sweep" in " ".join(spelling) else "hydra.run.dir"
    with held_by_another_process(run) as pid:
        problem = hold_run_dir_argument([arg.format(run) for arg in spelling])
    assert problem is not None and problem.startswith(f"{key}: {run} is in use by another training process (pid {pid}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME, HOLDER_NAME]


def test_a_quoted_run_folder_is_locked_by_its_own_name(tmp_path, monkeypatch):
    from minitrans.cli import train as job
    from minitrans.core.hydra_config import named_run_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINITRANS_RUN_LOCK", "")  # restored after: the lock is handed down through it
    assert job.hold_run_dir_argument(['hydra.run.dir="run"']) is None
    try:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
        assert lock_holder(tmp_path / "run").endswith("(this process)")
    finally:
        job._run_dir_lock.release()
    assert named_run_dir(["+hydra.run.dir=x"]) is None  # Hydra refuses it: the key exists
    assert named_run_dir(["~hydra.run.dir"]) is None
    assert named_run_dir(["hydra.run.dir=x", "hydra.sweep.dir=y"], "hydra.sweep.dir") == ("hydra.sweep.dir", "y")


@pytest.mark.slow
@pytest.mark.parametrize("spelling", ["++hydra.run.dir={}", 'hydra.run.dir="{}"'])
def test_a_second_run_into_a_running_runs_folder_in_any_spelling_changes_nothing(spelling, tmp_path, run_train):
    """The running run's .hydra/ (its own overrides) stays as it wrote it, and no folder named
    with the quotes appears where the second run started."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- seed=1\n")
    started = tmp_path / "elsewhere"
    started.mkdir()
    with held_by_another_process(run) as pid:
        result = run_train(spelling.format(run), "seed=9", "trainer.max_steps=1", timeout=60, cwd=started)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: hydra.run.dir: {run} is in use by another training")
    assert f"(pid {pid} on " in lines[0]
    assert (run / ".hydra" / "overrides.yaml").read_text() == "- seed=1\n"
    assert sorted(p.name for p in run.iterdir()) == sorted([LOCK_NAME, HOLDER_NAME, ".hydra"])
    assert not any(started.iterdir())


# -- sweep job folder names ----------------------------------------------------------------
def test_a_short_job_name_is_kept_as_it_is():
    assert job_folder_name("0_model.num_heads=1") == "0_model.num_heads=1"


def test_a_slash_in_an_override_value_does_not_make_a_nested_folder(tmp_path):
    name = job_folder_name("3_data.path=corpora/en-fr/train.tsv,model.num_heads=2")
    assert name == "3_data.path=corpora_en-fr_train.tsv,model.num_heads=2"
    (tmp_path / name).mkdir()
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_many_overrides_give_a_folder_name_the_filesystem_takes_and_keep_jobs_apart(tmp_path):
    overrides = ",".join(f"trainer.option_number_{i}=välue{i}" for i in range(40))  # ~1,000 bytes, with ä
    first, second = job_folder_name(f"0_{overrides}"), job_folder_name(f"0_{overrides}x")
    for name in (first, second):
        assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
        name.encode("utf-8").decode("utf-8")  # not cut inside a character
        assert name.startswith("0_trainer.option_number_0=välue0,")
        (tmp_path / name).mkdir()  # a raw 1,000-byte name fails here with "File name too long"
    assert first != second
    with pytest.raises(OSError):
        (tmp_path / f"0_{overrides}").mkdir()


def test_the_sweep_folder_setting_goes_through_job_folder():
    from omegaconf import OmegaConf

    from minitrans.core.hydra_config import register_configs

    register_configs()
    hydra_yaml = OmegaConf.load(REPO / "conf" / "hydra" / "default.yaml")
    cfg = OmegaConf.create(
        {"hydra": {"job": {"num": 7, "override_dirname": "a=" + "b/" * 150}, "sweep": hydra_yaml.sweep}}
    )
    subdir = cfg.hydra.sweep.subdir
    assert subdir.startswith("7_a=b_b_") and "/" not in subdir and len(subdir.encode()) <= MAX_NAME_BYTES


def test_a_folder_that_cannot_be_made_is_refused_in_one_line(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ConfigError, match=r"^hydra\.run\.dir: .*a_file/run cannot be made \(") as error:
        RunLock(tmp_path / "a_file" / "run").acquire()
    assert "\n" not in str(error.value)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc, where no folder can be made")
def test_train_py_refuses_a_run_folder_under_proc_in_one_line():
    from minitrans.cli.train import hold_run_dir_argument

    problem = hold_run_dir_argument(["hydra.run.dir=/proc/minitrans-run"])
    assert problem == "hydra.run.dir: /proc/minitrans-run cannot be made (No such file or directory)"

"""trainer.processes: how many training processes a run gets, and a real 2-process run started
by scripts/train.py itself that is killed (SIGKILL), stopped (SIGTERM to the parent) and resumed,
ending bitwise where the uninterrupted 2-process run ends."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import TWO_PROCESS_RUN, assert_bitwise_equal, last_weights, script_env, train_command
from helpers.runs import scalars, state

from minitrans.core.checks import ConfigError
from minitrans.core.config import TrainerConfig
from minitrans.training import launch


def test_auto_is_one_process_per_physical_core_on_a_cpu_and_one_elsewhere():
    cores = launch.physical_cores()
    assert 1 <= cores <= (torch.get_num_threads() + 1024)
    auto = TrainerConfig()
    assert auto.processes == "auto"
    assert launch.processes_for(auto, torch.device("cpu")) == cores
    assert launch.processes_for(auto, torch.device("cuda")) == 1
    assert launch.processes_for(auto, torch.device("mps")) == 1
    assert launch.processes_for(auto, torch.device("cpu"), parallel_jobs=True) == 1  # a joblib sweep's job
    assert launch.processes_for(TrainerConfig(processes=3), torch.device("cpu")) == 3  # a number, as given


def test_a_containers_cpu_quota_caps_the_count(tmp_path):
    quota = tmp_path / "cpu.max"
    for text, cpus in (("200000 100000\n", 2), ("50000 100000\n", 1), ("max 100000\n", None), ("", None)):
        quota.write_text(text)
        assert launch.cgroup_cpu_quota(quota) == cpus, text
    assert launch.cgroup_cpu_quota(tmp_path / "missing") is None


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5", "100000"])
def test_an_impossible_process_count_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"trainer\.processes: must be auto or a number"):
        TrainerConfig(processes=value)


def test_one_exit_code_for_the_job():
    assert launch.exit_code([0, 0]) == 0
    assert launch.exit_code([-signal.SIGKILL, -signal.SIGKILL]) == 137  # killed, as a shell reports it
    assert launch.exit_code([143, 143]) == 143  # stopped by SIGTERM after a checkpoint
    assert launch.exit_code([0, 1]) == 1  # rank 1 failed
    assert launch.exit_code([2, 1]) == 2  # rank 0's reason first


def interrupted_before_training() -> int:
    """A training process that a Ctrl-C reaches while its data is prepared (no stop handling yet)."""
    raise KeyboardInterrupt


def stopped_twice() -> int:
    """A training process that gets two SIGTERMs in a row inside the loop's stop handling."""
    from minitrans.core.utils import StopRequest

    with StopRequest():
        os.kill(os.getpid(), signal.SIGTERM)  # the first: stop after this step
        os.kill(os.getpid(), signal.SIGTERM)  # the second: stop at once
        time.sleep(5)
    return 0


@pytest.mark.slow
@pytest.mark.parametrize(("task", "code"), [(interrupted_before_training, 130), (stopped_twice, 143)])
def test_an_interrupted_process_never_exits_0(task, code, capfd):
    """torch's spawn wrapper swallows a KeyboardInterrupt: the processes exited 0 and the parent
    printed the folder's old summary as this run's result (issue 33, item 2)."""
    assert launch.spawn(task, (), processes=2, threads=1) == code
    assert capfd.readouterr().err.count(f"error: interrupted by {signal.Signals(code - 128).name}") == 1


def started_with_libc_preloaded() -> int:
    """A training process that checks the allocator library it was started with (here the C
    library itself, which any Linux process maps anyway: harmless to preload)."""
    preload = os.environ.get("LD_PRELOAD", "").split(":")
    with open("/proc/self/maps", encoding="utf-8") as maps:
        mapped = maps.read()
    return 0 if preload[0] == "libc.so.6" and "libc.so.6" in mapped else 3


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD and /proc are Linux's")
def test_training_processes_get_the_allocator_and_the_parent_keeps_its_environment(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "")
    assert launch.spawn(started_with_libc_preloaded, (), processes=2, threads=1, preload="libc.so.6") == 0
    assert os.environ["LD_PRELOAD"] == ""  # only the children's environment had it
    assert launch.spawn(started_with_libc_preloaded, (), processes=2, threads=1) == 3  # none asked: none given


def joined_one_group() -> int:
    from minitrans.training import distributed

    info = distributed.init()
    return 0 if distributed.all_reduce_sum(torch.ones(1), info).item() == 2 else 3


@pytest.mark.slow
def test_a_port_another_program_takes_is_never_the_rendezvous(monkeypatch, capfd):
    """A port chosen free and taken before the processes listen on it: rank 0 failed with
    EADDRINUSE and the job ended a minute later in a traceback."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(launch, "free_port", lambda: taken.getsockname()[1])
        start = time.monotonic()
        assert launch.spawn(joined_one_group, (), processes=2, threads=1) == 0
    assert time.monotonic() - start < launch.GRACE_SECONDS
    assert "EADDRINUSE" not in capfd.readouterr().err


def aborted() -> int:
    """A training process ended by a C library's abort(), as an allocator ends one it cannot serve."""
    os.abort()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD is Linux's")
def test_a_crash_with_a_preloaded_allocator_says_how_to_train_without_it(capfd):
    assert launch.spawn(aborted, (), processes=2, threads=1, preload="libc.so.6") == 128 + signal.SIGABRT
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("error:")]
    assert line.startswith("error: training process ") and " was killed by SIGABRT (exit code 134)" in line
    assert line.endswith(
        "; the processes ran with the allocator libc.so.6 preloaded (trainer.allocator): "
        "trainer.allocator=system trains without it"
    )
    killed = launch.failure_line([-signal.SIGKILL, 0], [0], [], preload="libc.so.6")
    assert "allocator" not in killed  # a kill -9 or the OOM killer is no allocator's crash
    assert "allocator" not in launch.failure_line([-signal.SIGABRT, 0], [0], [])  # none preloaded


# scripts/train.py run with training processes that end with exit 0 and write nothing
def test_the_line_names_the_process_whose_failure_ended_the_job(tmp_path):
    killed = launch.failure_line([1, -signal.SIGKILL], [1, 0], [])
    assert (
        killed == "error: training process 1 of 2 was killed by SIGKILL (exit code 137); the others stopped without it"
    )
    assert launch.failure_line([0, 1], [1], []) == "error: training process 1 of 2 exited with code 1"
    assert launch.failure_line([2, 2], [1, 0], []) is None  # rank 0 wrote the error line
    assert launch.failure_line([143, 143], [0, 1], []) is None  # stopped; it said so
    assert launch.failure_line([0, 0], [], []) is None
    kept = tmp_path / "error"
    kept.write_bytes(pickle.dumps("Traceback (most recent call last):\n  ...\nValueError: a bug\n"))
    raised = launch.failure_line([0, 1], [1], ["", str(kept)])
    assert raised.endswith("\nerror: training process 1 of 2 failed: ValueError: a bug")


def one_process_killed() -> int:
    """Two processes in one group; process 1 is killed (``kill -9``) while they work together."""
    from minitrans.training import distributed

    info = distributed.init()
    for step in range(200):
        distributed.all_reduce_sum(torch.ones(2), info)
        if info.rank == 1 and step == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)
    return 0


@pytest.mark.slow
def test_a_killed_process_is_named_with_its_signal_and_the_job_fails(capfd):
    """It ended without a word: the other process's error is kept by torch's wrapper in a file
    nobody read (issue 33, item 11)."""
    assert launch.spawn(one_process_killed, (), processes=2, threads=1) != 0
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: training process 1 of 2 was killed by SIGKILL (exit code 137); the others stopped without it"
    ]


TRAINS_NOTHING = """
import runpy, sys
import minitrans.cli.train as job
job.run_job = lambda cfg, job: 0
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.parametrize("old_summary", [True, False])
def test_the_script_never_reports_a_summary_its_training_did_not_just_write(tmp_path, tiny_overrides, old_summary):
    """The parent's own guard, whatever its training processes say: exit 0 from them and no new
    summary.json is one error line and exit 1, never the folder's old result (or a traceback)."""
    from minitrans.runs.summary import RunSummary

    run = tmp_path / "run"
    run.mkdir()
    if old_summary:
        RunSummary(name="old", model="transformer", steps=40, valid={"bleu": 12.5, "loss": 1.0}).write(run)
    command = train_command(*tiny_overrides, f"hydra.run.dir={run}")
    done = subprocess.run(
        [command[0], "-c", TRAINS_NOTHING, *command[1:]], env=script_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: the training ended without writing {run / 'summary.json'}; its result is unknown"
    )
    assert "40 steps" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def two_processes(tiny_overrides, run, *extra: str) -> list[str]:
    return train_command(*tiny_overrides, *TWO_PROCESS_RUN, *extra, f"hydra.run.dir={run}")


@pytest.mark.slow
def test_the_scripts_two_processes_survive_a_kill_and_a_stop_and_resume_bitwise(
    tmp_path, tiny_overrides, two_process_reference
):
    def train(run, *extra, timeout=300):
        return subprocess.run(
            two_processes(tiny_overrides, run, *extra),
            env=script_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    reference, done = two_process_reference  # the same run, trained once for this and test_two_nodes.py
    assert done.stdout.count("test BLEU") == 1  # one summary line, from the waiting parent
    assert "60 steps" in done.stdout and "s training in 2 processes |" in done.stdout
    log = (reference / "train.log").read_text()
    assert "starting 2 training processes (1 thread(s) each" in log and "2 process(es)" in log
    assert len(list(reference.glob("events.out.tfevents.*"))) == 1  # only rank 0 logs
    saved = torch.load(reference / "checkpoints" / "last.pt", weights_only=False)
    assert saved["world_size"] == 2 and len(saved["rng"]) == 2

    # 1) both processes die at step 8 without a chance to save: the last checkpoint is step 6
    run = tmp_path / "run"
    killed = train(run, "trainer.crash_at_step=8")
    assert killed.returncode == 128 + signal.SIGKILL, killed.stderr[-3000:]
    assert state(run)["step"] == 6

    # 2) resumed, then SIGTERM to the parent only: it hands the signal on once, they save and stop
    process = subprocess.Popen(
        two_processes(tiny_overrides, run),
        env=script_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while state(run)["step"] == 6 and time.monotonic() < deadline:  # wait for a checkpoint past step 6
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert err.count("stopped by SIGTERM after step") == 1 and "to resume, run: python " in err
    assert 6 < state(run)["step"] < 60

    # 3) resumed to the end: every weight and every logged loss as in the run never interrupted
    finished = train(run)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert_bitwise_equal(last_weights(run), last_weights(reference))
    assert scalars(run, "train/loss_label_smoothed") == scalars(reference, "train/loss_label_smoothed")


def training_processes(parent: int) -> list[int]:
    """The pids of the training processes ``parent`` started, in rank order (the order they
    were started: multiprocessing's spawn children, not its resource tracker)."""
    found = []
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
            command = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if int(fields[1]) == parent and b"spawn_main" in command:
            found.append((int(fields[19]), pid))  # start time, in clock ticks
    return [pid for _, pid in sorted(found)]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the training process in /proc")
def test_kill_9_of_one_training_process_is_named_by_the_script(tmp_path, tiny_overrides):
    run = tmp_path / "run"
    process = subprocess.Popen(
        two_processes(tiny_overrides, run, "trainer.max_steps=100000"),
        env=script_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not (run / "checkpoints" / "last.pt").exists() and time.monotonic() < deadline:  # training has begun
        time.sleep(0.05)
    os.kill(training_processes(process.pid)[1], signal.SIGKILL)
    out, err = process.communicate(timeout=240)
    assert process.returncode != 0 and "test BLEU" not in out, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: training process 1 of 2 was killed by SIGKILL (exit code 137); the others stopped without it"
    ]


FULL_DISK = """
import os

import torch

real_save, saves = torch.save, {"last.pt": 0}


def save(obj, file, *args, **kwargs):  # the second last.pt meets a full disk, as torch reports it
    fd = file.fileno() if isinstance(getattr(file, "name", None), int) else None  # not an in-memory buffer
    if fd is not None and ".last.pt." in os.readlink(f"/proc/self/fd/{fd}"):  # its temporary file
        saves["last.pt"] += 1
        if saves["last.pt"] > 1:
            file.write(b"PK")
            raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 1472 vs 1368")
    return real_save(obj, file, *args, **kwargs)


torch.save = save
"""


@pytest.mark.slow
def test_a_full_disk_in_a_two_process_run_is_one_line_and_last_pt_stays(tmp_path, tiny_overrides):
    """With two processes it ended without a word: rank 0's RuntimeError was kept by torch's
    spawn wrapper in a file nobody read (issue 33, item 11)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(FULL_DISK)  # every process this run starts loads it
    env = script_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hooks), env.get("PYTHONPATH")]))
    run = tmp_path / "run"
    done = subprocess.run(two_processes(tiny_overrides, run), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    last = run / "checkpoints" / "last.pt"
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: could not write {last}: the write failed"), errors
    assert "bytes free on the disk of" in errors[0] and errors[0].endswith("the previous checkpoint there is intact")
    assert state(run)["step"] == 3 and "test BLEU" not in done.stdout


class FakeChild:
    """What wait_for reads of a process: its exit code (None while it runs) and a sentinel."""

    def __init__(self, exitcode):
        self.exitcode, self.killed = exitcode, False
        self.reader, self.writer = multiprocessing.Pipe(duplex=False)
        self.sentinel = self.reader  # never ready: wait() returns at its timeout

    def kill(self):
        self.killed, self.exitcode = True, -signal.SIGKILL

    def join(self):
        pass


def test_a_peer_that_exits_0_while_another_still_runs_gets_it_killed_after_a_grace(monkeypatch):
    """A Ctrl-C that torch's wrapper swallows makes its process exit 0 and leaves the other one
    waiting in a collective for it: the job must end (after ``early`` seconds), not hang."""
    clock = iter(range(0, 10_000, 10))  # each look at the clock is 10 s later
    monkeypatch.setattr(launch.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(launch.multiprocessing.connection, "wait", lambda objects, timeout: [])
    done, stuck = FakeChild(0), FakeChild(None)
    assert launch.wait_for([done, stuck], grace=5, early=30) == [0, -signal.SIGKILL] and stuck.killed
    finished = [FakeChild(0), FakeChild(0)]  # a job's normal end: nobody is killed
    assert launch.wait_for(finished) == [0, 0] and not any(child.killed for child in finished)


class _SignalledWhileFinalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, inside a finalizer


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="no SIGINT")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_that_python_swallows_in_a_finalizer_still_stops_the_training_loop():
    """Python only prints an exception raised in a ``__del__``: a training process's Ctrl-C that
    landed there was lost and the run trained on (the run-folder lock test's rare 300 s wait). The
    training processes' early handler remembers it, and the loop's StopRequest starts with it."""
    from minitrans.core.utils import StopRequest, interrupt_early

    previous = signal.signal(signal.SIGINT, interrupt_early)
    try:
        _SignalledWhileFinalised()  # dropped at once: its __del__ gets the signal, the exception is swallowed
        with StopRequest() as stop:
            assert stop.signal == signal.SIGINT  # the loop stops after its first step, with a checkpoint
        with StopRequest() as again:
            assert again.signal is None  # remembered once
        with pytest.raises(KeyboardInterrupt):  # outside a finalizer it stops at once, as Python's own handler
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, previous)
    from minitrans.core import utils

    utils._early_stops.clear()  # the last one, raised here, is not a run's

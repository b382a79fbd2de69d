"""Several training processes on one machine, started by ``scripts/train.py`` itself.

A small model does not keep two cores busy with torch's intra-op threads (its matrices are too
small to split well; docs/performance.md has the measurement), but two single-threaded processes
that each take half of every batch do (data parallelism; see :mod:`minitrans.training.distributed`).
``trainer.processes`` says how many: ``auto`` is one single-threaded process per physical core
on a CPU and one on a GPU (or Apple's MPS); a number is that many.

:func:`spawn` starts the processes with torch's own multiprocessing and gives each the
environment torchrun would (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``), so from :func:`distributed.init` on they run the code torchrun's processes
run: one gloo (or NCCL) group, one run folder, rank 0 writing the logs and checkpoints.

The parent only waits. It hands each stop signal (Ctrl-C, SIGTERM, submitit's SIGUSR2) to every
process exactly once (they sit in a process group of their own, so a Ctrl-C does not reach
them twice, which would stop them without a checkpoint), and exits with their exit code,
naming the process whose failure ended the job when it could not say so itself (killed by a
signal, or an exception that torch's wrapper keeps in a file for the parent). If the
parent is killed outright, the processes receive SIGINT (torch sets that up), save and stop. A
process interrupted outside the training loop's stop handling (while the data is prepared, or
by a second signal) exits 128 + the signal, never 0.
"""

from __future__ import annotations

import logging
import logging.config
import multiprocessing.connection
import os
import pickle
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from minitrans.core.config import TrainerConfig
from minitrans.core.memory import preloaded
from minitrans.core.utils import STOP_SIGNALS, interrupt_early

log = logging.getLogger(__name__)

# after one process fails, how long the others get to notice (at their next collective) and exit
GRACE_SECONDS = 60.0


def under_torchrun() -> bool:
    """True in a process that torchrun (or :func:`spawn`) started."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def physical_cores() -> int:
    """Physical cores this process may run on: hyperthreads of one core count once, and a
    container's CPU quota (cgroup v2 ``cpu.max``) caps the count."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    cores = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text(), (topology / "core_id").read_text()))
        except OSError:  # no sysfs (macOS, Windows): every CPU counts
            cores.add(("cpu", str(cpu)))
    count = len(cores)
    quota = cgroup_cpu_quota()
    return max(1, min(count, quota) if quota else count)


def cgroup_cpu_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> int | None:
    """Whole CPUs a cgroup v2 quota allows (``"200000 100000"`` -> 2), or None without one."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, int(quota) // int(period))


def processes_for(tcfg: TrainerConfig, device: torch.device, parallel_jobs: bool = False) -> int:
    """``trainer.processes`` as a number, for a run on ``device``; ``auto`` is 1 for a job that
    runs beside others (a sweep on Hydra's joblib launcher: the jobs share the cores)."""
    if tcfg.processes != "auto":
        return int(tcfg.processes)
    return physical_cores() if device.type == "cpu" and not parallel_jobs else 1


def free_port() -> int:
    """A TCP port nobody listens on now (another program may take it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn(
    task: Callable[..., int],
    args: tuple,
    processes: int,
    threads: int,
    logging_config: dict[str, Any] | None = None,
    preload: str | None = None,
) -> int:
    """Run ``task(*args)`` in ``processes`` processes joined in one process group, each with
    ``threads`` intra-op threads; return their exit code (rank 0's if it failed, else the first
    failure's; 128 + N for a process killed by signal N). ``task`` returns an exit code and must
    be importable by name (a module-level function); ``logging_config`` (a ``dictConfig``) is
    rank 0's logging, the others log warnings and errors only. ``preload``: a shared library the
    processes start with (``LD_PRELOAD``: another C allocator, :func:`minitrans.core.memory.allocator_library`)."""
    before = os.environ.get("LD_PRELOAD")
    if preload is not None:  # what the spawned interpreters start with
        os.environ["LD_PRELOAD"] = preloaded(before, preload)
    # the rendezvous store is this process's, as torchrun's agent hosts it: bound to a port the
    # system picks and held while the processes run, so no other program can take it between
    # choosing a port and listening on it (the processes' rank 0 would fail with EADDRINUSE)
    store = dist.TCPStore("127.0.0.1", 0, processes, is_master=True, wait_for_workers=False)
    try:
        context = mp.start_processes(
            _worker,
            args=(processes, store.port, threads, logging_config, task, args),
            nprocs=processes,
            join=False,
            start_method="spawn",
        )
    finally:
        if before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = before
    children = context.processes
    received: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        received.append(signum)
        for child in children:
            if child.is_alive():
                os.kill(child.pid, signum)

    previous = {}
    for sig in STOP_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, forward)
        except ValueError:  # not the main thread: signals stay where they are
            pass
    failures: list[int] = []
    try:
        codes = wait_for(children, failures=failures)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    usr2 = getattr(signal, "SIGUSR2", None)
    if usr2 in received and callable(previous.get(usr2)):
        previous[usr2](usr2, None)  # the checkpoint is written: now submitit may requeue the job
    if received and 0 in codes and all(code in (0, -signal.SIGKILL) for code in codes):  # a stop, not a crash:
        return 128 + received[0]  # the process that swallowed it exited 0; its stuck peers were killed
    line = failure_line(codes, failures, context.error_files, preload)
    if line is not None:
        print(line, file=sys.stderr)
    return exit_code(codes)


def wait_for(
    children: list, grace: float = GRACE_SECONDS, failures: list[int] | None = None, early: float | None = None
) -> list[int]:
    """Wait until every child has exited; once one has failed, the others get ``grace``
    seconds to notice and are then killed. One that exits 0 while others still run (the ranks
    of a job end together, after one last barrier) gives them ``early`` seconds (default twice
    ``grace``): a process whose Ctrl-C torch's wrapper swallowed exits 0 and leaves its peers
    waiting for it in a collective. Returns their exit codes in rank order; ``failures``
    receives the ranks that failed, in the order they were seen (of those seen at once, the
    ones killed by a signal first: the others fail because a peer is gone)."""
    failed_at = None
    early = 2 * grace if early is None else early
    failures = [] if failures is None else failures

    def note_failures() -> None:
        new = [rank for rank, child in enumerate(children) if child.exitcode not in (None, 0) and rank not in failures]
        failures.extend(sorted(new, key=lambda rank: children[rank].exitcode >= 0))

    while any(child.exitcode is None for child in children):
        alive = [child.sentinel for child in children if child.exitcode is None]
        multiprocessing.connection.wait(alive, timeout=1.0)
        note_failures()
        if failed_at is None and failures:
            failed_at = time.monotonic()
        elif failed_at is None and any(child.exitcode == 0 for child in children):
            failed_at = time.monotonic() - grace + early  # the same kill, ``early`` seconds on
        if failed_at is not None and time.monotonic() - failed_at > grace:
            for child in children:
                if child.exitcode is None:
                    child.kill()
            for child in children:
                child.join()
    note_failures()
    return [child.exitcode for child in children]


# how a C library such as a preloaded allocator ends a process it cannot serve
CRASH_SIGNALS = ("SIGABRT", "SIGSEGV", "SIGBUS")


def failure_line(
    codes: list[int], failures: list[int], error_files: list[str], preload: str | None = None
) -> str | None:
    """What names the process whose failure ended the job, or None when it said why itself (an
    ``error:`` line, a stop). A process killed by a signal (``kill -9``, the kernel's OOM killer)
    says nothing, and the others then fail at their next collective; an exception raised in a
    process is kept by torch's wrapper in a file the parent must print (its traceback: a bug).
    A crash (an abort, a segmentation fault) of processes started with ``preload`` (another
    allocator) names that library and how to train without it."""
    if not failures:
        return None
    rank = failures[0]
    code, who = codes[rank], f"training process {rank} of {len(codes)}"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        line = f"error: {who} was killed by {name} (exit code {128 - code}); the others stopped without it"
        if preload is not None and name in CRASH_SIGNALS:
            line += (
                f"; the processes ran with the allocator {preload} preloaded (trainer.allocator): "
                "trainer.allocator=system trains without it"
            )
        return line
    try:
        with open(error_files[rank], "rb") as file:
            trace = str(pickle.load(file)).rstrip()
    except (OSError, EOFError, pickle.UnpicklingError, IndexError):
        trace = ""
    if trace:
        return f"{trace}\nerror: {who} failed: {trace.splitlines()[-1]}"
    if rank != 0 and codes[0] != code:  # rank 0 writes the error lines; this one would go unnamed
        return f"error: {who} exited with code {code}"
    return None


def exit_code(codes: list[int]) -> int:
    """One exit code for the job: rank 0's if it failed, else the first failure's."""
    failures = [code for code in codes if code]
    code = codes[0] if codes and codes[0] else failures[0] if failures else 0
    return 128 - code if code < 0 else code


def _worker(
    rank: int,
    world_size: int,
    port: int,
    threads: int,
    logging_config: dict[str, Any] | None,
    task: Callable[..., int],
    args: tuple,
) -> None:
    """One process: torchrun's environment, its threads and logging, then the task."""
    os.setpgid(0, 0)  # stop signals come from the parent, once (see the module's docstring)
    signal.signal(signal.SIGINT, interrupt_early)  # Python's own handler, but never lost in a finalizer
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",  # the store at MASTER_PORT is the parent's: every rank a client
    )
    torch.set_num_threads(threads)
    if rank == 0 and logging_config:
        logging.config.dictConfig(logging_config)
    else:
        logging.basicConfig(level=logging.WARNING, format=f"[rank {rank}] %(levelname)s %(name)s: %(message)s")
    try:
        code = task(*args)
    except KeyboardInterrupt as interrupted:  # a stop signal before training began, or a second one
        # torch's wrapper around this function swallows a KeyboardInterrupt (``except
        # KeyboardInterrupt: pass``): the process would exit 0 and the parent would take the run
        # folder's old summary.json for this run's result
        signum = getattr(interrupted, "signum", signal.SIGINT)
        if rank == 0:
            print(f"error: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
        code = 128 + signum
    sys.stdout.flush()
    sys.stderr.flush()
    if code:
        raise SystemExit(code)

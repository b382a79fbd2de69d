"""One training job as ``scripts/train.py`` runs it: train (or resume) in this process, and
turn every problem the library names into one ``error:`` line and an exit code (2 for
configuration, 1 for the rest, 128 + N for a run stopped by signal N).

Around it, what the script does on either side of Hydra. Before Hydra starts: claim the run
folder a command line names (:func:`claim_run_dir`: refused in one line when it is in use, else
locked before Hydra writes into it) and, under torchrun, agree on one folder for every rank
(:func:`torchrun_overrides`). Inside Hydra's job: :func:`train_job` starts the training
processes (:mod:`minitrans.training.launch`) or trains here, and prints the run's summary line
only when this run has just written it; a sweep's failed job lets the sweep go on
(:func:`sweep_job_failed`). Nothing here imports torch at import time: a command line refused
before training is refused without loading it.

It lives here rather than in the script because every launcher must be able to import it by
name: :func:`minitrans.training.launch.spawn` pickles :func:`run_job` and its :class:`Job` for
the training processes it starts, and a job that Hydra's submitit launcher runs (a cluster's,
or its local executor's) runs under submitit's own ``__main__``, where nothing defined in the
script could be found again.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from minitrans.core.checks import ConfigError
from minitrans.core.hydra_config import named_run_dir
from minitrans.core.hydra_sweep import TrialFailed
from minitrans.core.memory import ALLOCATOR_LIBRARIES, allocator_library
from minitrans.core.run_folder import RunLock, check_run_dir, claim_new_folder, hand_down
from minitrans.training.state import TrainingError, TrainingStopped

if TYPE_CHECKING:
    from minitrans.core.config import TrainConfig

log = logging.getLogger("minitrans")


def fail(message: str, code: int) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


@dataclass(frozen=True)
class Job:
    """What a training process needs to know of the command that started it."""

    out_dir: str
    is_sweep: bool
    overrides: list[str]  # the command line's overrides, for the line that says how to resume
    program: str  # how the script was started

    def refuse(self, error: Exception) -> None:
        if self.is_sweep:  # refuse this combination, keep the rest of the sweep going
            log.error("skipping job %s: %s", os.path.basename(self.out_dir), error)
            return None
        fail(str(error), 2)


def run_job(cfg: TrainConfig, job: Job) -> int:
    """Train (or resume) the run in this process; return the exit code. Every problem the
    library names becomes one ``error:`` line (from rank 0 only: every rank meets the same one)."""
    import datasets

    from minitrans.core.checkpoint import CheckpointError
    from minitrans.training.trainer import train

    datasets.disable_progress_bars()  # tqdm shows training progress; corpus preparation stays quiet
    is_main = int(os.environ.get("RANK", 0)) == 0
    try:
        train(cfg, job.out_dir)
    except ConfigError as error:
        if job.is_sweep:
            if is_main:
                job.refuse(error)
            return 2
        return report(str(error), 2, is_main)
    except (CheckpointError, TrainingError) as error:
        return report(str(error), 1, is_main)
    except OSError as error:  # a full disk or a folder that went away while writing logs, results or caches
        return report(os_error_line(error, job.out_dir, cfg.data.cache_dir), 1, is_main)
    except TrainingStopped as stopped:
        if is_main:  # every rank stopped at the same step
            print(f"{stopped}\n{stopped.resume_line(job.overrides, job.program)}", file=sys.stderr)
        return stopped.exit_code
    return 0


def os_error_line(error: OSError, out_dir: str, cache_dir: str | None) -> str:
    """One line for an OSError that ended a run: the file it names, or else (a write names no
    file) where it may have happened; a full disk says how much room each place has left."""
    from minitrans.core.utils import disk_space

    reason = error.strerror or str(error)
    cache_dir = os.path.expanduser(cache_dir) if cache_dir else None
    places = [error.filename] if error.filename else [out_dir, *([cache_dir] if cache_dir else [])]
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += f" ({'; '.join(dict.fromkeys(disk_space(place) for place in places))})"
    if error.filename:
        return f"{error.filename}: {reason}"
    where = f"the run folder {out_dir}" + (f" or the cache {cache_dir}" if cache_dir else "")
    return f"a write to {where} failed: {reason}"


def report(message: str, code: int, is_main: bool = True) -> int:
    if is_main:
        print(f"error: {message}", file=sys.stderr)
    return code


def train_job(
    cfg: TrainConfig, job: Job, is_search: bool, parallel_jobs: bool, logging_config: dict[str, Any] | None
) -> float | None:
    """What the script's Hydra job does with a valid configuration: train in
    ``trainer.processes`` processes (this one waits) or in this one, then print the run's summary
    line and return its validation BLEU (what a sweeper reads). ``parallel_jobs``: the job runs
    beside others (Hydra's joblib launcher); ``logging_config``: rank 0's logging (Hydra's
    ``job_logging``, resolved). Exits (SystemExit) with the job's code when it failed, was
    refused or stopped, unless the sweep goes on without it."""
    from minitrans.runs.summary import RunSummary, summary_line, warmup_note
    from minitrans.training import launch
    from minitrans.training.setup import training_device

    try:
        device = training_device(cfg.trainer.device)
    except ConfigError as error:
        return refused(job, error, is_search)
    if launch.under_torchrun() and (disagree := nodes_disagree(cfg)) is not None:
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:  # once on each node's console
            print(f"error: {disagree}", file=sys.stderr)
        raise SystemExit(2)
    before = summary_stamp(job.out_dir)  # the folder's old summary, if any: never reported as this run's
    processes = 1 if launch.under_torchrun() else launch.processes_for(cfg.trainer, device, parallel_jobs)
    if processes > 1:  # this process waits; the training processes run the job
        threads = cfg.trainer.num_threads or 1
        try:
            preload = allocator_library(cfg.trainer.allocator)
        except ValueError as error:
            return refused(job, error, is_search)
        log.info(
            "starting %d training processes (%d thread(s) each; trainer.processes=%s)%s",
            processes,
            threads,
            cfg.trainer.processes,
            f" with the allocator {preload}" if preload else "",
        )
        code = launch.spawn(run_job, (cfg, job), processes, threads, logging_config, preload)
    else:
        if cfg.trainer.allocator in ALLOCATOR_LIBRARIES:  # asked for by name: missing here is an error in any run
            try:
                preload = allocator_library(cfg.trainer.allocator)
            except ValueError as error:
                return refused(job, error, is_search)
            log.info(
                "trainer.allocator=%s applies to several training processes; this one trains with the "
                "allocator it started with (LD_PRELOAD=%s preloads it)",
                cfg.trainer.allocator,
                preload,
            )
        code = run_job(cfg, job)
    if code:
        if job.is_sweep and code in (1, 2):  # refused or failed, its error line written (not stopped)
            return sweep_job_failed(job, code, is_search)
        raise SystemExit(code)
    if int(os.environ.get("RANK", 0)) != 0:  # a rank other than 0 under torchrun
        return None
    if summary_stamp(job.out_dir) in (None, before):  # the training processes ended without finishing
        fail(f"the training ended without writing {Path(job.out_dir) / 'summary.json'}; its result is unknown", 1)
    summary = RunSummary.read(job.out_dir)
    note = warmup_note(summary)
    if note is not None:  # once, in train.log and on the console, just before the summary line
        log.warning(note)
    print(summary_line(summary, job.out_dir))
    return summary.valid["bleu"]


# settings each node may set for itself: where its cache lives, how many threads its cores take
NODE_SETTINGS = ("data.cache_dir", "trainer.num_threads", "trainer.processes")
SHOWN_SETTINGS = 4  # differing settings a refusal names one by one


def flat_settings(value: Any, prefix: str = "") -> dict[str, Any]:
    """A configuration (dataclasses, dicts) as ``{"trainer.max_steps": 60, ...}``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if not isinstance(value, dict):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(flat_settings(item, f"{prefix}{key}."))
    return {key.rstrip("."): item for key, item in flat.items()}


def nodes_disagree(cfg: TrainConfig) -> str | None:
    """Under torchrun: the one-line refusal when the ranks were started with different settings
    (another seed, ``trainer.max_steps`` or model on one node), which would train apart or fail
    inside a collective; None when they agree (or in one process). Every rank must call it."""
    from minitrans.training import distributed

    info = distributed.init()
    if not info.enabled:
        return None
    mine = {key: value for key, value in flat_settings(cfg).items() if key not in NODE_SETTINGS}
    differ = distributed.differing_settings(mine, info)
    if not differ:
        return None

    def values(ranks: dict[str, list[int]]) -> str:
        return ", ".join(
            f"{value} on rank{'s' if len(on) > 1 else ''} {', '.join(map(str, on[:3]))}{', …' if len(on) > 3 else ''}"
            for value, on in ranks.items()
        )

    shown = "; ".join(f"{key}: {values(ranks)}" for key, ranks in list(differ.items())[:SHOWN_SETTINGS])
    more = f"; and {len(differ) - SHOWN_SETTINGS} more" if len(differ) > SHOWN_SETTINGS else ""
    return (
        f"the training processes were started with different settings ({shown}{more}); "
        "start every node with the same command line"
    )


def refused(job: Job, error: Exception, is_search: bool) -> None:
    """A configuration refused (exit 2 with its error line; in a sweep, that job skipped)."""
    job.refuse(error)
    return sweep_job_failed(job, 2, is_search)


def sweep_job_failed(job: Job, code: int, is_search: bool) -> None:
    """A sweep job refused (``code`` 2) or failed (1) with its error line: the rest of a grid
    sweep goes on; in an Optuna search it is a failed trial, raised so that the sweeper counts it
    against ``hydra.sweeper.max_failure_rate`` (a result of None would count, but never stop it)."""
    name = os.path.basename(job.out_dir)
    if is_search:
        raise TrialFailed(f"trial {name} {'was refused' if code == 2 else 'failed'}; its error line is above")
    if code == 1:
        log.error("job %s failed; the rest of the sweep goes on", name)
    return None


def summary_stamp(out_dir: str) -> tuple[int, int, int] | None:
    """What tells a summary.json just written from an older one (it is replaced atomically: a
    new file), or None without one."""
    try:
        stat = (Path(out_dir) / "summary.json").stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def resume_program() -> str:
    """How the script was started, for the line that says how to resume."""
    world = int(os.environ.get("WORLD_SIZE", 1))  # set by torchrun (not yet by trainer.processes)
    launcher = f"torchrun --nproc_per_node={world}" if world > 1 else "python"
    return f"{launcher} {sys.argv[0]}"


_run_dir_lock = None  # a named run (or sweep) folder's lock, held from before Hydra writes into it


def claim_run_dir(args: list[str]) -> str | None:
    """Before Hydra starts: the one-line problem with the command line's run folder or torchrun
    environment, else None, the folder named by rank 0 (or a lone process) now locked
    (:func:`hold_run_dir_argument`)."""
    if "WORLD_SIZE" in os.environ:  # torchrun's, or one leaked from another job
        from minitrans.training.distributed import torchrun_env_problem

        problem = torchrun_env_problem()
        if problem is not None:
            return problem
    return hold_run_dir_argument(args) if int(os.environ.get("RANK", 0)) == 0 else None


def hold_run_dir_argument(args: list[str]) -> str | None:
    """A ``hydra.run.dir=`` (``hydra.sweep.dir=`` for ``-m``) on the command line that is empty,
    a file, not writable or in use by another training process is refused; otherwise this
    process locks it before Hydra writes anything into it (``.hydra/``, ``train.log``,
    ``multirun.yaml``), so a second run started at the same moment is refused by a folder still
    as the first one wrote it. The training processes a run starts inherit the lock; a folder
    Hydra must resolve (``${...}``) is locked by the trainer (a sweep's: each job's, only)."""
    global _run_dir_lock

    named = named_run_dir(args)  # every spelling Hydra takes: ++hydra.run.dir=X, 'hydra.run.dir="X"', ...
    if named is None:
        return None
    key, folder = named
    try:
        check_run_dir(folder, key)
        if "${" not in folder:
            _run_dir_lock = RunLock(folder, key).acquire()
            if key == "hydra.run.dir":
                hand_down(folder)
    except ConfigError as error:
        return str(error)
    return None


def torchrun_overrides(args: list[str]) -> list[str]:
    """Under torchrun (more than one rank), every rank must write to the same run folder: rank 0
    picks the time stamp that Hydra's default folder name (conf/hydra/default.yaml) would use,
    and only rank 0 writes Hydra's files and logs. Nothing to add for a lone process."""
    if int(os.environ.get("WORLD_SIZE", 1)) <= 1:
        return []
    from minitrans.training import distributed

    info = distributed.init()
    extra = []
    if not any(named_run_dir(args, key) for key in ("hydra.run.dir", "hydra.sweep.dir")):
        stamp = time.strftime("%Y-%m-%d/%H-%M-%S")
        run_dir = distributed.broadcast_object(claim_new_folder(f"outputs/{stamp}") if info.is_main else None, info)
        extra += [f"hydra.run.dir={run_dir}", f"hydra.sweep.dir=multirun/{stamp}"]
    if not info.is_main:
        extra += ["hydra.output_subdir=null", "hydra/job_logging=disabled", "hydra/hydra_logging=disabled"]
    return extra


def shutdown_distributed() -> None:
    """Leave the process group, if this process joined one (torchrun)."""
    if "minitrans.training.distributed" in sys.modules:
        sys.modules["minitrans.training.distributed"].shutdown()


__all__ = [
    "Job",
    "claim_run_dir",
    "fail",
    "flat_settings",
    "hold_run_dir_argument",
    "nodes_disagree",
    "os_error_line",
    "refused",
    "report",
    "resume_program",
    "run_job",
    "shutdown_distributed",
    "summary_stamp",
    "sweep_job_failed",
    "torchrun_overrides",
    "train_job",
]

"""Train a model: ``python scripts/train.py [key=value ...]``; ``-m`` sweeps (Hydra multirun).

On a CPU it trains in one single-threaded process per physical core (``trainer.processes=auto``;
``trainer.processes=1`` for one): this process starts them and waits
(:mod:`minitrans.training.launch`). Several machines: ``torchrun --nproc_per_node=N
scripts/train.py [key=value ...]``; every rank runs this script, and they share one run folder
(``hydra.run.dir``, chosen by rank 0 unless given).

Thin by design: it turns the Hydra config into typed dataclasses and calls the library. Any
problem it can name (a bad key or value, missing data, an unreadable checkpoint, a diverged
run) ends the process with one ``error: ...`` line on stderr and a non-zero exit code: 2 for
configuration, 1 for the rest; a run stopped by SIGINT/SIGTERM exits with 128 + the signal.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

if __name__ == "__main__" and {"--help", "-h"} & set(sys.argv[1:]):  # before Hydra loads: instant
    from minitrans.core.config_help import train_help

    print(train_help(CONFIG_DIR))
    raise SystemExit(0)

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from minitrans.core.checks import ConfigError  # noqa: E402
from minitrans.core.hydra_config import check_command_line, register_configs, to_dataclass  # noqa: E402
from minitrans.training.job import Job, fail, run_job  # noqa: E402

log = logging.getLogger("minitrans")
register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def main(cfg: DictConfig) -> float | None:
    # imported here so that a mistyped command line is refused in a second, not after torch loads
    from omegaconf import OmegaConf

    from minitrans.runs.summary import RunSummary, summary_line, warmup_note
    from minitrans.training import launch
    from minitrans.training.setup import training_device

    hydra_cfg = HydraConfig.get()
    job = Job(
        out_dir=hydra_cfg.runtime.output_dir,
        is_sweep=hydra_cfg.mode == RunMode.MULTIRUN,
        overrides=list(hydra_cfg.overrides.task),
        program=resume_program(),
    )
    is_search = job.is_sweep and "optuna" in str(hydra_cfg.sweeper.get("_target_", ""))
    try:
        typed = to_dataclass(cfg)
        device = training_device(typed.trainer.device)
    except ConfigError as error:
        job.refuse(error)
        return sweep_job_failed(job, 2, is_search)
    parallel_jobs = job.is_sweep and "joblib" in str(hydra_cfg.launcher.get("_target_", ""))
    before = summary_stamp(job.out_dir)  # the folder's old summary, if any: never reported as this run's
    processes = 1 if launch.under_torchrun() else launch.processes_for(typed.trainer, device, parallel_jobs)
    if processes > 1:  # this process waits; the training processes run the job
        logging_config = OmegaConf.to_container(hydra_cfg.job_logging, resolve=True)
        threads = typed.trainer.num_threads or 1
        log.info(
            "starting %d training processes (%d thread(s) each; trainer.processes=%s)",
            processes,
            threads,
            typed.trainer.processes,
        )
        code = launch.spawn(run_job, (typed, job), processes, threads, logging_config)
    else:
        code = run_job(typed, job)
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


def sweep_job_failed(job: Job, code: int, is_search: bool) -> None:
    """A sweep job refused (``code`` 2) or failed (1) with its error line: the rest of a grid
    sweep goes on; in an Optuna search it is a failed trial, raised so that the sweeper counts it
    against ``hydra.sweeper.max_failure_rate`` (a result of None would count, but never stop it)."""
    from minitrans.core.hydra_sweep import TrialFailed

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
    """How this script was started, for the line that says how to resume."""
    world = int(os.environ.get("WORLD_SIZE", 1))  # set by torchrun (not yet by trainer.processes)
    launcher = f"torchrun --nproc_per_node={world}" if world > 1 else "python"
    return f"{launcher} {sys.argv[0]}"


_run_dir_lock = None  # a named run (or sweep) folder's lock, held from before Hydra writes into it


def hold_run_dir_argument(args: list[str]) -> str | None:
    """A ``hydra.run.dir=`` (``hydra.sweep.dir=`` for ``-m``) on the command line that is empty,
    a file, not writable or in use by another training process is refused; otherwise this
    process locks it before Hydra writes anything into it (``.hydra/``, ``train.log``,
    ``multirun.yaml``), so a second run started at the same moment is refused by a folder still
    as the first one wrote it. The training processes a run starts inherit the lock; a folder
    Hydra must resolve (``${...}``) is locked by the trainer (a sweep's: each job's, only)."""
    global _run_dir_lock
    from minitrans.core.run_folder import RunLock, check_run_dir, hand_down

    is_sweep = any(flag in args for flag in ("-m", "--multirun"))
    key = "hydra.sweep.dir" if is_sweep else "hydra.run.dir"
    given = [arg.partition("=")[2] for arg in args if arg.startswith(f"{key}=")]
    if not given:
        return None
    try:
        check_run_dir(given[-1], key)
        if "${" not in given[-1]:
            _run_dir_lock = RunLock(given[-1], key).acquire()
            if not is_sweep:
                hand_down(given[-1])
    except ConfigError as error:
        return str(error)
    return None


def torchrun_overrides(args: list[str]) -> list[str]:
    """Under torchrun, every rank must write to the same run folder: rank 0 picks the time
    stamp that Hydra's default folder name (conf/hydra/default.yaml) would use, and only rank 0
    writes Hydra's files and logs."""
    from minitrans.core.run_folder import claim_new_folder
    from minitrans.training import distributed

    info = distributed.init()
    extra = []
    if not any(arg.startswith(("hydra.run.dir=", "hydra.sweep.dir=")) for arg in args):
        stamp = time.strftime("%Y-%m-%d/%H-%M-%S")
        run_dir = distributed.broadcast_object(claim_new_folder(f"outputs/{stamp}") if info.is_main else None, info)
        extra += [f"hydra.run.dir={run_dir}", f"hydra.sweep.dir=multirun/{stamp}"]
    if not info.is_main:
        extra += ["hydra.output_subdir=null", "hydra/job_logging=disabled", "hydra/hydra_logging=disabled"]
    return extra


if __name__ == "__main__":
    problem = check_command_line(sys.argv[1:], CONFIG_DIR)
    if problem is None and "WORLD_SIZE" in os.environ:  # torchrun's, or one leaked from another job
        from minitrans.training.distributed import torchrun_env_problem

        problem = torchrun_env_problem()
    if problem is None and int(os.environ.get("RANK", 0)) == 0:
        problem = hold_run_dir_argument(sys.argv[1:])
    if problem is not None:
        fail(problem, 2)
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        sys.argv += torchrun_overrides(sys.argv[1:])
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C before training started, or a second one during it
        fail("interrupted", 130)
    finally:
        if "minitrans.training.distributed" in sys.modules:
            sys.modules["minitrans.training.distributed"].shutdown()

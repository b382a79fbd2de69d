"""Train a model: ``python scripts/train.py [key=value ...]``; ``-m`` sweeps (Hydra multirun).

On a CPU it trains in one single-threaded process per physical core (``trainer.processes=auto``;
``trainer.processes=1`` for one): this process starts them and waits
(:mod:`minitrans.training.launch`). Several machines: ``torchrun --nproc_per_node=N
scripts/train.py [key=value ...]``; every rank runs this script, and they share one run folder
(``hydra.run.dir``, chosen by rank 0 unless given).

Thin by design: it turns the Hydra config into typed dataclasses and calls the library
(:mod:`minitrans.cli.train`: the run folder claimed before Hydra starts, the job inside it). Any
problem it can name (a bad key or value, missing data, an unreadable checkpoint, a diverged
run) ends the process with one ``error: ...`` line on stderr and a non-zero exit code: 2 for
configuration, 1 for the rest; a run stopped by SIGINT/SIGTERM exits with 128 + the signal.
"""

from __future__ import annotations

import sys
from pathlib import Path

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

if __name__ == "__main__" and {"--help", "-h"} & set(sys.argv[1:]):  # before Hydra loads: instant
    from minitrans.core.config_help import train_help

    print(train_help(CONFIG_DIR))
    raise SystemExit(0)

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from minitrans.cli.train import (  # noqa: E402
    Job,
    claim_run_dir,
    fail,
    refused,
    resume_program,
    shutdown_distributed,
    torchrun_overrides,
    train_job,
)
from minitrans.core.checks import ConfigError  # noqa: E402
from minitrans.core.hydra_config import check_command_line, register_configs, to_dataclass  # noqa: E402

register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def main(cfg: DictConfig) -> float | None:
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
    except ConfigError as error:
        return refused(job, error, is_search)
    parallel_jobs = job.is_sweep and "joblib" in str(hydra_cfg.launcher.get("_target_", ""))
    logging_config = OmegaConf.to_container(hydra_cfg.job_logging, resolve=True)  # the training processes'
    return train_job(typed, job, is_search, parallel_jobs, logging_config)


if __name__ == "__main__":
    problem = check_command_line(sys.argv[1:], CONFIG_DIR) or claim_run_dir(sys.argv[1:])
    if problem is not None:
        fail(problem, 2)
    sys.argv += torchrun_overrides(sys.argv[1:])  # under torchrun: one run folder for every rank
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C before training started, or a second one during it
        fail("interrupted", 130)
    finally:
        shutdown_distributed()

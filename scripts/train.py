"""Train a model: ``python scripts/train.py [key=value ...]``; ``-m`` sweeps (Hydra multirun).

Several processes: ``torchrun --nproc_per_node=N scripts/train.py [key=value ...]``. Every rank
runs this script; they share one run folder (``hydra.run.dir``, chosen by rank 0 unless given).

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

log = logging.getLogger("minitrans")
register_configs()


def fail(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="train")
def main(cfg: DictConfig) -> float | None:
    # imported here so that a mistyped command line is refused in a second, not after torch loads
    import datasets

    from minitrans.core.checkpoint import CheckpointError
    from minitrans.runs.summary import summary_line
    from minitrans.training.state import TrainingError, TrainingStopped
    from minitrans.training.trainer import train

    datasets.disable_progress_bars()  # tqdm shows training progress; corpus preparation stays quiet
    hydra_cfg = HydraConfig.get()
    is_sweep = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        summary = train(to_dataclass(cfg), hydra_cfg.runtime.output_dir)
    except ConfigError as error:
        if is_sweep:  # refuse this combination, keep the rest of the sweep going
            log.error("skipping job %s: %s", os.path.basename(hydra_cfg.runtime.output_dir), error)
            return None
        fail(str(error), 2)
    except (CheckpointError, TrainingError) as error:
        fail(str(error), 1)
    except OSError as error:  # a full disk or a folder that went away while writing logs or results
        fail(f"{error.filename or 'writing the run'}: {error.strerror or error}", 1)
    except TrainingStopped as stopped:
        if int(os.environ.get("RANK", 0)) == 0:  # every rank stopped at the same step
            print(f"{stopped}\n{stopped.resume_line(hydra_cfg.overrides.task, resume_program())}", file=sys.stderr)
        raise SystemExit(stopped.exit_code) from None
    if summary is None:  # a rank other than 0 under torchrun
        return None
    print(summary_line(summary, hydra_cfg.runtime.output_dir))
    return summary.valid["bleu"]


def resume_program() -> str:
    """How this script was started, for the line that says how to resume."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    launcher = f"torchrun --nproc_per_node={world}" if world > 1 else "python"
    return f"{launcher} {sys.argv[0]}"


def check_run_dir_argument(args: list[str]) -> str | None:
    """A ``hydra.run.dir=`` on the command line that is empty, a file, not writable or in use by
    another training process, refused before Hydra writes anything into it."""
    from minitrans.core.run_folder import check_run_dir

    given = [arg.partition("=")[2] for arg in args if arg.startswith("hydra.run.dir=")]
    if not given or any(flag in args for flag in ("-m", "--multirun")):
        return None
    try:
        check_run_dir(given[-1])
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
    if problem is None and int(os.environ.get("RANK", 0)) == 0:
        problem = check_run_dir_argument(sys.argv[1:])
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

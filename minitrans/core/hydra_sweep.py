"""The Hydra side of sweeps: a sweep job is named after what the sweep varies.

Hydra names a job after all of its command-line overrides (``hydra.job.override_dirname``), so
a sweep of one key over a command line of twenty fixed ones gives 250-character folder names
that the filesystem cuts to a hash, and those names fill ``compare.py`` and TensorBoard. A job
here is named after the overrides of the keys the sweep varies (``3_model.num_heads=8``):

- the keys of ``hydra.sweeper.params`` whose value is a sweep (``1,2,4``, ``range(…)``,
  Optuna's ``choice(…)``, ``interval(…)``, ``tag(log, interval(…))``), the way an experiment
  or ``hydra/sweeper=optuna`` states its grid or search space;
- the keys swept on the command line (``model.num_heads=1,2,4``), read from the sweep's
  ``multirun.yaml``, which Hydra's basic sweeper writes into the sweep folder before it launches
  a job. The sweep folder is the one thing every launcher's worker shares with the process
  that started the sweep (joblib's processes, submitit's jobs on other machines), so a worker
  that never saw the command line names its job the same way.

Nothing known to vary (a ``-m`` run of single values): Hydra's own ``override_dirname``.
Hydra carries the resolvers registered in the launching process to its launchers' workers
(``Singleton.get_state`` holds them), so ``${swept_overrides:}`` resolves there too.

A job that is refused or fails (an impossible combination, a run that diverges) is skipped in a
grid sweep, which goes on; in an Optuna search it is a failed trial (:class:`TrialFailed`).
An Optuna search (``hydra/sweeper=optuna``) ends with its best trial as one command line that
trains it again: :class:`BestTrialCommand`, a Hydra callback, prints it at the end of the sweep,
and ``compare.py`` prints it for the sweep folder.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import CompactHydraException
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

MULTIRUN_FILE = "multirun.yaml"  # the sweep's own configuration, as Hydra's basic sweeper saves it


def _parse(overrides: list[str]) -> list:
    return OverridesParser.create().parse_overrides(overrides=[str(o) for o in overrides])


def swept_keys(sweeper_params: Any = None, sweep_overrides: Any = None) -> set[str]:
    """The keys a sweep varies: those of ``sweeper_params`` (``hydra.sweeper.params``) and of
    the command-line overrides ``sweep_overrides`` (the sweep's ``hydra.overrides.task``)
    whose value is a sweep rather than one value."""
    lines = [f"{key}={value}" for key, value in dict(sweeper_params or {}).items()]
    lines += [str(line) for line in sweep_overrides or []]
    return {override.key_or_group for override in _parse(lines) if override.is_sweep_override()}


def sweep_command_line(sweep_dir: str | Path) -> list[str] | None:
    """The command-line overrides the sweep in ``sweep_dir`` was started with (sweeps in their
    sweep syntax), or None when the folder holds no readable ``multirun.yaml``."""
    path = Path(sweep_dir) / MULTIRUN_FILE
    if not path.is_file():
        return None

    try:
        saved = OmegaConf.load(path)
        return [str(line) for line in OmegaConf.select(saved, "hydra.overrides.task", default=None) or []]
    except (OSError, ValueError):  # a half-written or damaged file: as if there were none
        return None


def swept_overrides(hydra: Any) -> str:
    """This job's overrides of the keys its sweep varies, written as Hydra writes
    ``override_dirname`` (sorted, with its ``kv_sep`` and ``item_sep``); Hydra's own
    ``override_dirname`` when nothing is known to vary. ``hydra`` is the job's ``hydra`` node."""
    select = lambda key, default=None: OmegaConf.select(hydra, key, default=default, throw_on_missing=False)
    fallback = str(select("job.override_dirname", ""))
    job_overrides = select("overrides.task")
    if job_overrides is None:
        return fallback
    sweep_dir = select("sweep.dir")
    keys = swept_keys(select("sweeper.params"), sweep_command_line(sweep_dir) if sweep_dir else None)
    lines = sorted(o.input_line for o in _parse(list(job_overrides)) if o.key_or_group in keys)
    if not lines:
        return fallback
    kv_sep = str(select("job.config.override_dirname.kv_sep", "="))
    item_sep = str(select("job.config.override_dirname.item_sep", ","))
    return re.sub("=", kv_sep, item_sep.join(lines))


OPTUNA_RESULTS = "optimization_results.yaml"  # what Hydra's Optuna sweeper writes into the sweep folder


def job_overrides(folder: str | Path) -> list[str] | None:
    """The command-line overrides a run was started with (Hydra's ``.hydra/overrides.yaml``)."""
    try:
        overrides = yaml.safe_load((Path(folder) / ".hydra" / "overrides.yaml").read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return [str(line) for line in overrides] if isinstance(overrides, list) else None


def train_command(overrides: list[str]) -> str:
    """One ``python scripts/train.py …`` line, each override quoted for the shell where it must be."""
    return " ".join(["python", "scripts/train.py", *map(shlex.quote, overrides)])


def best_trial_folder(sweep_dir: str | Path) -> Path | None:
    """The job folder of the best trial of the Optuna search in ``sweep_dir``: the one whose
    overrides hold the ``best_params`` of its ``optimization_results.yaml``; None without one."""
    sweep_dir = Path(sweep_dir)
    try:
        results = yaml.safe_load((sweep_dir / OPTUNA_RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    best = {f"{key}={value}" for key, value in ((results or {}).get("best_params") or {}).items()}
    jobs = sorted(p.parent.parent for p in sweep_dir.glob("*/.hydra/overrides.yaml"))
    return next((job for job in jobs if best and best <= set(job_overrides(job) or ())), None)


class TrialFailed(CompactHydraException):
    """A search trial refused or failed, its error line written: raised from the job, so that
    Hydra's Optuna sweeper counts a failed trial (``hydra.sweeper.max_failure_rate``) instead of
    reading a result, and, when too many fail, Hydra prints this one line, not a traceback."""


class BestTrialCommand(Callback):
    """A Hydra callback (``hydra.callbacks``) that prints, when a sweep ends, the command line of
    its best trial, if the sweep was an Optuna search."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = OmegaConf.select(config, "hydra.sweep.dir")
        job = best_trial_folder(sweep_dir) if sweep_dir else None
        if job is not None and (overrides := job_overrides(job)) is not None:
            print(f"best trial: {job.name}; to train it again:\n  {train_command(overrides)}", flush=True)


__all__ = [
    "MULTIRUN_FILE",
    "OPTUNA_RESULTS",
    "BestTrialCommand",
    "TrialFailed",
    "best_trial_folder",
    "job_overrides",
    "sweep_command_line",
    "swept_keys",
    "swept_overrides",
    "train_command",
]

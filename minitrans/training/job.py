"""One training job as ``scripts/train.py`` runs it: train (or resume) in this process, and
turn every problem the library names into one ``error:`` line and an exit code (2 for
configuration, 1 for the rest, 128 + N for a run stopped by signal N).

It lives here rather than in the script because every launcher must be able to import it by
name: :func:`minitrans.training.launch.spawn` pickles :func:`run_job` and its :class:`Job` for
the training processes it starts, and a job that Hydra's submitit launcher runs (a cluster's,
or its local executor's) runs under submitit's own ``__main__``, where nothing defined in the
script could be found again.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

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
    from minitrans.core.checks import ConfigError
    from minitrans.training.state import TrainingError, TrainingStopped
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
    import errno

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


__all__ = ["Job", "fail", "os_error_line", "report", "run_job"]

"""Learning-rate schedules: the factor the peak rate ``trainer.lr`` is multiplied by at each step.

Every schedule starts with ``warmup_steps`` of linear warm-up from zero to the peak; they differ
in what follows (``trainer.schedule``):

- ``inverse_sqrt`` (Vaswani et al., 2017): decay with 1/sqrt(step), never reaching zero. It needs
  no idea of how long the run is, so it suits runs bounded by ``trainer.max_minutes``.
- ``linear``: straight down to ``min_lr_ratio`` at ``max_steps``.
- ``cosine``: half a cosine down to ``min_lr_ratio`` at ``max_steps``.

The two decays to a floor spend the run's last steps at a small rate, which settles the weights
(the effect checkpoint averaging imitates) and is worth most in short runs; they end at
``trainer.max_steps``, so a run stopped earlier by ``max_minutes`` never reaches the small
rates. ``min_lr_ratio`` is the floor of all three, as a fraction of the peak.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import torch

from minitrans.core.config import SCHEDULES, TrainerConfig

log = logging.getLogger(__name__)


def inverse_sqrt_schedule(warmup_steps: int, min_ratio: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to the peak, then decay with 1/sqrt(step) (Vaswani et al., 2017)."""

    def factor(step: int) -> float:
        step = max(step, 1)
        if step < warmup_steps:
            return step / warmup_steps
        return max(math.sqrt(max(warmup_steps, 1) / step), min_ratio)

    return factor


def decay_schedule(kind: str, warmup_steps: int, max_steps: int, min_ratio: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to the peak, then ``linear`` or ``cosine`` decay to ``min_ratio`` at ``max_steps``."""
    if kind not in ("linear", "cosine"):
        raise ValueError(f"decay must be linear or cosine, got {kind!r}")

    def factor(step: int) -> float:
        step = max(step, 1)
        if step < warmup_steps:
            return step / warmup_steps
        span = max_steps - warmup_steps
        done = min((step - warmup_steps) / span, 1.0) if span > 0 else 1.0  # fraction of the decay behind us
        left = 1.0 - done if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * done))
        return min_ratio + (1.0 - min_ratio) * left

    return factor


def lr_factor(schedule: str, warmup_steps: int, max_steps: int, min_ratio: float = 0.0) -> Callable[[int], float]:
    """``trainer.schedule`` as a function of the step (for ``torch.optim.lr_scheduler.LambdaLR``)."""
    if schedule == "inverse_sqrt":
        return inverse_sqrt_schedule(warmup_steps, min_ratio)
    if schedule in ("linear", "cosine"):
        return decay_schedule(schedule, warmup_steps, max_steps, min_ratio)
    raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")


def make_scheduler(
    optimizer: torch.optim.Optimizer, tcfg: TrainerConfig, warn: bool = True
) -> torch.optim.lr_scheduler.LambdaLR:
    """The run's learning-rate schedule; with ``warn``, a warning when a decay to ``max_steps``
    meets a ``max_minutes`` budget that may end the run first."""
    if warn and tcfg.schedule != "inverse_sqrt" and tcfg.max_minutes is not None:
        log.warning(
            "trainer.schedule=%s decays to its floor at trainer.max_steps=%d; if trainer.max_minutes=%g ends "
            "the run first, the rate never gets there (trainer.schedule=inverse_sqrt needs no end point)",
            tcfg.schedule,
            tcfg.max_steps,
            tcfg.max_minutes,
        )
    factor = lr_factor(tcfg.schedule, tcfg.warmup_steps, tcfg.max_steps, tcfg.min_lr_ratio)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

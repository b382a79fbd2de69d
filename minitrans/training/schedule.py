"""Learning-rate schedules: the factor the peak rate ``trainer.lr`` is multiplied by at each step.

Every schedule starts with ``warmup_steps`` of linear warm-up from zero to the peak; they differ
in what follows (``trainer.schedule``):

- ``inverse_sqrt`` (Vaswani et al., 2017): decay with 1/sqrt(step), never reaching zero. It needs
  no idea of how long the run is.
- ``linear``: straight down to ``min_lr_ratio`` when the run ends.
- ``cosine``: half a cosine down to ``min_lr_ratio`` when the run ends.

The two decays to a floor spend the run's last steps at a small rate, which settles the weights
(the effect checkpoint averaging imitates) and is worth most in short runs. ``min_lr_ratio`` is
the floor of all three, as a fraction of the peak.

When the run ends: with a step budget alone, at ``trainer.max_steps`` (:func:`lr_factor`, a
function of the step). With a time budget, ``trainer.max_minutes``, the decay is driven by the
training seconds too (:class:`TimeBudgetLR`): its progress after warm-up is the larger of the
fraction of the steps and the fraction of the seconds spent since warm-up ended, so the rate
reaches its floor when the run ends, at whichever budget comes first. The seconds are
``TrainState.train_seconds`` (saved in the checkpoint, agreed by all ranks), so a resumed run
continues the decay where it stopped. The price: how far the decay has gone at a step depends on
how fast the machine was, so a time-driven run is not bitwise repeatable, not even on one
machine; a step-driven run is.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from minitrans.core.config import SCHEDULES, TrainerConfig


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


def time_budget_factor(
    kind: str, warmup_steps: int, max_steps: int, budget_seconds: float, min_ratio: float = 0.0
) -> Callable[[int, float, float], float]:
    """Linear warm-up over ``warmup_steps``, then ``linear`` or ``cosine`` decay to ``min_ratio``
    at ``max_steps`` or after ``budget_seconds`` of training, whichever comes first:
    ``factor(step, seconds, warmup_seconds)``, where ``warmup_seconds`` is the training time at
    the end of warm-up."""
    if kind not in ("linear", "cosine"):
        raise ValueError(f"decay must be linear or cosine, got {kind!r}")

    def factor(step: int, seconds: float, warmup_seconds: float) -> float:
        step = max(step, 1)
        if step < warmup_steps:
            return step / warmup_steps
        span, time_span = max_steps - warmup_steps, budget_seconds - warmup_seconds
        by_steps = (step - warmup_steps) / span if span > 0 else 1.0
        by_time = (seconds - warmup_seconds) / time_span if time_span > 0 else 1.0
        done = min(max(by_steps, by_time, 0.0), 1.0)  # fraction of the decay behind us
        left = 1.0 - done if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * done))
        return min_ratio + (1.0 - min_ratio) * left

    return factor


class TimeBudgetLR(torch.optim.lr_scheduler.LRScheduler):
    """A linear or cosine decay that ends at ``trainer.max_minutes`` (or ``max_steps``, if that
    comes first), reading the training seconds from ``elapsed``. ``step()`` it after each update,
    once ``elapsed()`` counts that update's time. Its state (``state_dict``) is the step, the last
    rates and the seconds warm-up ended at; the clock itself is the trainer's to restore."""

    def __init__(self, optimizer: torch.optim.Optimizer, tcfg: TrainerConfig, elapsed: Callable[[], float]) -> None:
        self.factor = time_budget_factor(
            tcfg.schedule, tcfg.warmup_steps, tcfg.max_steps, tcfg.max_minutes * 60, tcfg.min_lr_ratio
        )
        self.elapsed, self.warmup_steps = elapsed, tcfg.warmup_steps
        self.warmup_seconds: float | None = None  # set when warm-up ends
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if max(step, 1) < self.warmup_steps:  # the clock plays no part yet
            return [base_lr * self.factor(step, 0.0, 0.0) for base_lr in self.base_lrs]
        seconds = self.elapsed()
        if self.warmup_seconds is None:
            self.warmup_seconds = seconds
        return [base_lr * self.factor(step, seconds, self.warmup_seconds) for base_lr in self.base_lrs]

    def state_dict(self) -> dict:
        # lr_lambdas: what LambdaLR expects, so a run resumed without max_minutes loads it too
        kept = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "factor", "elapsed")}
        return kept | {"lr_lambdas": [None]}

    def load_state_dict(self, state_dict: dict) -> None:
        # a LambdaLR's state (a run resumed with max_minutes added) has no warmup_seconds:
        # the time-driven decay then starts from the time of the resume
        self.__dict__.update({key: value for key, value in state_dict.items() if key != "lr_lambdas"})


def make_scheduler(
    optimizer: torch.optim.Optimizer, tcfg: TrainerConfig, elapsed: Callable[[], float] | None = None
) -> torch.optim.lr_scheduler.LRScheduler:
    """The run's learning-rate schedule: a linear or cosine decay with ``trainer.max_minutes``
    set is a :class:`TimeBudgetLR` reading the training seconds from ``elapsed``; anything else
    is a ``LambdaLR`` of the step alone (step-driven runs are bitwise repeatable)."""
    if tcfg.schedule != "inverse_sqrt" and tcfg.max_minutes is not None:
        if elapsed is None:
            raise ValueError("a decay to trainer.max_minutes needs the training clock (elapsed)")
        return TimeBudgetLR(optimizer, tcfg, elapsed)
    factor = lr_factor(tcfg.schedule, tcfg.warmup_steps, tcfg.max_steps, tcfg.min_lr_ratio)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

"""The learning-rate schedules (``trainer.schedule``), each against its formula written another
way, and the rate a run really used, read back from its TensorBoard events."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.core.checks import ConfigError
from minitrans.training.schedule import SCHEDULES, decay_schedule, lr_factor
from minitrans.training.trainer import train


def linear_oracle(step: int, warmup: int, total: int, floor: float) -> float:
    """Piecewise-linear interpolation through (0, 0), (warmup, 1), (total, floor), flat after."""
    return float(np.interp(step, [0, warmup, total], [0.0, 1.0, floor]))


@pytest.mark.parametrize("warmup,total,floor", [(10, 110, 0.0), (3, 50, 0.2), (0, 40, 0.0)])
def test_linear_decay_is_the_straight_line_to_the_floor(warmup, total, floor):
    factor = lr_factor("linear", warmup, total, floor)
    for step in range(1, total + 20):
        expected = linear_oracle(step, warmup, total, floor) if step <= total else floor
        assert factor(step) == pytest.approx(expected, abs=1e-12), step


@pytest.mark.parametrize("warmup,total,floor", [(10, 110, 0.0), (4, 64, 0.1)])
def test_cosine_decay_is_half_a_cosine_between_peak_and_floor(warmup, total, floor):
    factor = lr_factor("cosine", warmup, total, floor)
    assert factor(warmup) == pytest.approx(1.0)
    assert factor(total) == pytest.approx(floor, abs=1e-12) and factor(total + 100) == pytest.approx(floor, abs=1e-12)
    middle = warmup + (total - warmup) // 2
    assert factor(middle) == pytest.approx((1 + floor) / 2)  # the cosine's zero crossing
    span = total - warmup
    for k in range(1, span):  # symmetric about the middle: f(a) + f(b) = 1 + floor when a + b = warmup + total
        assert factor(warmup + k) + factor(total - k) == pytest.approx(1 + floor), k
    values = [factor(step) for step in range(warmup, total + 1)]
    assert all(a > b for a, b in zip(values, values[1:]))  # strictly falling


def test_every_schedule_warms_up_linearly_and_peaks_at_one():
    for name in SCHEDULES:
        factor = lr_factor(name, 8, 100)
        assert [factor(step) for step in range(1, 9)] == pytest.approx([step / 8 for step in range(1, 9)]), name
        assert max(factor(step) for step in range(1, 200)) == pytest.approx(1.0), name


def test_unknown_schedules_are_refused(tiny_config):
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_factor("step", 1, 10)
    with pytest.raises(ValueError, match="linear or cosine"):
        decay_schedule("inverse_sqrt", 1, 10)
    with pytest.raises(ConfigError, match="trainer.schedule: must be one of inverse_sqrt, linear, cosine"):
        tiny_config("trainer.schedule=linaer")


def test_a_run_trains_at_the_linear_rate(tmp_path, tiny_config):
    cfg = tiny_config(
        "trainer.max_steps=8",
        "trainer.eval_every=8",
        "trainer.log_every=1",
        "trainer.warmup_steps=2",
        "trainer.schedule=linear",
        "trainer.lr=0.004",
        "data.test_splits=[test]",
    )
    threads = torch.get_num_threads()
    try:
        train(cfg, tmp_path / "run")
    finally:
        torch.set_num_threads(threads)
    events = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0})
    events.Reload()
    logged = {event.step: event.value for event in events.Scalars("train/lr")}
    assert sorted(logged) == list(range(1, 9))
    for step, value in logged.items():  # the rate after `step` updates, as LambdaLR reports it
        assert math.isclose(value, 0.004 * linear_oracle(step, 2, 8, 0.0), rel_tol=1e-6, abs_tol=1e-12), step
    assert logged[8] == 0.0

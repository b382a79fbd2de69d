"""The learning-rate schedules (``trainer.schedule``), each against its formula written another
way, and the rate a run really used, read back from its TensorBoard events; with
``trainer.max_minutes``, the decay driven by a fake clock's training seconds, across a resume."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import assert_bitwise_equal, last_weights
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.core.checkpoint import load_checkpoint
from minitrans.core.checks import ConfigError
from minitrans.runs.summary import RunSummary, warmup_note
from minitrans.training.schedule import SCHEDULES, TimeBudgetLR, decay_schedule, lr_factor, time_budget_factor
from minitrans.training.trainer import Trainer, train


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


def logged_rates(run) -> dict[int, float]:
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return {event.step: event.value for event in events.Scalars("train/lr")}


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


# --- a time budget: trainer.max_minutes --------------------------------------------------------

BUDGET = 0.75  # seconds: trainer.max_minutes=0.0125
TICK = 1 / 16  # seconds of training per step on the fake clock (exact in binary, as is BUDGET)


def time_oracle(seconds: float, warmup_seconds: float, floor: float) -> float:
    """The straight line in seconds from the peak at the end of warm-up to the floor at the budget."""
    return float(np.interp(seconds, [warmup_seconds, BUDGET], [1.0, floor]))


@pytest.mark.parametrize("kind", ["linear", "cosine"])
def test_a_time_budget_decay_reaches_its_floor_exactly_when_the_budget_ends(kind):
    factor = time_budget_factor(kind, warmup_steps=4, max_steps=10**6, budget_seconds=BUDGET, min_ratio=0.1)
    warmup_seconds = 4 * TICK
    assert [factor(step, step * TICK, 0.0) for step in range(1, 4)] == pytest.approx([0.25, 0.5, 0.75])  # by steps
    assert factor(4, warmup_seconds, warmup_seconds) == 1.0  # the peak, when warm-up ends
    before = [factor(step, step * TICK, warmup_seconds) for step in range(4, 12)]
    assert all(value > 0.1 for value in before) and all(a > b for a, b in zip(before, before[1:]))
    assert factor(12, BUDGET, warmup_seconds) == 0.1  # exactly the floor, at the budget
    assert factor(13, BUDGET + TICK, warmup_seconds) == 0.1  # and no lower after it
    if kind == "linear":
        for step in range(4, 13):
            assert factor(step, step * TICK, warmup_seconds) == pytest.approx(
                time_oracle(step * TICK, warmup_seconds, 0.1), abs=1e-12
            )
    else:  # half-way through the budget's seconds, half-way between peak and floor
        middle = (warmup_seconds + BUDGET) / 2
        assert factor(100, middle, warmup_seconds) == pytest.approx(0.55)


def test_max_steps_ends_a_time_budget_decay_when_it_comes_first():
    """The decay follows whichever budget is further spent, so the floor comes at max_steps when
    the time budget would have lasted longer."""
    factor = time_budget_factor("linear", warmup_steps=2, max_steps=12, budget_seconds=100.0, min_ratio=0.0)
    for step in range(2, 13):  # a second per step: the steps are the larger fraction
        assert factor(step, float(step), 2.0) == pytest.approx(linear_oracle(step, 2, 12, 0.0), abs=1e-12)
    assert factor(12, 12.0, 2.0) == 0.0
    assert factor(3, 51.0, 2.0) == pytest.approx(0.5, abs=1e-12)  # and the seconds when they are further spent


def test_the_time_budget_scheduler_reads_its_clock_after_warm_up_and_saves_no_clock(tiny_config):
    cfg = tiny_config(
        "trainer.schedule=linear", "trainer.max_minutes=0.0125", "trainer.warmup_steps=2", "trainer.min_lr_ratio=0.1"
    )
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    seconds = [0.0]
    scheduler = TimeBudgetLR(optimizer, cfg.trainer, lambda: seconds[0])
    rates = []
    for step in range(1, 13):
        seconds[0] = step * TICK
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    assert rates[0] == 0.25 and rates[1] == 0.5  # warm-up, by steps
    assert rates[-1] == pytest.approx(0.05, abs=1e-15) and min(rates[:-1]) > 0.05
    state = scheduler.state_dict()
    assert state["warmup_seconds"] == 2 * TICK
    assert not any(callable(value) for value in state.values())  # the checkpoint holds no clock
    again = TimeBudgetLR(optimizer, cfg.trainer, lambda: seconds[0])
    again.load_state_dict(state)
    assert again.last_epoch == 12 and again.warmup_seconds == 2 * TICK


class FakeClock:
    """A clock that moves TICK per reading: the trainer reads it at the start of a step and, for
    the training seconds, right after, so each step takes TICK."""

    def __init__(self) -> None:
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return self.readings * TICK


class Crash(Exception):
    pass


BUDGET_RUN = [
    "trainer.max_minutes=0.0125",
    "trainer.max_steps=1000",
    "trainer.schedule=linear",
    "trainer.warmup_steps=2",
    "trainer.min_lr_ratio=0.1",
    "trainer.lr=0.004",
    "trainer.log_every=1",
    "trainer.eval_every=1000",
    "trainer.eval_sentences=2",
    "data.test_splits=[test]",
]


def expected_rate(step: int) -> float:
    return 0.004 * (step / 2 if step < 2 else time_oracle(step * TICK, 2 * TICK, 0.1))


def run_on_the_fake_clock(trainer: Trainer):
    threads = torch.get_num_threads()
    try:
        return trainer.fit()
    finally:
        torch.set_num_threads(threads)


def test_a_time_budget_run_ends_at_the_budget_with_the_rate_at_its_floor(tmp_path, tiny_config):
    run = tmp_path / "run"
    summary = run_on_the_fake_clock(Trainer(tiny_config(*BUDGET_RUN), run, clock=FakeClock()))
    assert summary.steps == 12  # 12 ticks of 1/16 s
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["train_seconds"] == BUDGET
    logged = logged_rates(run)
    assert sorted(logged) == list(range(1, 13))
    for step, value in logged.items():
        assert math.isclose(value, expected_rate(step), rel_tol=1e-6), step
    assert logged[12] == pytest.approx(0.004 * 0.1, rel=1e-6)  # the floor, when the budget ends


def test_a_spent_time_budget_trains_no_further_when_the_run_is_started_again(tmp_path, tiny_config):
    """Running a finished time-budget run's command again into its folder (a fresh clock) is what
    a finished step-budget run does: no step, the same weights, the same figures in summary.json."""
    run = tmp_path / "run"
    first = run_on_the_fake_clock(Trainer(tiny_config(*BUDGET_RUN), run, clock=FakeClock()))
    weights = last_weights(run)
    again = run_on_the_fake_clock(Trainer(tiny_config(*BUDGET_RUN), run, clock=FakeClock()))
    assert again.steps == first.steps == 12
    assert_bitwise_equal(last_weights(run), weights)
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["train_seconds"] == BUDGET
    written = RunSummary.read(run)
    assert (written.steps, written.train_seconds) == (12, first.train_seconds)
    assert (written.valid, written.test) == (first.valid, first.test)


def test_a_resumed_time_budget_run_continues_the_decay_from_its_saved_seconds(tmp_path, tiny_config):
    """Crash after step 5 (last.pt written at every step), resume on a clock restarted from zero:
    the decay goes on from the 5 ticks in the checkpoint, not from the new clock's zero."""
    run = tmp_path / "run"
    first = Trainer(tiny_config(*BUDGET_RUN, "trainer.checkpoint_every=1"), run, clock=FakeClock())

    def crash(state) -> None:
        if state.step == 5:
            raise Crash

    first.step_hooks.append(crash)
    with pytest.raises(Crash):
        run_on_the_fake_clock(first)
    first_events = set(run.glob("events.out.tfevents.*"))
    saved = load_checkpoint(run / "checkpoints" / "last.pt")
    assert saved["state"]["step"] == 5 and saved["state"]["train_seconds"] == 5 * TICK
    assert saved["scheduler"]["warmup_seconds"] == 2 * TICK

    resumed = Trainer(tiny_config(*BUDGET_RUN), run, clock=FakeClock())
    assert resumed.state.train_seconds == 5 * TICK
    summary = run_on_the_fake_clock(resumed)
    assert summary.steps == 12
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["train_seconds"] == BUDGET
    # each process's event file read alone: two writers of one process may get names that sort
    # out of order (their counter goes 9, 10), and the folder's reader would then purge steps
    (second_events,) = set(run.glob("events.out.tfevents.*")) - first_events
    logged = {step: rate for path in [*first_events, second_events] for step, rate in logged_rates(path).items()}
    assert sorted(logged) == list(range(1, 13))
    for step, value in logged.items():  # the same rates as the run that never stopped
        assert math.isclose(value, expected_rate(step), rel_tol=1e-6), step
    assert logged[12] == pytest.approx(0.004 * 0.1, rel=1e-6)


def test_a_step_budget_keeps_the_step_schedule(tiny_config):
    """Without max_minutes the schedule is a LambdaLR of the step alone, as it always was."""
    from minitrans.training.schedule import make_scheduler

    cfg = tiny_config("trainer.schedule=cosine", "trainer.max_steps=30", "trainer.min_lr_ratio=0.1")
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = make_scheduler(optimizer, cfg.trainer)
    assert type(scheduler) is torch.optim.lr_scheduler.LambdaLR
    factor = lr_factor("cosine", cfg.trainer.warmup_steps, 30, 0.1)
    for step in range(1, 40):
        optimizer.step()
        scheduler.step()
        assert scheduler.get_last_lr()[0] == factor(step), step


def ended_at(steps: int, max_minutes: float | None, warmup_steps: int = 300, max_steps: int = 1000) -> RunSummary:
    trainer = {"max_minutes": max_minutes, "warmup_steps": warmup_steps, "max_steps": max_steps}
    return RunSummary(steps=steps, config={"trainer": trainer})


def test_a_time_budget_that_ends_inside_the_warm_up_is_named():
    note = warmup_note(ended_at(123, 0.5))
    assert note is not None and "trainer.max_minutes=0.5" in note
    assert "after 123 of trainer.warmup_steps=300 steps" in note and "never reached its peak" in note
    assert warmup_note(ended_at(300, 0.5)) is None  # the peak was reached
    assert warmup_note(ended_at(123, None)) is None  # a step budget: the schedule was the one asked for
    assert warmup_note(ended_at(100, 0.5, max_steps=100)) is None  # the step budget ended it
    assert warmup_note(RunSummary(steps=None)) is None  # a partial summary


@pytest.mark.slow
def test_the_script_warns_once_when_the_time_budget_ends_in_warm_up(tmp_path, tiny_overrides, run_train):
    """It said nothing (issue 33, item 15)."""
    run = tmp_path / "run"
    done = run_train(
        *tiny_overrides,
        "trainer.max_minutes=0.002",
        "trainer.warmup_steps=100000",
        "trainer.max_steps=200000",
        f"hydra.run.dir={run}",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert output.count("ended inside the warm-up") == 1 and "of trainer.warmup_steps=100000 steps" in output
    assert (run / "train.log").read_text().count("ended inside the warm-up") == 1

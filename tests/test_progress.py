"""The training progress bar counts what ends the run (minutes for a time budget, steps for a
step budget), prints log lines above itself, and prints its final state once."""

from __future__ import annotations

import contextlib
import logging
import sys

import pytest

from minitrans.training.progress import TrainingProgress


@contextlib.contextmanager
def console_log():
    """A console handler on stderr, as Hydra sets one up on the root logger (made inside the
    test, where sys.stderr is pytest's capture)."""
    handler = logging.StreamHandler(sys.stderr)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield logging.getLogger("minitrans.training.trainer")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def run_bar(max_steps, max_minutes, steps, seconds_per_step, log=None, start=0):
    with TrainingProgress(max_steps, max_minutes, step=start, train_seconds=start * seconds_per_step) as bar:
        for step in range(start + 1, start + steps + 1):
            bar.update(step, step * seconds_per_step)
            bar.show(step, loss="1.234")
            if log is not None and step == steps // 2:
                log.info("step %d: valid loss 1.000", step)


def test_a_time_budget_counts_minutes_and_shows_the_step(capsys):
    run_bar(100000, 60, steps=10, seconds_per_step=9.0)
    err = capsys.readouterr().err
    final = err.rstrip("\n").split("\r")[-1]
    assert "1.5/60 min" in final and "step=10" in final
    assert "100000" not in err and "100,000" not in err  # not a step limit the time budget ends first


def test_a_step_budget_counts_steps_from_where_a_resumed_run_stands(capsys):
    run_bar(100, None, steps=10, seconds_per_step=1.0, start=50)
    final = capsys.readouterr().err.rstrip("\n").split("\r")[-1]
    assert "60/100" in final and "min" not in final


@pytest.mark.parametrize("max_minutes", [None, 60])
def test_log_lines_go_above_the_bar_and_the_final_bar_is_printed_once(capsys, max_minutes):
    with console_log() as log:
        run_bar(100, max_minutes, steps=10, seconds_per_step=1.0, log=log)
    err = capsys.readouterr().err
    before, _, after = err.partition("step 5: valid loss 1.000\n")
    assert after, err
    assert before.split("\r")[-1].split("\n")[-1].strip() == ""  # not glued to the end of the bar
    assert err.count("\n") == 2  # the log line and the final bar, once

"""The training progress bar counts what ends the run (minutes for a time budget, steps for a
step budget), prints log lines above itself, and prints its final state once."""

from __future__ import annotations

import contextlib
import io
import logging
import sys

import pytest

from minitrans.training.progress import TrainingProgress


@contextlib.contextmanager
def console_log(stream):
    """A console handler on ``stream``, as Hydra sets one up on the root logger."""
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield logging.getLogger("minitrans.training.trainer")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


class Terminal(io.StringIO):
    """A stream that says it is a terminal (tqdm draws its bar only on one)."""

    def isatty(self) -> bool:
        return True


def run_bar(max_steps, max_minutes, steps, seconds_per_step, log=None, start=0, file=None) -> str:
    """What the bar (and the log, when given) wrote to ``file``, a terminal unless given."""
    file = Terminal() if file is None else file
    with TrainingProgress(max_steps, max_minutes, step=start, train_seconds=start * seconds_per_step, file=file) as bar:
        for step in range(start + 1, start + steps + 1):
            bar.update(step, step * seconds_per_step)
            bar.show(step, loss="1.234")
            if log is not None and step == steps // 2:
                log.info("step %d: valid loss 1.000", step)
    return file.getvalue()


def test_a_time_budget_counts_minutes_and_shows_the_step():
    err = run_bar(100000, 60, steps=10, seconds_per_step=9.0)
    final = err.rstrip("\n").split("\r")[-1]
    assert "1.5/60 min" in final and "step=10" in final
    assert "100000" not in err and "100,000" not in err  # not a step limit the time budget ends first


def test_a_step_budget_counts_steps_from_where_a_resumed_run_stands():
    final = run_bar(100, None, steps=10, seconds_per_step=1.0, start=50).rstrip("\n").split("\r")[-1]
    assert "60/100" in final and "min" not in final


@pytest.mark.parametrize("max_minutes", [None, 60])
def test_log_lines_go_above_the_bar_and_the_final_bar_is_printed_once(max_minutes, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)  # Hydra's console handler writes to stderr
    with console_log(sys.stderr) as log:
        err = run_bar(100, max_minutes, steps=10, seconds_per_step=1.0, log=log, file=terminal)
    before, _, after = err.partition("step 5: valid loss 1.000\n")
    assert after, err
    assert before.split("\r")[-1].split("\n")[-1].strip() == ""  # not glued to the end of the bar
    assert err.count("\n") == 2  # the log line and the final bar, once


def test_a_redirected_stream_gets_no_bar_only_the_log_lines(monkeypatch):
    """``train.py > log 2>&1``: not thousands of carriage-return updates, just the log's lines."""
    redirected = io.StringIO()
    monkeypatch.setattr(sys, "stderr", redirected)
    with console_log(sys.stderr) as log:
        written = run_bar(3000, None, steps=3000, seconds_per_step=0.1, log=log, file=redirected)
    assert written == "step 1500: valid loss 1.000\n"


def test_the_bar_is_labelled_with_what_the_run_does_after_training():
    terminal = Terminal()
    with TrainingProgress(10, None, file=terminal) as bar:
        bar.update(10, 1.0)
        bar.stage("final validation")
        assert terminal.getvalue().split("\r")[-1].startswith("final validation: 100%")
        bar.stage("test (test)")
    assert terminal.getvalue().rstrip("\n").split("\r")[-1].startswith("test (test): 100%")

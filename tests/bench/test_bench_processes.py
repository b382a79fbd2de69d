"""The processes-against-threads benchmark's arithmetic and its refusals (the runs themselves
are the default run's steps: minutes, not a test)."""

from __future__ import annotations

import argparse

import pytest

from minitrans.bench.processes import Layout, main, seconds_to


def test_a_layout_is_processes_x_threads():
    assert Layout.parse("2x1") == Layout(2, 1) and Layout(2, 1).name == "2x1"
    for bad in ("2", "x1", "0x1", "2x0", "twoxone"):
        with pytest.raises(argparse.ArgumentTypeError, match="PROCESSESxTHREADS|at least one"):
            Layout.parse(bad)


def test_time_to_a_bleu_is_training_time_to_the_first_validation_reaching_it():
    result = {"steps": 1000, "train_seconds": 200.0, "valid": [(250, 40.0), (500, 71.5), (750, 70.0), (1000, 80.0)]}
    assert seconds_to(result, 70.0) == pytest.approx(100.0)  # step 500 of 1000
    assert seconds_to(result, 80.0) == pytest.approx(200.0)
    assert seconds_to(result, 90.0) is None


def test_a_folder_with_runs_in_it_is_refused(tmp_path, capsys):
    (tmp_path / "1x1").mkdir()
    with pytest.raises(SystemExit) as exit:
        main(["--out", str(tmp_path)])
    assert exit.value.code == 2 and "is not empty" in capsys.readouterr().err

"""Tests for the √d_k measurement at initialisation (minitrans/runs/scaling_at_init.py)."""

from __future__ import annotations

import json

import pytest

from minitrans.runs.scaling_at_init import measure_scaling, table


@pytest.fixture(scope="module")
def points():
    return measure_scaling(d_ks=(4, 64, 256), batch=8, heads=2, length=16)


def pick(points, inputs, d_k, is_scaled):
    (point,) = [p for p in points if p.inputs == inputs and p.d_k == d_k and p.is_scaled == is_scaled]
    return point


def test_unscaled_dot_variance_grows_about_linearly_in_d_k(points):
    for d_k in (4, 64, 256):
        assert pick(points, "unit variance", d_k, False).dot_variance == pytest.approx(d_k, rel=0.15)


def test_scaling_keeps_rows_as_spread_at_every_width(points):
    """Divided by √d_k, the scores have unit variance: entropy and max weight do not move with d_k."""
    scaled = [pick(points, "unit variance", d_k, True) for d_k in (4, 64, 256)]
    assert max(p.entropy for p in scaled) - min(p.entropy for p in scaled) < 0.15
    assert max(p.max_weight for p in scaled) - min(p.max_weight for p in scaled) < 0.05


def test_unscaled_softmax_saturates_and_its_gradient_shrinks(points):
    wide, narrow = pick(points, "unit variance", 256, False), pick(points, "unit variance", 4, False)
    assert wide.max_weight > 0.85 > narrow.max_weight
    assert wide.entropy < 0.5 * narrow.entropy
    assert wide.score_grad_norm < 0.5 * pick(points, "unit variance", 256, True).score_grad_norm


def test_the_real_model_is_measured_too_and_the_table_lists_every_point(points):
    assert {p.inputs for p in points} == {"unit variance", "minitrans at init"}
    assert len(table(points).splitlines()) == 2 + len(points)
    json.dumps([p.__dict__ for p in points])


def test_the_script_refuses_in_one_line_what_it_cannot_or_must_not_write(tmp_path, capsys, monkeypatch, points):
    from helpers.scripts import load_script

    script = load_script("scaling_at_init")
    monkeypatch.setattr(script, "measure_scaling", lambda seed: points)
    out = tmp_path / "out"
    assert script.main(["--out", str(out)]) == 0
    assert script.main(["--out", str(out)]) == 0  # its own results are replaced
    capsys.readouterr()

    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "scaling_at_init.md").write_text("# my notes\n")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    blocked = tmp_path / "blocked"
    (blocked / "scaling_at_init.json").mkdir(parents=True)
    for folder, words in [
        (a_file, "a file"),
        (theirs, "not written by scaling_at_init.py"),
        (run / "checkpoints", "record of the run"),
        (blocked, "scaling_at_init.json"),
    ]:
        assert script.main(["--out", str(folder)]) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], captured.err
    assert a_file.read_text() == "mine\n" and (theirs / "scaling_at_init.md").read_text() == "# my notes\n"
    assert list((run / "checkpoints").iterdir()) == []

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(script, "write_atomic", refuse)  # a read-only folder
    assert script.main(["--out", str(out)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: cannot write") and "Permission denied" in line

    for seed in ("-1", str(2**64)):
        with pytest.raises(SystemExit) as stop:
            script.main(["--out", str(out), "--seed", seed])
        assert stop.value.code == 2
        assert "--seed" in capsys.readouterr().err

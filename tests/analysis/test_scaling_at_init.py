"""Tests for the √d_k measurement at initialisation (minitrans/analysis/scaling_at_init.py)."""

from __future__ import annotations

import json

import pytest
from helpers.scripts import load_script

from minitrans.analysis.scaling_at_init import measure_scaling, model_grid, table

# one head as wide as the model, and eight narrow ones, at two widths
GRID = [(64, 1, 64), (64, 8, 8), (256, 1, 256), (256, 8, 32)]


@pytest.fixture(scope="module")
def points():
    return measure_scaling(d_ks=(4, 64, 256), batch=8, heads=2, length=16, grid=GRID)


def pick(points, inputs, d_k, is_scaled, d_model=None):
    (point,) = [
        p for p in points if p.inputs == inputs and p.d_k == d_k and p.is_scaled == is_scaled and p.d_model == d_model
    ]
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
    rows = [line for line in table(points).splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == len(points) // 2  # one row per d_k (per width and head count), raw / scaled in it
    json.dumps([p.__dict__ for p in points])


def test_the_model_is_measured_at_every_width_and_head_count_of_the_grid(points):
    measured = {(p.d_model, p.num_heads, p.d_k) for p in points if p.inputs == "minitrans at init"}
    assert measured == set(GRID)
    assert "\n| 256, 1 | 256 | " in table(points)


def test_at_init_one_wide_head_saturates_unscaled_and_narrow_heads_do_not(points):
    """The claim holds at initialisation where d_k is wide: the unscaled softmax of one head of
    d_k = d_model = 256 is peaked, eight heads of 8 stay soft, and ÷ √d_k keeps both soft."""
    wide = pick(points, "minitrans at init", 256, False, d_model=256)
    narrow = pick(points, "minitrans at init", 8, False, d_model=64)
    assert wide.max_weight > 0.6 > 0.35 > narrow.max_weight
    assert wide.dot_variance > 10 * narrow.dot_variance
    for d_model, _, d_k in GRID:
        assert pick(points, "minitrans at init", d_k, True, d_model=d_model).max_weight < 0.2


def test_the_grid_takes_d_k_from_the_width_and_heads_unless_given():
    assert model_grid((64, 128), (1, 4)) == [(64, 1, 64), (64, 4, 16), (128, 1, 128), (128, 4, 32)]
    assert model_grid((64,), (2,), (256,)) == [(64, 2, 256)]
    with pytest.raises(ValueError, match="3 heads do not divide d_model 64"):
        model_grid((64,), (3,))
    with pytest.raises(ValueError, match="d_model must be at least 1"):
        model_grid((0,), (1,))


# --- the script --------------------------------------------------------------------------------

SMALL = ["--d-models", "16", "--heads", "2"]
NAMES = ("scaling_at_init.json", "scaling_at_init.md", "scaling_at_init.png")


def test_the_script_writes_into_the_current_folder_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert load_script("scaling_at_init").main(SMALL) == 0
    assert all((tmp_path / name).is_file() for name in NAMES)
    rows = json.loads((tmp_path / "scaling_at_init.json").read_text(encoding="utf-8"))
    assert {(r["d_model"], r["num_heads"], r["d_k"]) for r in rows if r["d_model"]} == {(16, 2, 8)}
    assert "\n| 16, 2 | 8 | " in capsys.readouterr().out


def test_the_script_refuses_to_write_over_results_already_there(tmp_path, capsys):
    kept = tmp_path / "scaling_at_init.md"
    kept.write_text("the committed table\n", encoding="utf-8")
    script = load_script("scaling_at_init")
    assert script.main([*SMALL, "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: --out") and "--overwrite" in error[0]
    assert kept.read_text(encoding="utf-8") == "the committed table\n"
    assert not (tmp_path / "scaling_at_init.json").exists()
    assert script.main([*SMALL, "--out", str(tmp_path), "--overwrite"]) == 0
    assert kept.read_text(encoding="utf-8").startswith("Each measure is given for the raw scores")


def test_the_script_says_in_one_line_when_heads_do_not_divide_the_width(tmp_path, capsys):
    assert load_script("scaling_at_init").main(["--d-models", "64", "--heads", "3", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: 3 heads do not divide d_model 64: give d_k explicitly or another head count"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("seed", ["-1", str(2**64)])
def test_the_script_refuses_a_seed_out_of_range_in_one_line(seed, capsys):
    from helpers.scripts import load_script

    with pytest.raises(SystemExit) as stopped:
        load_script("scaling_at_init").main(["--seed", seed])
    assert stopped.value.code == 2 and "--seed" in capsys.readouterr().err


def test_the_committed_table_is_what_table_writes_from_the_committed_results():
    """docs/claims/scaling_at_init.md is table() of docs/claims/scaling_at_init.json: rerunning the
    script with --out docs/claims writes the same page, as wide as the page's column allows."""
    from helpers import REPO

    from minitrans.analysis.scaling_at_init import ScalingPoint

    folder = REPO / "docs" / "claims"
    points = [ScalingPoint(**row) for row in json.loads((folder / "scaling_at_init.json").read_text())]
    assert table(points) + "\n" == (folder / "scaling_at_init.md").read_text(encoding="utf-8")

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

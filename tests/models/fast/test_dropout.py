"""minitrans.models.fast.dropout: the packed-bit CPU dropout keeps F.dropout's distribution (keep rate, scale,
independence between neighbours, unbiased mean), and its fused forms equal the plain ones."""

import math

import pytest
import torch
import torch.nn.functional as F

from minitrans.models.fast.dropout import (
    FIELD_VALUES,
    drop_count,
    dropout,
    dropout_add,
    dropout_mask,
    keep_mask,
    relu_dropout,
)

N = 1 << 20  # elements per statistical test: a keep rate's standard error is at most 0.0005


def _within(observed: float, expected: float, variance: float, n: int, sigmas: float = 5.0) -> bool:
    return abs(observed - expected) <= sigmas * math.sqrt(variance / n)


@pytest.mark.parametrize("p", [0.1, 0.25, 1 / 3, 0.5, 0.9])
def test_keep_rate_matches_the_quantised_rate_at_every_field_of_a_draw(p):
    """Each of the four 16-bit fields cut from one 64-bit draw keeps with probability 1 - k/65536
    (a field with a constant bit, e.g. a 63-bit draw's top field, would be off by far more)."""
    torch.manual_seed(1)
    keep = keep_mask(torch.Size([N]), p).view(-1, 4).float()  # (N/4, 4): one row per 64-bit draw
    rate = 1 - drop_count(p) / FIELD_VALUES
    assert abs(rate - (1 - p)) <= 0.5 / FIELD_VALUES  # p rounded to the nearest 1/65536
    for field in range(4):
        assert _within(keep[:, field].mean().item(), rate, rate * (1 - rate), N // 4), field
    assert _within(keep.mean().item(), rate, rate * (1 - rate), N)


def test_neighbouring_decisions_are_independent():
    """P(keep i and keep i+1) = P(keep)², within and across 64-bit draws, and mask after mask."""
    torch.manual_seed(2)
    p = 0.5
    keep = keep_mask(torch.Size([N]), p).float()
    rate = 1 - drop_count(p) / FIELD_VALUES
    both = rate * rate
    for lag in (1, 2, 3, 4, 5):
        joint = (keep[:-lag] * keep[lag:]).mean().item()
        assert _within(joint, both, both * (1 - both), N - lag), lag
    again = keep_mask(torch.Size([N]), p).float()
    assert _within((keep * again).mean().item(), both, both * (1 - both), N)


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_kept_elements_are_scaled_by_the_exact_inverse_keep_rate_keeping_the_mean(p):
    torch.manual_seed(3)
    x = torch.full((N,), 2.0)
    out = dropout(x, p)
    kept = out != 0
    scale = FIELD_VALUES / (FIELD_VALUES - drop_count(p))
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 2.0 * scale))
    rate = 1 - drop_count(p) / FIELD_VALUES
    assert _within(kept.float().mean().item(), rate, rate * (1 - rate), N)
    # E[out] = x: out/2 is scale with probability rate, else 0, so its variance is scale² · rate(1 - rate)
    assert _within(out.mean().item() / 2.0, 1.0, scale**2 * rate * (1 - rate), N)


def test_same_seed_same_mask_and_a_new_draw_each_call():
    x = torch.ones(64, 33)  # not a multiple of four fields: the last draw is cut
    torch.manual_seed(4)
    first, second = dropout_mask(x, 0.5), dropout_mask(x, 0.5)
    torch.manual_seed(4)
    assert torch.equal(dropout_mask(x, 0.5), first)
    assert not torch.equal(first, second)
    assert first.shape == x.shape and first.dtype == x.dtype


def test_rates_that_round_to_zero_or_one_and_other_devices_use_torch_dropout(monkeypatch):
    x = torch.ones(1000)
    assert dropout(x, 0.0) is x
    assert (dropout(x, 1.0) == 0).all()
    calls = []
    monkeypatch.setattr(F, "dropout", lambda t, p, training: calls.append(p) or t)
    for p in (1e-6, 1 - 1e-6):  # k would be 0 or 65536: no mask could express the rate
        dropout(x, p)
        relu_dropout(x, p)
        dropout_add(x, x, p)
    assert calls == [1e-6] * 3 + [1 - 1e-6] * 3
    dropout(x, 0.1)
    assert len(calls) == 6  # a representable rate on the CPU: the packed-bit path


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_add_is_residual_plus_masked_branch_with_its_gradients(dtype):
    residual = torch.randn(3, 5, 8, dtype=dtype, requires_grad=True)
    branch = torch.randn(3, 5, 8, dtype=dtype, requires_grad=True)
    torch.manual_seed(5)
    mask = dropout_mask(branch, 0.3)
    torch.manual_seed(5)
    out = dropout_add(residual, branch, 0.3)
    rounding = {"atol": 1e-2, "rtol": 1e-2} if dtype == torch.bfloat16 else {}  # addcmul rounds once, not twice
    torch.testing.assert_close(out, residual + branch * mask, **rounding)
    upstream = torch.randn_like(out)
    out.backward(upstream)
    torch.testing.assert_close(residual.grad, upstream)
    torch.testing.assert_close(branch.grad, upstream * mask)
    assert (mask == 0).any() and (mask != 0).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_relu_dropout_is_dropout_of_relu_with_its_gradient(dtype):
    x = torch.randn(4, 6, 32, dtype=dtype, requires_grad=True)
    torch.manual_seed(6)
    mask = dropout_mask(x, 0.25)
    torch.manual_seed(6)
    out = relu_dropout(x, 0.25)
    torch.testing.assert_close(out, F.relu(x) * mask)
    upstream = torch.randn_like(out)
    out.backward(upstream)
    torch.testing.assert_close(x.grad, upstream * mask * (x > 0))
    assert ((x > 0) & (mask == 0)).any()  # some positive inputs were dropped: their gradient is 0


def test_fused_forms_match_plain_dropout_in_double_precision_gradcheck():
    residual = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    branch = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)

    def replayed(fn):
        def run(*args):
            torch.manual_seed(7)  # the same mask at every evaluation of the numerical gradient
            return fn(*args)

        return run

    assert torch.autograd.gradcheck(replayed(lambda r, b: dropout_add(r, b, 0.4)), (residual, branch))
    assert torch.autograd.gradcheck(replayed(lambda b: relu_dropout(b, 0.4)), (branch,))
    assert torch.autograd.gradcheck(replayed(lambda b: dropout(b, 0.4)), (branch,))

"""The grouped top-k the searches use gives torch.topk's values, and indices that point at them."""

import pytest
import torch

from minitrans.inference.top_k import top_k


def _check(x: torch.Tensor, k: int) -> None:
    values, indices = top_k(x, k)
    expected = x.topk(k, dim=1).values
    assert values.shape == indices.shape == (x.shape[0], k)
    assert torch.equal(values, expected)
    assert torch.equal(x.gather(1, indices), values)
    assert all(len(set(row)) == k for row in indices.tolist())  # k distinct columns per row


@pytest.mark.parametrize("m", [2000, 10_000, 2400, 640, 995])  # B = 10, 10, 10, 10 and 5
@pytest.mark.parametrize("k", [1, 2, 10])
def test_values_equal_torch_topk_and_indices_point_at_them(m, k):
    torch.manual_seed(m + k)
    _check(torch.randn(37, m), k)


def test_the_k_best_may_all_lie_in_one_group():
    x = torch.randn(4, 2000)
    groups = 2000 // 10
    x[:, 7::groups] = torch.arange(100.0, 110.0)  # all ten of group 7's columns beat everything else
    _check(x, 10)
    assert set(top_k(x, 10)[1][0].tolist()) == {7 + b * groups for b in range(10)}


def test_ties_and_minus_infinity():
    # Beam search starts with K-1 beams at -inf, and logits repeat values.
    x = torch.randint(0, 4, (6, 2000)).float()
    x[:, 500:] = float("-inf")
    _check(x, 10)
    _check(torch.full((3, 2000), float("-inf")), 4)


@pytest.mark.parametrize("shape, k", [((5, 37), 3), ((5, 40), 10), ((2, 7), 7), ((0, 2000), 3)])
def test_small_prime_or_empty_inputs_give_torch_topks_answer(shape, k):
    x = torch.randn(shape)
    assert [torch.equal(a, b) for a, b in zip(top_k(x, k), x.topk(k, dim=1))] == [True, True]


def test_a_non_contiguous_matrix_gives_the_same_answer():
    x = torch.randn(2000, 12).t()  # (12, 2000), not contiguous
    _check(x, 5)

"""Attention from scratch, checked against outside oracles and its own properties."""

import math

import pytest
import torch
from torch import nn

from minitrans.models.attention import (
    MultiHeadAttention,
    make_causal_mask,
    make_padding_mask,
    scaled_dot_product_attention,
)
from minitrans.models.fast.transformer import make_fast

# the notes module, and the same made fast (here PyTorch's fused kernel, as no weights are asked
# for and autograd records)
MODELS = {"notes": lambda module: module, "fast": make_fast}


def copy_into_torch_mha(ours: MultiHeadAttention, d_model: int, num_heads: int) -> nn.MultiheadAttention:
    """A torch.nn.MultiheadAttention with our weights (ours must have d_k = d_v = d_model / H)."""
    ref = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
    with torch.no_grad():
        if ours.is_cross:
            ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.kv_proj.weight]))
            ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.kv_proj.bias]))
        else:
            ref.in_proj_weight.copy_(ours.qkv_proj.weight)
            ref.in_proj_bias.copy_(ours.qkv_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref.eval()


@pytest.mark.parametrize("model", MODELS)
def test_self_attention_matches_torch_with_padding_and_causal_masks(model):
    torch.manual_seed(0)
    d_model, heads = 16, 4
    ours = MODELS[model](MultiHeadAttention(d_model, heads, d_model // heads).eval())
    ref = copy_into_torch_mha(ours, d_model, heads)
    x = torch.randn(3, 6, d_model)
    tokens = torch.tensor([[5, 5, 5, 5, 5, 5], [5, 5, 5, 5, 0, 0], [5, 5, 0, 0, 0, 0]])
    out, _ = ours(x, mask=make_padding_mask(tokens, pad_id=0))
    expected, _ = ref(x, x, x, key_padding_mask=tokens == 0)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)

    out, weights = ours(x, is_causal=True, need_weights=True)
    causal = ~make_causal_mask(6)[0, 0]  # torch: True = masked
    expected, expected_weights = ref(x, x, x, attn_mask=causal, average_attn_weights=False)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("model", MODELS)
def test_cross_attention_matches_torch(model):
    torch.manual_seed(1)
    d_model, heads = 12, 3
    ours = MODELS[model](MultiHeadAttention(d_model, heads, d_model // heads, is_cross=True).eval())
    ref = copy_into_torch_mha(ours, d_model, heads)
    queries, memory = torch.randn(2, 4, d_model), torch.randn(2, 7, d_model)
    src = torch.tensor([[3] * 7, [3, 3, 3, 0, 0, 0, 0]])
    out, _ = ours(queries, memory, mask=make_padding_mask(src, 0))
    expected, _ = ref(queries, memory, memory, key_padding_mask=src == 0)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_worked_example_exact():
    """Five 2-d tokens, identity projections: softmax(X Xᵀ / √2) X, computed by hand in float64."""
    x_rows = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0]]
    x = torch.tensor(x_rows, dtype=torch.float64)[None, None]  # (1, 1, 5, 2)
    out, weights = scaled_dot_product_attention(x, x, x, need_weights=True)

    def dot(a, b):
        return sum(i * j for i, j in zip(a, b))

    for i, query in enumerate(x_rows):
        scores = [dot(query, key) / math.sqrt(2) for key in x_rows]
        exps = [math.exp(s) for s in scores]
        expected_weights = [e / sum(exps) for e in exps]
        expected_out = [sum(w * row[d] for w, row in zip(expected_weights, x_rows)) for d in range(2)]
        assert weights[0, 0, i].tolist() == pytest.approx(expected_weights, abs=1e-12)
        assert out[0, 0, i].tolist() == pytest.approx(expected_out, abs=1e-12)
    # Token [1, 1] scores 1/√2 against the unit tokens and 2/√2 against the other three:
    # weights e^a / (2 e^a + 3 e^2a) and e^2a / (2 e^a + 3 e^2a) with a = 1/√2.
    a = 1 / math.sqrt(2)
    low, high = math.exp(a), math.exp(2 * a)
    total = 2 * low + 3 * high
    assert weights[0, 0, 2].tolist() == pytest.approx([low / total] * 2 + [high / total] * 3, abs=1e-12)
    assert round(low / total, 4) == 0.1237 and round(high / total, 4) == 0.2509


def test_rows_sum_to_one_and_masked_keys_get_zero():
    torch.manual_seed(2)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    tokens = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0]])
    _, weights = scaled_dot_product_attention(q, k, v, make_padding_mask(tokens, 0), need_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 4))
    assert weights[1, :, :, 2:].abs().max() == 0
    assert weights[0, :, :, 5].abs().max() == 0


@pytest.mark.parametrize("model", MODELS)
def test_fully_masked_row_gives_zeros_and_finite_gradients(model):
    torch.manual_seed(3)
    attn = MODELS[model](MultiHeadAttention(8, 2, 4))
    x = torch.randn(2, 3, 8, requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    out, _ = attn(x, mask=mask)
    q, k, v = attn.project_qkv(x)
    assert scaled_dot_product_attention(q, k, v, mask)[0][1].abs().max() == 0
    out.sum().backward()
    assert torch.isfinite(out).all()
    assert torch.isfinite(x.grad).all()
    # the fully masked sentence's output is the output projection's bias alone
    torch.testing.assert_close(out[1], attn.out_proj.bias.expand(3, 8))


def test_d_k_independent_of_d_model_over_heads():
    torch.manual_seed(4)
    attn = MultiHeadAttention(d_model=24, num_heads=3, d_k=5, d_v=7).eval()
    assert attn.qkv_proj.out_features == 3 * 5 + 3 * 5 + 3 * 7
    assert attn.out_proj.in_features == 3 * 7
    x = torch.randn(2, 4, 24)
    reference, weights = attn(x, is_causal=True, need_weights=True)
    fused, _ = make_fast(attn)(x, is_causal=True)
    assert fused.shape == (2, 4, 24) and weights.shape == (2, 3, 4, 4)
    torch.testing.assert_close(fused, reference, atol=1e-5, rtol=1e-5)


def test_causal_mask_shape_and_content():
    mask = make_causal_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    assert mask[0, 0].tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]

"""The fused attention path (PyTorch's kernels) against the hand-written reference path and
against ``torch.nn.functional.scaled_dot_product_attention``: outputs and gradients, with
padding masks, causal masks, cross-attention and fully masked rows; and the CPU dropout."""

import pytest
import torch
import torch.nn.functional as F

from minitrans.core.config import TransformerConfig
from minitrans.models.attention import (
    MultiHeadAttention,
    make_causal_mask,
    make_padding_mask,
    scaled_dot_product_attention,
)
from minitrans.models.fast.attention import FastMultiHeadAttention, fused_attention
from minitrans.models.fast.dropout import Dropout, dropout
from minitrans.models.fast.transformer import FastTransformer, make_fast
from minitrans.models.transformer import Transformer

PAD = 0
TOL = {"atol": 1e-5, "rtol": 1e-5}


def padded_tokens(lengths, width):
    tokens = torch.full((len(lengths), width), 7)
    for row, length in enumerate(lengths):
        tokens[row, length:] = PAD
    return tokens


CASES = {
    "padding": dict(mask_lengths=[6, 4, 2], is_causal=False, cross=False),
    "causal": dict(mask_lengths=None, is_causal=True, cross=False),
    "causal+padding": dict(mask_lengths=[6, 5, 3], is_causal=True, cross=False),
    "cross+padding": dict(mask_lengths=[7, 3, 1], is_causal=False, cross=True),
    "fully masked row": dict(mask_lengths=[6, 0, 3], is_causal=False, cross=False),
    "no mask": dict(mask_lengths=None, is_causal=False, cross=False),
}


def run_attention(attn: FastMultiHeadAttention, use_fused: bool, case: dict, seed: int = 0):
    """Output and the gradients of the input(s) and every parameter, for one path."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 6, 16, generator=gen, requires_grad=True)
    memory = torch.randn(3, 7, 16, generator=gen, requires_grad=True) if case["cross"] else None
    keys = 7 if case["cross"] else 6
    mask = None if case["mask_lengths"] is None else make_padding_mask(padded_tokens(case["mask_lengths"], keys), PAD)
    attn.zero_grad()
    attn.use_fused = use_fused
    out, _ = attn(x, memory, mask=mask, is_causal=case["is_causal"])
    out.pow(2).sum().backward()
    grads = [x.grad] + ([memory.grad] if memory is not None else []) + [p.grad for p in attn.parameters()]
    return out, grads


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_fused_and_reference_paths_agree_with_gradients(case):
    torch.manual_seed(0)
    attn = make_fast(MultiHeadAttention(16, 4, 4, dropout=0.0, is_cross=case["cross"])).train()
    fused_out, fused_grads = run_attention(attn, True, case)
    ref_out, ref_grads = run_attention(attn, False, case)
    torch.testing.assert_close(fused_out, ref_out, **TOL)
    assert torch.isfinite(fused_out).all()
    for fused_grad, ref_grad in zip(fused_grads, ref_grads, strict=True):
        assert torch.isfinite(fused_grad).all()
        torch.testing.assert_close(fused_grad, ref_grad, **TOL)


def written_out_attention(q, k, v, mask, is_causal):
    """softmax(Q Kᵀ / √Dk) V in float64, from the notes, independent of both code paths: the
    disallowed scores are -inf and a row with nothing to attend to is zero."""
    q, k, v = q.double(), k.double(), v.double()
    allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
    if is_causal:
        allowed = allowed & torch.ones_like(allowed).tril()
    if mask is not None:
        allowed = allowed & mask
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.nan_to_num(scores.softmax(dim=-1), nan=0.0)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_both_paths_and_torch_sdpa_equal_the_written_out_formula(is_causal, with_mask):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=gen, requires_grad=True) for _ in range(3))
    mask = make_padding_mask(padded_tokens([5, 3], 5), PAD) if with_mask else None
    expected = written_out_attention(q, k, v, mask, is_causal)
    expected_grads = [g.float() for g in torch.autograd.grad(expected.sum(), (q, k, v))]
    expected = expected.float()
    torch_mask = None if mask is None else (mask & make_causal_mask(5) if is_causal else mask)
    for out in (
        fused_attention(q, k, v, mask, is_causal, 0.0),
        scaled_dot_product_attention(q, k, v, mask, is_causal)[0],
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch_mask, is_causal=is_causal and mask is None),
    ):
        torch.testing.assert_close(out, expected, **TOL)
        for grad, expected_grad in zip(torch.autograd.grad(out.sum(), (q, k, v)), expected_grads):
            torch.testing.assert_close(grad, expected_grad, **TOL)


def test_reference_weights_have_zero_rows_where_nothing_may_be_attended():
    q, k, v = torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4)
    mask = make_padding_mask(padded_tokens([2, 0], 3), PAD)
    out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    assert weights[1].abs().max() == 0 and out[1].abs().max() == 0
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(1, 3))
    assert weights[0, ..., 2].abs().max() == 0


@pytest.mark.parametrize("padded", [False, True], ids=["no padding (mask dropped)", "padded source"])
def test_transformer_paths_agree_in_training_mode_without_dropout(padded):
    """Whole model, train mode, dropout 0: fused vs reference logits and parameter gradients."""
    torch.manual_seed(2)
    cfg = TransformerConfig(
        d_model=16,
        num_heads=2,
        d_ff=32,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dropout=0.0,
        share_embeddings=False,
    )
    model = make_fast(Transformer(cfg, 30, 30, PAD)).train()
    src = torch.randint(4, 30, (3, 6))
    if padded:
        src[1, 3:] = PAD
    tgt = torch.randint(4, 30, (3, 5))
    results = []
    for use_fused in (True, False):
        for module in model.modules():
            if isinstance(module, MultiHeadAttention):
                module.use_fused = use_fused
        model.zero_grad()
        logits = model(src, tgt)
        logits.logsumexp(-1).sum().backward()
        results.append((logits, [p.grad.clone() for p in model.parameters()]))
    (fused, fused_grads), (ref, ref_grads) = results
    torch.testing.assert_close(fused, ref, **TOL)
    for a, b in zip(fused_grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, **TOL)


def test_source_without_padding_needs_no_mask():
    torch.manual_seed(3)
    cfg = TransformerConfig(
        d_model=16,
        num_heads=2,
        d_ff=32,
        num_encoder_layers=1,
        num_decoder_layers=1,
        dropout=0.0,
        share_embeddings=False,
    )
    model = FastTransformer(cfg, 30, 30, PAD).eval()
    src, tgt = torch.randint(4, 30, (2, 5)), torch.randint(4, 30, (2, 4))
    enc, _ = model.encode(src)
    assert enc["src_mask"] is None
    with_mask = dict(enc, src_mask=make_padding_mask(src, PAD))
    torch.testing.assert_close(model.decode(enc, tgt)[0], model.decode(with_mask, tgt)[0])


def test_dropout_keeps_one_minus_p_and_preserves_the_mean():
    torch.manual_seed(4)
    x = torch.ones(200_000)
    out = dropout(x, 0.25)
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.01
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / 0.75))
    assert abs(out.mean().item() - 1.0) < 0.02
    assert dropout(x, 0.0) is x
    assert (dropout(x, 1.0) == 0).all()


def test_dropout_module_is_identity_in_eval_and_differentiable_in_train():
    layer = Dropout(0.5)
    x = torch.randn(4, 8, requires_grad=True)
    assert layer.eval()(x) is x
    out = layer.train()(x)
    out.sum().backward()
    torch.testing.assert_close(x.grad, (out != 0).float() * 2.0)


def test_attention_dropout_in_training_is_unbiased():
    """Averaged over many draws, attention with dropout matches attention without it."""
    torch.manual_seed(5)
    q, k, v = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 6, 4), torch.randn(1, 1, 6, 4)
    exact, _ = scaled_dot_product_attention(q, k, v)
    draws = 3000  # independent dropout masks, drawn in one batched call
    batched = [t.expand(draws, -1, -1, -1) for t in (q, k, v)]
    out = scaled_dot_product_attention(*batched, dropout=Dropout(0.2))[0]  # (draws, 1, 3, 4): packed bits
    notes = scaled_dot_product_attention(*batched, dropout=torch.nn.Dropout(0.2))[0]
    torch.testing.assert_close(notes.mean(0, keepdim=True), exact, atol=0.05, rtol=0.0)
    torch.testing.assert_close(out.mean(0, keepdim=True), exact, atol=0.05, rtol=0.0)
    assert not torch.equal(out[0], out[1])
    assert (out.std(0) > 0).all()  # dropout was applied, not skipped


def test_weights_are_returned_only_when_asked():
    gen = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(1, 2, 3, 4, generator=gen) for _ in range(3))
    assert scaled_dot_product_attention(q, k, v)[1] is None
    assert scaled_dot_product_attention(q, k, v, need_weights=True)[1].shape == (1, 2, 3, 3)
    attn = MultiHeadAttention(8, 2, 4).eval()
    x = torch.randn(1, 3, 8, generator=gen)
    assert attn(x)[1] is None
    assert attn(x, need_weights=True)[1].shape == (1, 2, 3, 3)


@pytest.mark.parametrize("with_mask", [False, True])
def test_the_fused_path_applies_dropout_without_bias(with_mask):
    """The fused path serves training on GPUs: its dropout must be applied, and unbiased."""
    torch.manual_seed(7)
    q, k, v = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 6, 4), torch.randn(1, 1, 6, 4)
    mask = make_padding_mask(padded_tokens([5], 6), PAD) if with_mask else None
    exact = fused_attention(q, k, v, mask, False, 0.0)
    draws = [t.expand(2000, -1, -1, -1) for t in (q, k, v)]
    out = fused_attention(*draws, mask, False, 0.3)  # (2000, 1, 3, 4)
    assert not torch.equal(out[0], out[1])
    torch.testing.assert_close(out.mean(0, keepdim=True), exact, atol=0.06, rtol=0.0)


def test_module_dropout_acts_in_training_only_and_defaults_to_none():
    torch.manual_seed(8)
    x = torch.randn(2, 5, 16)
    attn = MultiHeadAttention(16, 4, 4, dropout=0.5)
    assert not torch.equal(attn.train()(x)[0], attn(x)[0])
    torch.testing.assert_close(attn.eval()(x)[0], attn(x)[0], rtol=0, atol=0)
    plain = MultiHeadAttention(16, 4, 4).train()
    assert plain.dropout.p == 0.0
    torch.testing.assert_close(plain(x)[0], plain(x)[0], rtol=0, atol=0)


def test_the_fused_kernel_serves_exactly_where_it_has_what_is_asked(monkeypatch):
    """The fast model: fused unless the weights are wanted, and on the CPU also written out in
    training with dropout (PyTorch's CPU kernel has none) and for a decoding step's few queries
    without autograd. Where the kernel pays (a GPU), training hands it the dropout rate."""
    import minitrans.models.fast.attention as attention

    calls = []
    real = attention.fused_attention
    monkeypatch.setattr(attention, "fused_attention", lambda *a: calls.append(a[5]) or real(*a))  # a[5]: dropout_p
    x = torch.randn(1, 4, 16)
    attn = make_fast(MultiHeadAttention(16, 4, 4, dropout=0.2))

    def check(expected: dict) -> None:
        for (mode, need_weights), fused_calls in expected.items():
            calls.clear()
            getattr(attn, mode)()(x, need_weights=need_weights)
            assert calls == fused_calls, (mode, need_weights)

    check({("eval", False): [0.0], ("eval", True): [], ("train", False): [], ("train", True): []})
    with monkeypatch.context() as kernel_pays:
        kernel_pays.setattr(attention, "fused_kernel_pays", lambda *a: True)
        check({("eval", False): [0.0], ("eval", True): [], ("train", False): [0.2], ("train", True): []})
    calls.clear()
    make_fast(MultiHeadAttention(16, 4, 4, dropout=0.0)).train()(x)
    assert calls == [0.0]
    with torch.no_grad():  # a decoding step: four queries, no autograd
        make_fast(MultiHeadAttention(16, 4, 4, dropout=0.0)).eval()(x)
    assert calls == [0.0]

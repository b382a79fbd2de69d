"""Properties of the RNN baselines: shapes, causality, padding, cached decoding, overfitting,
attention weights, and the fixed-context bottleneck (the decoder sees only C)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.models import tiny_model

from minitrans.models.interface import select_batch
from minitrans.models.rnn import AttentionRNN, FixedContextRNN

PAD, VOCAB = 0, 23
MODELS = [FixedContextRNN, AttentionRNN]


def make_model(cls, **overrides):
    """The tiny RNN of class ``cls``, two layers of 24 (``overrides`` over them), in eval mode."""
    kind = "rnn_attention" if cls is AttentionRNN else "rnn"
    model = tiny_model(kind, VOCAB, **{"d_hidden": 24, "num_layers": 2} | overrides)
    assert type(model) is cls
    return model


def make_batch(batch=3, src_len=7, tgt_len=6, seed=1):
    """Right-padded source of varying lengths (one row full length) and a full target."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(1, VOCAB, (batch, src_len), generator=gen)
    lengths = torch.tensor([src_len] + [max(1, src_len - 2 - i) for i in range(batch - 1)])
    src[torch.arange(src_len)[None, :] >= lengths[:, None]] = PAD
    tgt = torch.randint(1, VOCAB, (batch, tgt_len), generator=gen)
    return src, tgt, lengths


def pad_right(tokens, extra):
    return F.pad(tokens, (0, extra), value=PAD)


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("bidirectional", [True, False])
def test_shapes(cls, bidirectional):
    model = make_model(cls, bidirectional=bidirectional)
    src, tgt, _ = make_batch()
    enc, enc_maps = model.encode(src)
    assert enc_maps == {}
    logits, maps = model.decode(enc, tgt, need_weights=True)
    assert logits.shape == (3, 6, VOCAB)
    assert model(src, tgt).shape == (3, 6, VOCAB)
    cache = model.init_cache(enc)
    assert cache["hidden"].shape == (3, 2, 24)
    step_logits, cache, step_maps = model.step(enc, tgt[:, 0], cache, need_weights=True)
    assert step_logits.shape == (3, VOCAB) and cache["hidden"].shape == (3, 2, 24)
    if cls is AttentionRNN:
        assert maps["cross"][0].shape == (3, 1, 6, 7)
        assert step_maps["cross"][0].shape == (3, 1, 1, 7)
    else:
        assert maps == {} and step_maps == {}


@pytest.mark.parametrize("cls", MODELS)
def test_causality(cls):
    model = make_model(cls)
    src, tgt, _ = make_batch()
    enc, _ = model.encode(src)
    logits, _ = model.decode(enc, tgt)
    for t in range(tgt.shape[1]):
        changed = tgt.clone()
        changed[:, t] = (changed[:, t] % (VOCAB - 1)) + 1  # a different real token
        new_logits, _ = model.decode(enc, changed)
        torch.testing.assert_close(new_logits[:, :t], logits[:, :t], atol=0, rtol=0)
        assert not torch.allclose(new_logits[:, t], logits[:, t])


@pytest.mark.parametrize("cls", MODELS)
def test_padding_invariance(cls):
    model = make_model(cls)
    src, tgt, lengths = make_batch()
    logits, maps = model.decode(model.encode(src)[0], tgt, need_weights=True)
    padded_logits, padded_maps = model.decode(model.encode(pad_right(src, 4))[0], pad_right(tgt, 3), True)
    torch.testing.assert_close(padded_logits[:, : tgt.shape[1]], logits, atol=1e-5, rtol=0)
    # Each sentence alone (no batch-mates, no padding at all) gives the same logits too.
    for row, length in enumerate(lengths.tolist()):
        alone, _ = model.decode(model.encode(src[row : row + 1, :length])[0], tgt[row : row + 1])
        torch.testing.assert_close(alone[0], logits[row], atol=1e-5, rtol=0)
    if cls is AttentionRNN:
        weights, padded = maps["cross"][0], padded_maps["cross"][0]
        torch.testing.assert_close(padded[:, :, : tgt.shape[1], : src.shape[1]], weights, atol=1e-6, rtol=0)


@pytest.mark.parametrize("cls", MODELS)
def test_decode_equals_step_by_step(cls):
    model = make_model(cls)
    src, tgt, _ = make_batch()
    enc, _ = model.encode(src)
    logits, maps = model.decode(enc, tgt, need_weights=True)
    cache = model.init_cache(enc)
    for t in range(tgt.shape[1]):
        step_logits, cache, step_maps = model.step(enc, tgt[:, t], cache, need_weights=True)
        torch.testing.assert_close(step_logits, logits[:, t], atol=1e-5, rtol=0)
        if cls is AttentionRNN:
            expected = maps["cross"][0][:, :, t : t + 1]  # (B, 1, 1, S)
            torch.testing.assert_close(step_maps["cross"][0], expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("cls", MODELS)
def test_states_reorder_with_select_batch(cls):
    """Beam search repeats and reorders rows of enc and cache; that must commute with a step."""
    model = make_model(cls)
    src, tgt, _ = make_batch()
    enc, _ = model.encode(src)
    cache = model.init_cache(enc)
    logits, _, _ = model.step(enc, tgt[:, 0], cache)
    index = torch.tensor([2, 0, 0, 1])
    picked, _, _ = model.step(select_batch(enc, index), tgt[index, 0], select_batch(cache, index))
    torch.testing.assert_close(picked, logits[index], atol=1e-6, rtol=0)


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("tie_embeddings", [False, True])
def test_overfits_one_batch(cls, tie_embeddings):
    model = make_model(cls, d_embed=32, d_hidden=32, num_layers=1, tie_embeddings=tie_embeddings).train()
    src, tgt, _ = make_batch(batch=4, src_len=6, tgt_len=6, seed=3)
    bos = torch.full((4, 1), 1)
    tgt_in, tgt_out = torch.cat([bos, tgt[:, :-1]], dim=1), tgt
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(150):
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, VOCAB), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 2.5  # about ln(23) = 3.1
    assert losses[-1] < 0.1


def test_attention_weights_sum_to_one_and_skip_padding():
    model = make_model(AttentionRNN)
    src, tgt, _ = make_batch()
    enc, _ = model.encode(src)
    weights = model.decode(enc, tgt, need_weights=True)[1]["cross"][0]  # (B, 1, T, S)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 1, 6))
    is_pad = (src == PAD)[:, None, None, :].expand_as(weights)
    assert (weights[is_pad] == 0).all()
    assert (weights[~is_pad] > 0).all()
    assert not torch.allclose(weights[:, :, 0], weights[:, :, 1])  # the query s_{t-1} matters


def test_empty_source_gives_zero_weights_not_nan():
    model = make_model(AttentionRNN)
    src, tgt, _ = make_batch()
    src[1] = PAD
    enc, _ = model.encode(src)
    logits, maps = model.decode(enc, tgt, need_weights=True)
    assert torch.isfinite(logits).all()
    assert (maps["cross"][0][1] == 0).all()


def test_fixed_context_keeps_only_c():
    model = make_model(FixedContextRNN)
    enc, _ = model.encode(make_batch()[0])
    assert set(enc) == {"context"} and enc["context"].shape == (3, 2 * 24)


def perturb_encoder_outputs(model, src, tgt):
    """Decoder logits with every per-position encoder output replaced by noise, while the
    encoder GRU's final state (what C is made from) is left as it was."""

    def hook(module, inputs, output):
        packed, h_n = output
        return packed._replace(data=torch.randn_like(packed.data)), h_n

    handle = model.encoder.rnn.register_forward_hook(hook)
    try:
        enc, _ = model.encode(src)
        return model.decode(enc, tgt)[0]
    finally:
        handle.remove()


@pytest.mark.parametrize("cls", MODELS)
def test_decoder_sees_only_c(cls):
    """The bottleneck: for FixedContextRNN only C matters; AttentionRNN reads every position."""
    model = make_model(cls)
    src, tgt, _ = make_batch()
    enc, _ = model.encode(src)
    logits, _ = model.decode(enc, tgt)
    torch.manual_seed(5)
    perturbed = perturb_encoder_outputs(model, src, tgt)
    if cls is FixedContextRNN:
        torch.testing.assert_close(perturbed, logits, atol=0, rtol=0)
        changed_c = {"context": enc["context"] + 0.1 * torch.randn_like(enc["context"])}
        assert not torch.allclose(model.decode(changed_c, tgt)[0], logits, atol=1e-3)
    else:
        assert not torch.allclose(perturbed, logits, atol=1e-3)

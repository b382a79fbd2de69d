"""The Transformer's properties: causality, padding invariance, cache = recomputation, learning."""

import math

import pytest
import torch
import torch.nn.functional as F
from helpers.models import tiny_model

from minitrans.core.config import TransformerConfig
from minitrans.models.attention import MultiHeadAttention
from minitrans.models.fast.packed_tokens import PackedTokens
from minitrans.models.fast.transformer import FastTransformer
from minitrans.models.transformer import SinusoidalPositions, Transformer

PAD = 0


# two layers a side and four heads, so that the properties hold across layers and heads
SIZES = dict(d_model=32, num_heads=4, d_ff=64, num_encoder_layers=2, num_decoder_layers=2, share_embeddings=False)


def tiny(norm_first=True, **kwargs) -> Transformer:
    """The notes model at :data:`SIZES` (``kwargs`` over them), vocabulary 40, in eval mode."""
    return tiny_model(vocab=40, **SIZES | {"norm_first": norm_first} | kwargs)


def fast_tiny(norm_first=True, **kwargs) -> FastTransformer:
    """The fast model (models/fast/), for the tests of its speed-only tricks."""
    return tiny(norm_first, implementation="fast", **kwargs)


@pytest.mark.parametrize("norm_first", [True, False])
def test_changing_a_future_target_token_leaves_earlier_outputs_alone(norm_first):
    model = tiny(norm_first)
    src = torch.randint(4, 40, (2, 7))
    tgt = torch.randint(4, 40, (2, 6))
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 36 + 4
    before, after = model(src, tgt), model(src, changed)
    torch.testing.assert_close(before[:, :4], after[:, :4])
    assert not torch.allclose(before[:, 4:], after[:, 4:])


@pytest.mark.parametrize("fast", [False, True], ids=["notes", "fast"])
def test_padding_does_not_change_real_positions(fast):
    model = fast_tiny() if fast else tiny()
    src = torch.randint(4, 40, (1, 5))
    tgt = torch.randint(4, 40, (1, 4))
    alone = model(src, tgt)
    padded_src = torch.cat([src, torch.full((1, 3), PAD)], dim=1)
    padded_tgt = torch.cat([tgt, torch.full((1, 2), PAD)], dim=1)
    # the same sentence in a batch with a longer one, padded on the right
    other_src, other_tgt = torch.randint(4, 40, (1, 8)), torch.randint(4, 40, (1, 6))
    batched = model(torch.cat([padded_src, other_src]), torch.cat([padded_tgt, other_tgt]))
    torch.testing.assert_close(batched[0, :4], alone[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"d_k": 5, "d_v": 3}, {"num_heads": 3, "d_k": 8}, {"num_decoder_layers": 1}])
def test_cached_steps_equal_full_decoding(kwargs):
    model = tiny(**kwargs)
    src = torch.randint(4, 40, (3, 6))
    src[1, 4:] = PAD
    tgt = torch.randint(4, 40, (3, 5))
    enc, _ = model.encode(src)
    full, full_maps = model.decode(enc, tgt, need_weights=True)
    cache = model.init_cache(enc)
    for t in range(tgt.shape[1]):
        logits, cache, maps = model.step(enc, tgt[:, t], cache, need_weights=True)
        torch.testing.assert_close(logits, full[:, t], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(maps["cross"][-1][:, :, 0], full_maps["cross"][-1][:, :, t], atol=1e-5, rtol=1e-5)
        for layer, step_map in enumerate(maps["dec_self"]):  # (B, H, 1, t + 1): the prefix so far
            expected = full_maps["dec_self"][layer][:, :, t, : t + 1]
            torch.testing.assert_close(step_map[:, :, 0], expected, atol=1e-5, rtol=1e-5)


def test_attention_maps_have_the_documented_shapes():
    model = tiny(d_k=6)
    src, tgt = torch.randint(4, 40, (2, 7)), torch.randint(4, 40, (2, 5))
    enc, enc_maps = model.encode(src, need_weights=True)
    _, dec_maps = model.decode(enc, tgt, need_weights=True)
    assert [m.shape for m in enc_maps["enc_self"]] == [(2, 4, 7, 7)] * 2
    assert [m.shape for m in dec_maps["dec_self"]] == [(2, 4, 5, 5)] * 2
    assert [m.shape for m in dec_maps["cross"]] == [(2, 4, 5, 7)] * 2
    enc, maps = model.encode(src)
    assert maps == {} and model.decode(enc, tgt)[1] == {}  # weights only when asked
    assert model.step(enc, tgt[:, 0], model.init_cache(enc))[2] == {}


def test_widths_and_dropout_reach_every_layer():
    model = tiny(d_k=5, d_v=3, dropout=0.3)
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    assert len(attentions) == 2 + 2 * 2
    for attn in attentions:
        assert (attn.d_k, attn.d_v, attn.dropout.p) == (5, 3, 0.3)
        assert attn.out_proj.in_features == 4 * 3  # H · Dv
    dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts and all(m.p == 0.3 for m in dropouts)
    assert any(isinstance(m, torch.nn.Dropout) for m in model.encoder_layers[0].feed_forward.modules())
    x = torch.randn(2, 5, 32)
    ff = model.encoder_layers[0].feed_forward.train()
    assert not torch.equal(ff(x), ff(x))  # dropout inside the feed-forward block
    torch.testing.assert_close(ff.eval()(x), torch.relu(ff.net[0](x)) @ ff.net[3].weight.T + ff.net[3].bias)


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_model_computes_what_torch_nn_transformer_computes(norm_first):
    """With the same weights, the same function as PyTorch's own Transformer (an outside
    oracle for residuals, layer norms, pre-/post-norm order, feed-forward, embeddings, positions)."""
    from helpers.twins import copy_weights_into_twin

    from minitrans.bench.reference import TorchTransformer
    from minitrans.bench.reference import build as build_benchmark_model

    torch.manual_seed(10)
    size = TransformerConfig(
        d_model=16, num_heads=2, d_ff=32, num_encoder_layers=2, num_decoder_layers=2, dropout=0.0, norm_first=norm_first
    )
    ours = build_benchmark_model("minitrans", 40, size).eval()
    assert isinstance(ours, Transformer) and ours.encoder_layers[0].attn_block.norm_first is norm_first
    twin = TorchTransformer(40, PAD, size).eval()
    copy_weights_into_twin(ours, twin)
    src = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
    tgt = torch.tensor([[2, 9, 11, 12], [2, 9, 13, 4]])
    with torch.no_grad():
        torch.testing.assert_close(ours(src, tgt), twin(src, tgt), atol=1e-5, rtol=1e-5)


def test_shared_and_tied_embeddings():
    model = tiny(share_embeddings=True, tie_output=True)
    assert model.src_embed is model.tgt_embed
    assert model.output.weight is model.tgt_embed.weight
    untied = tiny(share_embeddings=False, tie_output=False)
    assert untied.src_embed is not untied.tgt_embed
    with pytest.raises(ValueError, match="^share_embeddings needs one joint vocabulary for source and target$"):
        Transformer(TransformerConfig(share_embeddings=True), 40, 50, PAD)


@pytest.mark.parametrize("d_model", [8, 16])
def test_positions_are_sinusoids_and_bounded(d_model):
    """Every entry against the notes' formula, computed another way (float64, math.pow)."""
    max_len = 64
    positions = SinusoidalPositions(d_model=d_model, max_len=max_len)
    table = positions(max_len)
    assert table.shape == (max_len, d_model)
    expected = torch.empty(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / math.pow(10000.0, 2 * i / d_model)
            expected[pos, 2 * i], expected[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    torch.testing.assert_close(table.double(), expected, atol=1e-5, rtol=0)
    assert table.abs().max() <= 1.0  # bounded, whatever the position
    assert len({tuple(row) for row in table.tolist()}) == max_len  # every position distinct
    torch.testing.assert_close(positions(4, offset=5), table[5:9])
    assert positions(9, offset=max_len - 9).shape == (9, d_model)  # the last position is usable
    with pytest.raises(ValueError, match="max_len"):
        positions(10, offset=max_len - 9)
    with pytest.raises(ValueError, match=f"sequence of {max_len + 1} positions exceeds max_len={max_len}"):
        positions(10, offset=max_len - 9)


@pytest.mark.parametrize("norm_first", [True, False])
def test_tiny_model_overfits_one_batch(norm_first):
    model = tiny_model(vocab=30, d_model=32, num_heads=4, d_ff=64, norm_first=norm_first, share_embeddings=False)
    model.train()
    src = torch.randint(4, 30, (4, 6))
    tgt_out = torch.randint(4, 30, (4, 5))
    tgt_in = torch.cat([torch.full((4, 1), 2), tgt_out[:, :-1]], dim=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, 30), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05, f"loss {loss.item():.3f} after 60 steps on one batch"


def test_beams_sharing_one_sentences_cross_keys_step_as_if_each_had_its_own():
    """reorder_cache keeps cross-attention keys once per sentence; stepping K beams against them
    gives what K separate copies give (logits and cross-attention maps), also after a sentence
    drops out."""
    from minitrans.models.interface import select_batch

    model, beam = fast_tiny(num_heads=3, d_k=8), 3
    src = torch.randint(4, 40, (3, 6))
    src[1, 4:] = PAD
    enc, _ = model.encode(src)
    rows = torch.arange(3).repeat_interleave(beam)  # (N,)
    enc = select_batch(enc, rows)
    shared = model.reorder_cache(model.init_cache(model.encode(src)[0]), rows)
    copies = select_batch(model.init_cache(enc), torch.arange(len(rows)))
    assert shared[0]["cross"]["k"].shape[0] == 3 and copies[0]["cross"]["k"].shape[0] == 9
    for reorder in [torch.tensor([2, 0, 0, 3, 5, 4, 8, 8, 6]), torch.tensor([0, 1, 2, 6, 6, 7])]:
        tokens = torch.randint(4, 40, (len(rows),))
        got, shared, got_maps = model.step(enc, tokens, shared, need_weights=True)
        want, copies, want_maps = model.step(enc, tokens, copies, need_weights=True)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got_maps["cross"][-1], want_maps["cross"][-1], atol=1e-5, rtol=1e-5)
        shared = model.reorder_cache(shared, reorder)  # the second reorder drops sentence 1
        copies, enc, rows = select_batch(copies, reorder), select_batch(enc, reorder), reorder
    assert shared[0]["cross"]["k"].shape[0] == 2
    tokens = torch.randint(4, 40, (len(rows),))
    torch.testing.assert_close(
        model.step(enc, tokens, shared)[0], model.step(enc, tokens, copies)[0], atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])  # decoding runs without autograd
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])  # unpadded: src_mask is None
@pytest.mark.parametrize("size", [{"num_heads": 3, "d_k": 8}, {"num_heads": 2, "d_k": 8, "num_decoder_layers": 1}])
def test_reorder_cache_composes_with_steps_in_any_order(grad, padded, size):
    """Steps and reorders in the orders decoding can meet them — a step before any reorder, two
    reorders with no step between, beams sharing a sentence's cross keys, a sentence dropping
    out — give what separate copies of every row's cache, reordered by plain indexing, give."""
    from minitrans.models.interface import select_batch

    model, beam = fast_tiny(**size), 3
    src = torch.randint(4, 40, (3, 6))
    if padded:
        src[1, 4:] = PAD
    with torch.set_grad_enabled(grad):
        enc, _ = model.encode(src)
        assert (enc["src_mask"] is None) is not padded
        shared, copies, rows = model.init_cache(enc), model.init_cache(enc), torch.arange(3)
        reorders = [
            torch.arange(3).repeat_interleave(beam),  # one row per sentence -> beam rows per sentence
            None,
            torch.tensor([1, 1, 0, 5, 3, 4, 6, 8, 8]),  # a reorder within each sentence's beams ...
            torch.tensor([2, 0, 1, 3, 3, 5, 8, 7, 6]),  # ... and another, with no step between
            None,
            torch.tensor([0, 1, 2, 6, 6, 7]),  # sentence 1 finished: its beams drop out
            None,
        ]
        for reorder in [None, *reorders]:  # None: a step
            if reorder is None:
                tokens = torch.randint(4, 40, (len(rows),))
                got, shared, got_maps = model.step(enc, tokens, shared, need_weights=True)
                want, copies, want_maps = model.step(enc, tokens, copies, need_weights=True)
                torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
                for got_map, want_map in zip(got_maps["cross"], want_maps["cross"]):
                    torch.testing.assert_close(got_map, want_map, atol=1e-5, rtol=1e-5)
            else:
                shared = model.reorder_cache(shared, reorder)
                copies, enc, rows = select_batch(copies, reorder), select_batch(enc, reorder), reorder
        assert shared[0]["cross"]["k"].shape[0] == 2  # one per sentence left, shared by its beams


def test_padding_rows_start_at_zero_and_get_no_gradient():
    """padding_idx: the pad embedding is zero and no lookup of it sends a gradient back. (With
    ``tie_output`` the same row is also the output's weight for the PAD logit, which the softmax
    does train; padded positions are masked or ignored, so that row's value never matters.)"""
    for model in (tiny(tie_output=False), tiny(share_embeddings=True, tie_output=False)):
        src = torch.tensor([[5, 6, 7, PAD, PAD], [5, 6, 7, 8, 9]])
        tgt = torch.tensor([[2, 9, PAD, PAD], [2, 9, 13, 4]])
        model(src, tgt).square().sum().backward()
        for embed in (model.src_embed, model.tgt_embed):
            assert torch.equal(embed.weight[PAD], torch.zeros(32))
            assert torch.equal(embed.weight.grad[PAD], torch.zeros(32))
            assert embed.weight.grad[9].abs().sum() > 0  # a real token's row (in both) does learn


def test_weights_start_as_documented():
    """Projections: Xavier-uniform, U(-a, a) with a = sqrt(6 / (fan_in + fan_out)); embeddings:
    N(0, 1/D) (they are scaled by sqrt(D) on the way in); biases and LayerNorms: PyTorch's."""
    size = dict(d_model=64, num_heads=4, d_ff=128, share_embeddings=False, tie_output=False)
    model = tiny_model(vocab=500, **size)
    matrices = {name: p for name, p in model.named_parameters() if p.dim() == 2 and "embed" not in name}
    # encoder: fused qkv, out, feed-forward x 2; decoder: the same plus q and fused kv of the cross-attention; output
    assert len(matrices) == 4 + 7 + 1
    for name, weight in matrices.items():
        fan_out, fan_in = weight.shape
        bound = math.sqrt(6 / (fan_in + fan_out))
        assert weight.abs().max() <= bound, name
        assert weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.1), name
    for embed in (model.src_embed, model.tgt_embed):
        real = torch.cat([embed.weight[:PAD], embed.weight[PAD + 1 :]])
        assert real.std().item() == pytest.approx(64**-0.5, rel=0.05)
        assert abs(real.mean().item()) < 0.01
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):  # PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
            assert 0 < module.bias.abs().max() <= module.in_features**-0.5
        if isinstance(module, torch.nn.LayerNorm):
            assert torch.equal(module.weight, torch.ones(64)) and torch.equal(module.bias, torch.zeros(64))
    again = tiny_model(vocab=500, **size)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


@pytest.mark.parametrize("norm_first", [True, False])
def test_only_pre_norm_stacks_end_in_a_layer_norm(norm_first):
    """Pre-norm: a final LayerNorm after each stack; post-norm: the last layer's own LayerNorm
    is the end (no second one). Written out layer by layer, with LayerNorms that are not the
    identity, so a missing or an extra normalisation shows."""
    model = tiny(norm_first)
    torch.manual_seed(1)
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            torch.nn.init.normal_(module.weight, 1.0, 0.5)
            torch.nn.init.normal_(module.bias, 0.0, 0.5)
    src, tgt = torch.randint(4, 40, (2, 7)), torch.randint(4, 40, (2, 5))
    x = model._embed(model.src_embed, src)
    for layer in model.encoder_layers:
        x = layer(x, None)[0]
    y = model._embed(model.tgt_embed, tgt)
    if norm_first:
        x = F.layer_norm(x, (32,), model.encoder_norm.weight, model.encoder_norm.bias)
    for layer in model.decoder_layers:
        y = layer(y, x, None)[0]
    if norm_first:
        y = F.layer_norm(y, (32,), model.decoder_norm.weight, model.decoder_norm.bias)
    torch.testing.assert_close(model(src, tgt), model.output(y))
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in model.modules()) == 2 * 2 + 3 * 2 + 2 * norm_first


def test_an_unpadded_batch_is_encoded_without_a_mask():
    """No source padded (most length-bucketed batches): src_mask is None, attention skips masking."""
    model = fast_tiny()
    enc, _ = model.encode(torch.randint(4, 40, (2, 6)))
    assert enc["src_mask"] is None
    src = torch.randint(4, 40, (2, 6))
    src[0, -1] = PAD
    assert model.encode(src)[0]["src_mask"].tolist() == [[[[True] * 5 + [False]]], [[[True] * 6]]]


@pytest.mark.parametrize("norm_first", [True, False])
def test_the_encoder_on_real_tokens_only_computes_what_the_padded_one_does(norm_first, monkeypatch):
    """Packing the source's real tokens (packed_tokens.py) is speed only: the same logits and
    gradients as running the layers over the padding, in training mode; zeros at padding."""
    model = fast_tiny(norm_first).train()  # dropout 0: both runs compute one function
    src, tgt = torch.randint(4, 40, (3, 7)), torch.randint(4, 40, (3, 5))
    src[0, 4:], src[2, 6:] = PAD, PAD

    def logits_and_gradients():
        model.zero_grad()
        logits = model(src, tgt)
        logits.square().sum().backward()
        return logits.detach(), [p.grad.clone() for p in model.parameters()]

    packed = logits_and_gradients()
    assert model.encode(src)[0]["memory"][0, 4:].eq(0).all()  # the packed path ran
    monkeypatch.setattr(PackedTokens, "is_worth_it", staticmethod(lambda *args: False))
    assert model.encode(src)[0]["memory"][0, 4:].ne(0).any()  # the padded path ran
    torch.testing.assert_close(packed, logits_and_gradients())

"""The teaching switches of docs/claims.md (model.attention_scale, model.causal_mask,
model.positions, model.cross_attention): each takes away what its claim says it is for, the
notes model and the fast model honour it alike, and the default model is untouched."""

from __future__ import annotations

import logging

import pytest
import torch
from helpers import REPO
from helpers.models import tiny_model

from minitrans.core.checks import ConfigError
from minitrans.core.config import TransformerConfig
from minitrans.models.build import VocabSizes, build_model_for_weights
from minitrans.models.transformer import SinusoidalPositions
from minitrans.training.setup import model_to_train

VOCAB = VocabSizes(40, 40)
IMPLEMENTATIONS = ("notes", "fast")


def model(implementation: str = "notes", seed: int = 0, **switches):
    """A two-layer model of width 32 with ``switches`` set, in eval mode."""
    sizes = dict(d_model=32, d_ff=64, num_encoder_layers=2, num_decoder_layers=2)
    return tiny_model(vocab=VOCAB, seed=seed, implementation=implementation, **sizes | switches)


def tokens(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(4, VOCAB.src_vocab_size, (batch, length), generator=torch.Generator().manual_seed(seed))


def logits_of(net, src, tgt_in):
    enc, _ = net.encode(src)
    return net.decode(enc, tgt_in)[0]  # (B, T, V)


# -- 1. model.attention_scale ----------------------------------------------------------------
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_unscaled_at_d_k_1_equals_the_default(implementation):
    """√1 = 1: at d_k = 1 dividing by √d_k and not dividing are the same model."""
    src, tgt = tokens(3, 7), tokens(3, 5, seed=2)
    default = model(implementation, d_k=1)
    unscaled = model(implementation, d_k=1, attention_scale="none")
    assert torch.equal(logits_of(default, src, tgt), logits_of(unscaled, src, tgt))
    wide_default, wide_unscaled = model(implementation, d_k=16), model(implementation, d_k=16, attention_scale="none")
    assert not torch.allclose(logits_of(wide_default, src, tgt), logits_of(wide_unscaled, src, tgt))


@pytest.mark.parametrize(("scale", "divisor"), [("none", 1.0), ("sqrt_dk", 16**0.5), ("2.5", 2.5)])
def test_attention_weights_are_the_softmax_of_the_dot_products_divided_as_asked(scale, divisor):
    attn = model(d_k=16, attention_scale=scale).encoder_layers[0].self_attn
    x = torch.randn(2, 6, 32)
    q, k, _ = attn.project_qkv(x)  # (B, H, L, Dk)
    _, weights = attn(x, need_weights=True)
    expected = (q @ k.transpose(-2, -1) / divisor).softmax(dim=-1)  # (B, H, L, L)
    torch.testing.assert_close(weights, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", ["abc", "0", "-1", "inf", "nan", ""])
def test_an_impossible_attention_scale_is_refused_in_one_line(bad):
    with pytest.raises(ConfigError, match=r"^model\.attention_scale: expected sqrt_dk, none or a positive number"):
        TransformerConfig(attention_scale=bad)


@pytest.mark.parametrize("tiny", ["1e-45", "1e-300", "4.9e-324", "1e-20", "1e-7"])
def test_a_divisor_whose_scores_overflow_is_refused_naming_the_overflow(tiny):
    """Scores times 1/N past what float32 holds give NaN in translation and a NaN gradient in
    training, which would otherwise be blamed on the learning rate."""
    with pytest.raises(
        ConfigError, match=r"^model\.attention_scale: .* is less than 1e-06: .*overflow float32"
    ) as refused:
        TransformerConfig(attention_scale=tiny)
    assert "\n" not in str(refused.value) and "lr" not in str(refused.value)


def test_training_refuses_an_overflowing_divisor_before_it_starts_naming_the_key():
    """It used to train into NaN steps and stop with advice to lower trainer.lr."""

    from minitrans.core.hydra_config import check_command_line

    conf = str(REPO / "conf")
    problem = check_command_line(["debug=tiny", "model.attention_scale=1e-45"], conf)
    assert problem.startswith("model.attention_scale: 1e-45 is less than 1e-06: the scores") and "lr" not in problem
    assert check_command_line(["debug=tiny", "model.attention_scale=1e-3"], conf) is None


@pytest.mark.parametrize("fine", ["1e-06", "0.001", "1e6", "1e300"])
def test_a_small_or_huge_divisor_that_stays_finite_is_taken(fine):
    assert TransformerConfig(attention_scale=fine).scores_divisor() == float(fine)


# -- 2. model.causal_mask ---------------------------------------------------------------------
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("causal_mask", [True, False])
def test_only_without_the_mask_a_future_token_changes_earlier_outputs(implementation, causal_mask):
    net = model(implementation, causal_mask=causal_mask)
    src, tgt = tokens(2, 6), tokens(2, 5, seed=3)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % (VOCAB.tgt_vocab_size - 4) + 4  # the last target token
    earlier = (logits_of(net, src, tgt) - logits_of(net, src, changed))[:, :4].abs().max()
    assert (earlier > 1e-4) if not causal_mask else (earlier == 0)


def test_training_without_the_mask_warns_in_one_line(caplog):
    with caplog.at_level(logging.WARNING, logger="minitrans.training.setup"):
        model_to_train(TransformerConfig(d_model=32, num_heads=2, causal_mask=False), VOCAB, None, None)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 1 and "\n" not in lines[0] and "causal_mask=false" in lines[0] and "copy" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="minitrans.training.setup"):
        model_to_train(TransformerConfig(d_model=32, num_heads=2), VOCAB, None, None)
        unmasked = TransformerConfig(d_model=32, num_heads=2, causal_mask=False)
        model_to_train(unmasked, VOCAB, None, None, is_main=False)  # the other processes of a run: silent
    assert not caplog.records


# -- 3. model.positions -----------------------------------------------------------------------
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("positions", ["none", "sinusoidal", "learned"])
def test_without_positions_the_encoder_is_permutation_equivariant(implementation, positions):
    """Permute the source tokens: without positions the encoder's output rows permute the same
    way (self-attention sees a set); with either table they do not."""
    net = model(implementation, positions=positions)
    src = tokens(2, 7)
    order = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    memory = net.encode(src)[0]["memory"]  # (B, S, D)
    permuted = net.encode(src[:, order])[0]["memory"]
    equivariant = torch.allclose(permuted, memory[:, order], atol=1e-5)
    assert equivariant == (positions == "none")


def test_learned_positions_are_a_parameter_that_saves_and_loads():
    net = model(positions="learned")
    assert "positions.table" in dict(net.named_parameters())
    weights = {key: value.clone() + 0.5 for key, value in net.state_dict().items()}  # any other values
    cfg = TransformerConfig(d_model=32, num_heads=2, d_ff=64, implementation="notes", positions="learned")
    loaded = build_model_for_weights(cfg, VOCAB, weights)
    loaded.load_state_dict(weights)
    assert torch.equal(loaded.positions.table, weights["positions.table"])
    table_grad = torch.autograd.grad(logits_of(loaded, tokens(1, 4), tokens(1, 3)).sum(), loaded.positions.table)[0]
    assert table_grad[:4].abs().sum() > 0 and table_grad[4:].abs().sum() == 0  # only the positions used
    with pytest.raises(ValueError, match="positions.table"):  # a sinusoidal config does not take them
        build_model_for_weights(TransformerConfig(d_model=32, num_heads=2, d_ff=64), VOCAB, weights)


def test_the_sinusoidal_table_stays_out_of_checkpoints():
    """Today's checkpoints hold no position table (a non-persistent buffer), so they load into a
    model built with the default model.positions, as before."""
    net = model()
    assert isinstance(net.positions, SinusoidalPositions)
    assert not any(key.startswith("positions") for key in net.state_dict())


def test_no_positions_keeps_the_length_limit():
    net = model(positions="none", max_len=8)
    with pytest.raises(ValueError, match="exceeds max_len=8"):
        net.encode(tokens(1, 9))


# -- 5. model.cross_attention=fixed_mean ------------------------------------------------------
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_fixed_mean_gives_every_target_position_the_mean_of_the_source(implementation):
    net = model(implementation, cross_attention="fixed_mean")
    src = tokens(2, 6)
    src[0, 4:] = VOCAB.pad_id  # the mean is over real tokens only
    enc, _ = net.encode(src)
    _, maps = net.decode(enc, tokens(2, 5, seed=4), need_weights=True)
    real = (src != VOCAB.pad_id).float()
    for weights in maps["cross"]:  # (B, H, T, S): 1/S' on each of the S' real tokens
        torch.testing.assert_close(weights, (real / real.sum(1, keepdim=True))[:, None, None].expand_as(weights))
    layer = net.decoder_layers[0]
    h = torch.randn(2, 5, 32)
    out, _ = layer.cross_attn(h, enc["memory"], mask=enc["src_mask"])  # (B, T, D)
    _, v = layer.cross_attn.project_kv(enc["memory"])  # (B, H, S, Dv)
    mean_v = (v * real[:, None, :, None]).sum(2) / real.sum(1)[:, None, None]  # (B, H, Dv)
    context = layer.cross_attn.out_proj(mean_v.flatten(1))  # (B, D): one vector per sentence
    torch.testing.assert_close(out, context[:, None].expand_as(out), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("key", "value"), [("positions", "rotary"), ("cross_attention", "first"), ("attention_scale", "sqrt")]
)
def test_an_unknown_switch_value_is_refused_naming_its_key(key, value):
    with pytest.raises(ConfigError, match=rf"^model\.{key}: expected"):
        TransformerConfig(**{key: value})


# -- the default is untouched -----------------------------------------------------------------
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_default_switches_build_the_same_parameters_and_outputs(implementation):
    """Stating every default gives the model of no switches: same parameter names in the same
    order, same values (the same random draws), same logits, and √Dk left to attention itself."""
    plain = model(implementation)
    stated = model(implementation, attention_scale="sqrt_dk", causal_mask=True, positions="sinusoidal")
    assert list(plain.state_dict()) == list(stated.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), stated.state_dict().values()))
    assert all(m.scale is None for m in plain.modules() if hasattr(m, "scale") and hasattr(m, "qkv_proj"))
    src, tgt = tokens(2, 6), tokens(2, 5)
    assert torch.equal(logits_of(plain, src, tgt), logits_of(stated, src, tgt))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(
    "switch",
    [{"attention_scale": "none"}, {"positions": "learned"}, {"positions": "none"}, {"cross_attention": "fixed_mean"}],
)
def test_cached_steps_equal_the_whole_prefix_under_each_switch(implementation, switch):
    """Decoding step by step with the cache computes what teacher forcing computes (every switch
    but causal_mask=false, whose training sees a future that decoding never has)."""
    net = model(implementation, **switch)
    src, tgt = tokens(2, 6), tokens(2, 5, seed=5)
    enc, _ = net.encode(src)
    whole = net.decode(enc, tgt)[0]  # (B, T, V)
    cache = net.init_cache(enc)
    for t in range(tgt.shape[1]):
        logits, cache, _ = net.step(enc, tgt[:, t], cache)  # (B, V)
        torch.testing.assert_close(logits, whole[:, t], rtol=1e-4, atol=1e-5)

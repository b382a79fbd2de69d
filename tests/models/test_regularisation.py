"""The regularisation knobs beyond ``model.dropout``: attention and feed-forward dropout at their
own rates, and word dropout on the source and on the decoder's input."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers.models import tiny_model_config

from minitrans.core.checks import ConfigError
from minitrans.data.batching import collate, drop_words
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from minitrans.models.attention import MultiHeadAttention
from minitrans.models.build import VocabSizes, build_model
from minitrans.models.transformer import FeedForward, Residual


@pytest.mark.parametrize("implementation", ["notes", "fast"])
def test_attention_and_feed_forward_dropout_take_their_own_rates(implementation):
    cfg = tiny_model_config(dropout=0.2, attention_dropout=0.0, ff_dropout=0.3, implementation=implementation)
    model = build_model(cfg, VocabSizes(40, 40))
    attention = [m.dropout.p for m in model.modules() if isinstance(m, MultiHeadAttention)]
    inside_ff = [m.net[2].p for m in model.modules() if isinstance(m, FeedForward)]
    residuals = [m.dropout.p for m in model.modules() if isinstance(m, Residual)]
    assert attention and set(attention) == {0.0}
    assert inside_ff and set(inside_ff) == {0.3}
    assert residuals and set(residuals) == {0.2}
    assert model.dropout.p == 0.2  # on the embeddings


def test_unset_attention_and_ff_dropout_follow_model_dropout_and_are_recorded():
    cfg = tiny_model_config(dropout=0.15)
    assert (cfg.attention_dropout, cfg.ff_dropout) == (0.15, 0.15)


def test_with_dropout_moves_every_rate_where_replace_keeps_the_recorded_ones():
    """A config's recorded attention and feed-forward rates survive ``replace(cfg, dropout=p)``
    (the benchmarks measured models without attention dropout that way); ``with_dropout`` moves all."""
    cfg = tiny_model_config()  # dropout 0, so both recorded rates are 0
    assert replace(cfg, dropout=0.2).attention_dropout == 0.0  # the trap, as dataclasses have it
    moved = cfg.with_dropout(0.2)
    assert (moved.dropout, moved.attention_dropout, moved.ff_dropout) == (0.2, 0.2, 0.2)
    model = build_model(moved, VocabSizes(40, 40))
    rates = {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}
    assert rates == {0.2}


@pytest.mark.parametrize("key", ["attention_dropout", "ff_dropout"])
def test_a_dropout_rate_of_one_is_refused_by_name(key):
    with pytest.raises(ConfigError, match=f"model.{key}"):
        tiny_model_config(**{key: 1.0})


def batch():
    src = [[5, 6, 7, 8, 9, 10, EOS_ID]] * 40 + [[11, EOS_ID]]
    tgt = [[12, 13, 14, 15, 16, 17]] * 40 + [[18]]
    return collate(src, tgt)


def test_word_dropout_at_rate_zero_returns_the_batch_itself():
    original = batch()
    assert drop_words(original, 0.0, 0.0, (0, 0, 0, 0)) is original


def test_word_dropout_hides_pieces_only_and_keeps_the_labels():
    original = batch()
    dropped = drop_words(original, 0.5, 0.5, (0, 1, 2, 0))
    for before, after in ((original.src, dropped.src), (original.tgt_in, dropped.tgt_in)):
        changed = before != after
        assert changed.any()
        assert (after[changed] == UNK_ID).all()
        assert not (changed & (before <= EOS_ID)).any()  # PAD, BOS and EOS stay where they were
    assert torch.equal(dropped.tgt_out, original.tgt_out)
    assert (dropped.tgt_in[:, 0] == BOS_ID).all() and (dropped.src == PAD_ID).sum() == (original.src == PAD_ID).sum()


def test_word_dropout_hides_about_its_rate_of_pieces():
    original = batch()
    dropped = drop_words(original, 0.25, 0.0, (3, 0, 0, 0))
    pieces = original.src > EOS_ID
    share = ((dropped.src == UNK_ID) & pieces).sum().item() / pieces.sum().item()
    assert 0.15 < share < 0.35
    assert torch.equal(dropped.tgt_in, original.tgt_in)  # the target side has its own rate, 0 here


def test_word_dropout_draws_depend_only_on_the_seed():
    a, b, c = (drop_words(batch(), 0.3, 0.3, seed) for seed in ((0, 1, 5, 0), (0, 1, 5, 0), (0, 1, 6, 0)))
    assert torch.equal(a.src, b.src) and torch.equal(a.tgt_in, b.tgt_in)
    assert not torch.equal(a.src, c.src)


@pytest.mark.parametrize("key", ["src_word_dropout", "tgt_word_dropout"])
def test_a_word_dropout_rate_of_one_is_refused_by_name(tiny_config, key):
    with pytest.raises(ConfigError, match=f"trainer.{key}"):
        tiny_config(f"trainer.{key}=1.0")


def test_the_trainer_drops_words_with_the_configured_rates_and_a_seed_per_batch(tiny_config, tmp_path, monkeypatch):
    from minitrans.training import trainer

    seen = []

    def spy(batch, src_p, tgt_p, seed):
        seen.append((src_p, tgt_p, seed))
        return drop_words(batch, src_p, tgt_p, seed)

    monkeypatch.setattr(trainer, "drop_words", spy)
    cfg = tiny_config("trainer.src_word_dropout=0.1", "trainer.tgt_word_dropout=0.2", "trainer.max_steps=3", "seed=7")
    trainer.train(cfg, tmp_path / "run")
    assert [rates for *rates, _ in seen] == [[0.1, 0.2]] * 3
    assert len({seed for *_, seed in seen}) == 3 and all(seed[0] == 7 for *_, seed in seen)

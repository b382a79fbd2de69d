"""Subword sampling (trainer.subword_sampling): BPE's merges found again, pieces split along them
spell the same text, each epoch draws anew, a draw repeats with its seed, and the limits hold."""

import numpy as np
import pytest

from minitrans.core.checks import ConfigError
from minitrans.core.config import DataConfig, TrainConfig, TrainerConfig
from minitrans.data.subword_sampling import SubwordSampling, merge_splits, split_pieces
from minitrans.data.token_ids import TokenIds
from minitrans.data.tokenizer import EOS_ID, Tokenizer

WORDS_EN = "the big dog sees a man small cat sleeps woman reads book green house near river walks quickly".split()
WORDS_DE = (
    "der große Hund sieht einen Mann kleine Katze schläft Frau liest Buch grüne Haus nahe Fluss geht schnell".split()
)
ROWS = np.random.default_rng(0).integers(0, len(WORDS_EN), size=(80, 6))
EN = [" ".join(WORDS_EN[i] for i in row) + " ." for row in ROWS]
DE = [" ".join(WORDS_DE[i] for i in row) + " ." for row in ROWS]


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.train(EN, DE, vocab_size=360, model_type="bpe")


def test_every_merged_piece_splits_into_two_pieces_that_spell_it(tok):
    splits = merge_splits(tok.src)
    sp = tok.src
    merged = [i for i in range(sp.get_piece_size()) if splits[i, 0] >= 0]
    assert len(merged) > 30  # the words' merges
    for i in merged:
        assert sp.id_to_piece(int(splits[i, 0])) + sp.id_to_piece(int(splits[i, 1])) == sp.id_to_piece(i)
    for i in range(sp.get_piece_size()):
        if sp.is_control(i) or sp.is_byte(i) or sp.is_unknown(i) or len(sp.id_to_piece(i)) == 1:
            assert tuple(splits[i]) == (-1, -1), sp.id_to_piece(i)


def test_split_pieces_spell_the_same_text_in_more_pieces(tok):
    best = TokenIds.from_lists(tok.encode_src(EN))
    splits = merge_splits(tok.src)
    drawn = split_pieces(best, splits, 0.3, np.random.default_rng(0))
    assert [tok.src.decode(drawn[i].tolist()) for i in range(len(EN))] == EN
    assert all(drawn[i][-1] == EOS_ID for i in range(len(EN)))  # EOS is never split
    assert (drawn.lengths >= best.lengths).all() and drawn.lengths.sum() > best.lengths.sum()
    unchanged = split_pieces(best, splits, 0.0, np.random.default_rng(0))
    assert np.array_equal(unchanged.flat, best.flat) and np.array_equal(unchanged.offsets, best.offsets)
    characters = split_pieces(best, splits, 1.0, np.random.default_rng(0))  # every merge undone
    assert (splits[characters.flat, 0] < 0).all()
    assert [tok.src.decode(characters[i].tolist()) for i in range(len(EN))] == EN


def test_a_draw_depends_only_on_its_generator(tok):
    best = TokenIds.from_lists(tok.encode_tgt(DE))
    splits = merge_splits(tok.tgt)
    first = split_pieces(best, splits, 0.3, np.random.default_rng([0, 1]))
    again = split_pieces(best, splits, 0.3, np.random.default_rng([0, 1]))
    other = split_pieces(best, splits, 0.3, np.random.default_rng([0, 2]))
    assert np.array_equal(first.flat, again.flat) and np.array_equal(first.offsets, again.offsets)
    assert not np.array_equal(first.offsets, other.offsets) or not np.array_equal(first.flat, other.flat)


def sampling(tok, max_tokens=64, batch_tokens=4096, p=0.3):
    best_src, best_tgt = TokenIds.from_lists(tok.encode_src(EN)), TokenIds.from_lists(tok.encode_tgt(DE))
    return SubwordSampling(tok, best_src, best_tgt, p, seed=0, max_tokens=max_tokens, batch_tokens=batch_tokens)


def test_each_epoch_draws_anew_and_an_epoch_drawn_again_is_the_same(tok):
    src0, tgt0 = sampling(tok).epoch(0)
    src1, _ = sampling(tok).epoch(1)
    again_src, again_tgt = sampling(tok).epoch(0)  # a resumed run, or another process
    assert np.array_equal(src0.flat, again_src.flat) and np.array_equal(tgt0.flat, again_tgt.flat)
    assert np.array_equal(src0.offsets, again_src.offsets) and np.array_equal(tgt0.offsets, again_tgt.offsets)
    assert not (np.array_equal(src0.offsets, src1.offsets) and np.array_equal(src0.flat, src1.flat))
    assert len(src0) == len(EN)


def test_the_last_epoch_drawn_is_kept_and_an_earlier_one_is_drawn_again_alike(tok):
    one = sampling(tok)
    first = one.epoch(0)
    kept = one.epoch(0)  # the log line's draw and the trainer's first epoch: one draw
    assert kept[0] is first[0] and kept[1] is first[1]
    one.epoch(1)
    src, tgt = one.epoch(0)  # drawn again from its seed, not the kept epoch 1
    assert src is not first[0]
    assert np.array_equal(src.flat, first[0].flat) and np.array_equal(tgt.offsets, first[1].offsets)


def test_a_pair_drawn_too_long_keeps_its_best_segmentation(tok):
    best_src, best_tgt = tok.encode_src(EN), tok.encode_tgt(DE)

    def best_pairs(drawn):
        src, tgt = drawn
        return sum(src[i].tolist() == best_src[i] and tgt[i].tolist() == best_tgt[i] for i in range(len(EN)))

    limit = max(map(len, best_src + best_tgt)) + 1  # every best segmentation fits; many draws do not
    src, tgt = tight = sampling(tok, max_tokens=limit).epoch(0)
    assert src.lengths.max() <= limit and tgt.lengths.max() < limit
    assert best_pairs(tight) > best_pairs(sampling(tok).epoch(0))  # those pairs kept their best, both sides
    pair_limit = max(len(s) + len(t) + 1 for s, t in zip(best_src, best_tgt))
    src, tgt = narrow = sampling(tok, batch_tokens=pair_limit).epoch(0)
    assert (src.lengths + tgt.lengths + 1).max() <= pair_limit
    assert best_pairs(narrow) > best_pairs(sampling(tok).epoch(0))


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, float("nan")])
def test_an_impossible_chance_is_refused_naming_the_key(p):
    with pytest.raises(ConfigError, match="trainer.subword_sampling"):
        TrainerConfig(subword_sampling=p)


def test_a_unigram_model_is_refused_naming_both_keys():
    with pytest.raises(ConfigError, match=r"trainer.subword_sampling.*data.spm_model_type=bpe"):
        TrainConfig(model=None, data=DataConfig(spm_model_type="unigram"), trainer=TrainerConfig(subword_sampling=0.2))

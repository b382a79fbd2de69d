"""Tests for AER of attention heads against gold alignments (minitrans/analysis/alignment.py)."""

from __future__ import annotations

import pytest
import torch

from minitrans.analysis.alignment import (
    GoldAlignment,
    LinkCounts,
    aer,
    as_links,
    gold_for_pairs,
    measure_alignment,
    parse_alignment,
    piece_words,
    word_alignments,
)
from minitrans.core.config import DataConfig
from minitrans.data.batching import collate


def test_hand_computed_aer():
    # A = {0-0, 1-1, 2-1}; S = {0-0, 1-2}; P = S + {2-1}
    gold = parse_alignment("0-0 1-2 2?1")
    predicted = {(0, 0), (1, 1), (2, 1)}
    counts = LinkCounts()
    counts.add(predicted, gold)
    # |A∩S| = 1 (0-0), |A∩P| = 2 (0-0, 2-1), |A| = 3, |S| = 2
    assert counts.precision == pytest.approx(2 / 3)
    assert counts.recall == pytest.approx(1 / 2)
    assert counts.aer == pytest.approx(1 - (1 + 2) / (3 + 2))
    assert aer(predicted, gold) == pytest.approx(0.4)


def test_counts_add_up_over_sentences():
    counts = LinkCounts()
    counts.add({(0, 0)}, parse_alignment("0-0"))  # perfect
    counts.add({(0, 1)}, parse_alignment("0-0"))  # wrong
    assert (counts.predicted, counts.sure, counts.hit_sure, counts.hit_possible) == (2, 2, 1, 1)
    assert counts.aer == pytest.approx(0.5)


def test_parse_alignment_sure_possible_and_reversed():
    gold = parse_alignment("0-0 2?1 3p1")
    assert gold.sure == {(0, 0)} and gold.possible == {(0, 0), (2, 1), (3, 1)}
    assert parse_alignment("0-1 2?1", reverse=True) == GoldAlignment(frozenset({(1, 0)}), frozenset({(1, 0), (1, 2)}))


def test_piece_words_follow_word_start_marks():
    assert piece_words(["▁Der", "▁Hu", "nd", ",", "▁der", "▁", "Ärz", "te"]) == [0, 1, 1, 1, 2, 3, 3, 3]


def test_pieces_merge_to_words():
    # source words: [a][b c] ; target words: [x y][z]
    attention = torch.tensor(
        [
            [0.5, 0.3, 0.2],  # x: word 0 has 0.5, word 1 has 0.5 ...
            [0.1, 0.45, 0.45],  # y: ... so the mean of x and y picks word 1 (0.3 vs 0.7)
            [0.6, 0.2, 0.2],  # z: word 0 (0.6 vs 0.4)
        ]
    )
    assert word_alignments(attention, [0, 1, 1], [0, 0, 1]).tolist() == [1, 0]


def test_an_argmax_over_pieces_alone_would_disagree():
    """The summed weight of a word's pieces wins over a single stronger piece."""
    attention = torch.tensor([[0.4, 0.3, 0.3]])
    assert word_alignments(attention, [0, 1, 1], [0]).tolist() == [1]


class _Pieces:
    """A tokenizer stand-in: id k is the piece names[k]."""

    def __init__(self, names):
        self.names = names

    def src_pieces(self, ids):
        return [self.names[i] for i in ids]

    tgt_pieces = src_pieces


class _AttentionModel(torch.nn.Module):
    """Returns given cross-attention maps (B, H, T, S) for every layer; none when ``maps`` is None."""

    def __init__(self, maps):
        super().__init__()
        self.maps = maps

    def encode(self, src, need_weights=False):
        return src, {}

    def decode(self, enc, tgt_in, need_weights=False):
        return None, ({} if self.maps is None else {"cross": self.maps})


NAMES = ["<pad>", "<unk>", "<s>", "</s>", "▁the", "▁do", "g", "▁sleeps", "▁der", "▁Hund", "▁schläft"]


def _gold_attention(src_pieces: int, tgt_pieces: int, rows: list[int]) -> torch.Tensor:
    """(1, 1, T+1, S+1): the row predicting target piece t attends to source piece rows[t]."""
    maps = torch.zeros(1, 1, tgt_pieces + 1, src_pieces + 1)
    for t, s in enumerate(rows):
        maps[0, 0, t, s] = 1.0
    maps[0, 0, tgt_pieces, src_pieces] = 1.0  # the EOS row looks at EOS
    return maps


def test_attention_equal_to_gold_gives_aer_zero_and_the_reverse_does_not():
    src_ids, tgt_ids = [[4, 5, 6, 7, 3]], [[8, 9, 10]]  # the do|g sleeps </s> -> der Hund schläft
    gold = [parse_alignment("0-0 1-1 2-2")]
    right = _gold_attention(4, 3, [0, 2, 3])  # "Hund" looks at the second piece of "dog"
    wrong = _gold_attention(4, 3, [3, 1, 0])
    model = _AttentionModel([torch.cat([right, wrong], dim=1)])  # one layer, two heads
    report = measure_alignment(model, _Pieces(NAMES), src_ids, tgt_ids, gold)
    assert report.sentences == 1
    assert report.aer_grid()[0] == [0.0, pytest.approx(1 - 1 * 2 / 6)]  # the wrong head hits 1 of 3
    assert report.best_head() == (0, 0, 0.0)
    summary = report.summary()
    assert summary["aer_best"] == 0.0 and (summary["aer_best_layer"], summary["aer_best_head"]) == (0, 0)
    assert all(0.0 <= value <= 1.0 for value in summary["aer_by_layer"])


def test_no_cross_attention_no_report_and_pairs_without_gold_are_skipped():
    src_ids, tgt_ids = [[4, 5, 6, 7, 3]], [[8, 9, 10]]
    assert measure_alignment(_AttentionModel(None), _Pieces(NAMES), src_ids, tgt_ids, [None]) is None
    model = _AttentionModel([_gold_attention(4, 3, [0, 2, 3])])
    assert measure_alignment(model, _Pieces(NAMES), src_ids, tgt_ids, [None]).sentences == 0


def test_batched_rows_with_padding_match_one_at_a_time():
    torch.manual_seed(0)
    src_ids, tgt_ids = [[4, 5, 6, 7, 3], [4, 7, 3]], [[8, 9, 10], [9, 10]]
    gold = [parse_alignment("0-0 1-1 2-2"), parse_alignment("0-0 1-1")]
    batch = collate(src_ids, tgt_ids)
    maps = torch.rand(2, 3, batch.tgt_in.shape[1], batch.src.shape[1]).softmax(-1)  # (B, H, T, S), padding too
    together = measure_alignment(_AttentionModel([maps]), _Pieces(NAMES), src_ids, tgt_ids, gold)
    alone = [
        measure_alignment(
            _AttentionModel([maps[b : b + 1, :, : len(tgt_ids[b]) + 1, : len(src_ids[b])]]),
            _Pieces(NAMES),
            src_ids[b : b + 1],
            tgt_ids[b : b + 1],
            gold[b : b + 1],
        )
        for b in range(2)
    ]
    assert together.sentences == 2
    fields = lambda c: (c.predicted, c.sure, c.hit_sure, c.hit_possible)  # noqa: E731
    for head in range(3):
        summed = [sum(values) for values in zip(*(fields(one.heads[0][head]) for one in alone))]
        assert list(fields(together.heads[0][head])) == summed


def test_gold_of_the_embedded_corpus_in_both_directions():
    data = DataConfig(num_valid=5, num_test=6)
    from minitrans.data.generated import generate_aligned_corpus

    rows = generate_aligned_corpus(0, 5, 6)["test"]
    en, de, alignment = rows[0]
    (forward,) = gold_for_pairs(data, [en], [de])
    assert forward == parse_alignment(alignment)
    (backward,) = gold_for_pairs(DataConfig(src_lang="de", tgt_lang="en", num_valid=5, num_test=6), [de], [en])
    assert backward.sure == {(j, i) for i, j in forward.sure}
    assert gold_for_pairs(data, ["Not a sentence of the grammar."], ["x"]) == [None]
    assert gold_for_pairs(DataConfig(name="multi30k"), [en], [de]) is None
    assert as_links([2, 0]) == {(2, 0), (0, 1)}


class _WordPieces:
    """A tokenizer stand-in with one piece per word: ids 4.. are "▁" + word."""

    def __init__(self):
        self.names = ["<pad>", "<unk>", "<s>", "</s>"]
        self.ids: dict[str, int] = {}

    def encode(self, sentence: str) -> list[int]:
        for word in sentence.split():
            self.ids.setdefault(word, len(self.names))
            if self.ids[word] == len(self.names):
                self.names.append("▁" + word)
        return [self.ids[word] for word in sentence.split()]

    def src_pieces(self, ids):
        return [self.names[i] for i in ids]

    tgt_pieces = src_pieces


@pytest.mark.parametrize("src_lang, tgt_lang", [("en", "de"), ("de", "en")])
def test_attention_drawn_from_the_gold_of_corpus_pairs_gives_aer_zero(src_lang, tgt_lang):
    import datasets

    from minitrans.analysis.alignment import split_alignment
    from minitrans.data.generated import generate_aligned_corpus

    data = DataConfig(src_lang=src_lang, tgt_lang=tgt_lang, num_valid=12, num_test=10)
    rows = generate_aligned_corpus(0, 12, 10)["valid"]
    pieces = _WordPieces()
    pairs = [(en, de) if src_lang == "en" else (de, en) for en, de, _ in rows]
    src_ids = [pieces.encode(src) + [3] for src, _ in pairs]
    tgt_ids = [pieces.encode(tgt) for _, tgt in pairs]
    split = datasets.Dataset.from_dict(
        {"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs], "src_ids": src_ids, "tgt_ids": tgt_ids}
    )
    batch = collate(src_ids, tgt_ids)
    maps = torch.zeros(len(rows), 2, *batch.tgt_in.shape[1:], batch.src.shape[1])  # two heads: gold, and off by one
    for b, (_, _, alignment) in enumerate(rows):
        gold = parse_alignment(alignment, reverse=src_lang != "en")
        for j in range(len(tgt_ids[b])):
            i = min(i for i, jj in gold.possible if jj == j)
            maps[b, 0, j, i] = 1.0
            maps[b, 1, j, (i + 1) % (len(src_ids[b]) - 1)] = 1.0
    report = split_alignment(_AttentionModel([maps]), pieces, split, data, max_len=200)
    assert report.sentences == len(rows)
    grid = report.aer_grid()[0]
    assert grid[0] == 0.0 and grid[1] > 0.5
    # a model whose positions cannot hold the pairs measures none of them
    none_fit = split_alignment(_AttentionModel([maps]), pieces, split, data, max_len=3)
    assert none_fit is None or none_fit.sentences == 0


@pytest.mark.parametrize("kind, shape", [("rnn_attention", (1, 1)), ("rnn", None)])
def test_an_rnns_attention_counts_as_one_layer_of_one_head_or_as_none(kind, shape):
    from minitrans.core.config import RNNConfig
    from minitrans.models.build import VocabSizes, build_model

    torch.manual_seed(0)
    model = build_model(RNNConfig(kind=kind, d_embed=8, d_hidden=8), VocabSizes(len(NAMES), len(NAMES)))
    src_ids, tgt_ids = [[4, 5, 6, 7, 3], [4, 7, 3]], [[8, 9, 10], [9, 10]]
    gold = [parse_alignment("0-0 1-1 2-2"), parse_alignment("0-0 1-1")]
    report = measure_alignment(model, _Pieces(NAMES), src_ids, tgt_ids, gold)
    if shape is None:
        assert report is None
    else:
        assert (len(report.heads), len(report.heads[0])) == shape and report.sentences == 2
        assert 0.0 <= report.best_head()[2] <= 1.0


def test_pairs_longer_than_the_models_positions_are_left_out_not_fed_to_it():
    import datasets

    from minitrans.analysis.alignment import split_alignment
    from minitrans.core.config import TransformerConfig
    from minitrans.data.generated import generate_aligned_corpus
    from minitrans.models.build import VocabSizes, build_model

    torch.manual_seed(0)
    data = DataConfig(num_valid=12, num_test=10)
    generated = generate_aligned_corpus(0, 12, 10)
    pieces = _WordPieces()
    pairs = [(en, de) for en, de, _ in generated["valid"]]
    src_ids = [pieces.encode(src) + [3] for src, _ in pairs]
    tgt_ids = [pieces.encode(tgt) for _, tgt in pairs]
    max_len = sorted(len(s) for s in src_ids)[len(src_ids) // 2]  # about half the pairs fit
    model = build_model(
        TransformerConfig(d_model=8, num_heads=2, d_ff=16, num_encoder_layers=1, num_decoder_layers=1, max_len=max_len),
        VocabSizes(len(pieces.names), len(pieces.names)),
    )
    split = datasets.Dataset.from_dict(
        {"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs], "src_ids": src_ids, "tgt_ids": tgt_ids}
    )
    fitting = sum(len(s) <= max_len and len(t) < max_len for s, t in zip(src_ids, tgt_ids))
    assert 0 < fitting < len(pairs)
    report = split_alignment(model, pieces, split, data, max_len=max_len)
    assert report.sentences == fitting

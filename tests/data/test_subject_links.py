"""Tests for the verb-to-subject links of long-range syntax (minitrans/data/grammar.py's
subject_links, minitrans/data/probes.py) and their scoring at subword positions
(minitrans/analysis/head_roles.py)."""

from __future__ import annotations

import pytest
import torch
from helpers.grammar import clause, main, np, sentence, whom
from helpers.models import tiny_model

from minitrans.analysis.head_roles import (
    linked_share,
    measure_self_attention_roles,
    piece_positions,
    subject_links_at_pieces,
)
from minitrans.data.grammar import render, subject_links
from minitrans.data.probes import subject_pairs


def words_of(text: str, links) -> list[tuple[list[str], list[str]]]:
    words = text.split()
    return [([words[i] for i in verb], [words[i] for i in nouns]) for verb, nouns in links]


def test_a_verb_is_linked_to_its_subject_across_an_object_gap_relative_clause():
    tree = sentence(clause(np("the dog", whom("the man", "sees")), "sleeps"))
    en, de = render(tree)
    assert (en, de) == ("The dog that the man sees sleeps.", "Der Hund, den der Mann sieht, schläft.")
    en_links, de_links = subject_links(tree)
    assert en_links == [([6], [1])] and de_links == [([6], [1])]
    assert words_of(en, en_links) == [(["sleeps."], ["dog"])]
    assert words_of(de, de_links) == [(["schläft."], ["Hund,"])]


def test_a_subject_without_a_relative_clause_gives_no_link():
    assert subject_links(sentence(clause("the dog", "sees", "the man"))) == ([], [])


def test_a_fronted_adverb_puts_the_german_verb_before_its_linked_subject():
    tree = sentence(main(clause(np("the dog", whom("the man", "sees")), "sleeps"), adverb="today"))
    en, de = render(tree)
    assert de == "Heute schläft der Hund, den der Mann sieht."
    en_links, de_links = subject_links(tree)
    assert words_of(en, en_links) == [(["sleeps."], ["dog"])]
    assert words_of(de, de_links) == [(["schläft"], ["Hund,"])]  # the verb before its subject


def test_a_generated_pair_links_its_verb_to_both_coordinated_subjects():
    """Checked by hand: the babies that play, and a nurse, cry (weinen)."""
    pair = subject_pairs(1, seed=0, max_words=10)[0]
    assert pair.en == "A bad small nurse and the babies that play cry."
    assert pair.de == "Eine schlechte kleine Krankenschwester und die Babys, die spielen, weinen."
    assert words_of(pair.en, pair.en_links) == [(["cry."], ["nurse", "babies"])]
    assert words_of(pair.de, pair.de_links) == [(["weinen."], ["Krankenschwester", "Babys,"])]


def test_subject_pairs_are_distinct_and_within_their_lengths():
    pairs = subject_pairs(20, seed=3, min_words=5, max_words=12)
    assert len(pairs) == 20 and len({p.en for p in pairs}) == 20
    assert all(5 <= len(p.en.split()) <= 12 and p.en_links for p in pairs)


PIECES = ["▁The", "▁dog", "▁that", "▁the", "▁man", "▁sees", "▁sle", "eps", "."]


def test_word_links_map_to_the_pieces_that_hold_letters():
    assert piece_positions(PIECES, [6]) == [6, 7]  # "sleeps." without its period
    assert piece_positions(PIECES, [1], offset=1) == [2]
    links = subject_links_at_pieces(PIECES, PIECES, [([6], [1])], [([6], [1]), ([1], [6])])
    assert links["enc_self"] == [([6, 7], [1])]
    assert links["dec_self"] == [([7, 8], [2])]  # shifted by BOS; the look-ahead link dropped


def test_a_head_putting_all_of_a_verbs_weight_on_its_gold_subject_scores_one():
    length = len(PIECES)
    maps = torch.full((1, 2, length, length), 1.0 / length)  # head 0 uniform
    (rows, columns) = subject_links_at_pieces(PIECES, PIECES, [([6], [1])], [])["enc_self"][0]
    for row in rows:
        maps[0, 1, row] = 0.0
        maps[0, 1, row, columns] = 1.0 / len(columns)
    share = linked_share(maps, [(0, rows, columns)])
    assert share.tolist() == pytest.approx([1.0 / length, 1.0])


def test_a_real_models_subject_shares_are_shares_and_batching_does_not_change_them():
    model = tiny_model(vocab=30)
    src_ids = [[5, 6, 7, 8, 9, 3], [9, 10, 11, 3]]
    tgt_ids = [[11, 12, 13, 14], [14, 15, 16]]
    links = [{"enc_self": [([4], [1])], "dec_self": [([4], [1, 2])]}, {"enc_self": [([2], [0])], "dec_self": []}]
    roles = measure_self_attention_roles(model, src_ids, tgt_ids, links=links)
    one_by_one = measure_self_attention_roles(model, src_ids, tgt_ids, batch_size=1, links=links)
    for kind in ("enc_self", "dec_self"):
        for scores, again in zip(roles[kind][0], one_by_one[kind][0]):
            assert 0.0 < scores["subject"] < 1.0
            assert scores["subject"] == pytest.approx(again["subject"], abs=1e-6)
    assert "subject" not in measure_self_attention_roles(model, src_ids, tgt_ids)["enc_self"][0][0]


@pytest.fixture(scope="module")
def probe_pairs():
    """Thirty subject pairs and a tokenizer trained on them."""
    from minitrans.data.tokenizer import Tokenizer

    pairs = subject_pairs(30, seed=0, max_words=12)
    return pairs, Tokenizer.train([p.en for p in pairs], [p.de for p in pairs], vocab_size=400)


def test_the_subject_probes_links_lie_inside_its_sentences(probe_pairs):
    from minitrans.analysis.head_roles import subject_probe
    from minitrans.core.config import DataConfig

    pairs, tokenizer = probe_pairs
    src_ids, tgt_ids, links = subject_probe(tokenizer, DataConfig(max_words=12), 30)
    assert len(src_ids) == len(tgt_ids) == len(links) == 30
    assert tokenizer.src.decode(src_ids[0][:-1]) == pairs[0].en
    for src, tgt, link in zip(src_ids, tgt_ids, links):
        assert link["enc_self"] and all(max(q + k) < len(src) - 1 for q, k in link["enc_self"])  # not the EOS
        assert all(max(k) < min(q) <= len(tgt) for q, k in link["dec_self"])  # BOS + target, subject first


def test_the_subject_probe_follows_the_runs_languages_and_corpus(probe_pairs):
    from minitrans.analysis.head_roles import subject_probe
    from minitrans.core.config import DataConfig

    pairs, tokenizer = probe_pairs
    flipped = subject_probe(tokenizer, DataConfig(max_words=12, src_lang="de", tgt_lang="en"), 30)
    assert tokenizer.src.decode(flipped[0][0][:-1]) == pairs[0].de
    assert subject_probe(tokenizer, DataConfig(name="multi30k", src_lang="de", tgt_lang="en"), 30) is None

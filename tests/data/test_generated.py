"""Tests for the embedded English→German corpus generator (minitrans/data/generated.py).

The golden pairs are built from the grammar's own building blocks, not from random output,
and each German string was checked by hand.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from helpers.grammar import GOLDEN, np, parts

from minitrans.data.generated import generate_corpus, generate_pair, length_buckets
from minitrans.data.grammar import (
    Clause,
    MainClause,
    NounPhrase,
    PrepPhrase,
    RelativeClause,
    SubordinateClause,
    main_clause_en,
    noun_phrase_de,
    noun_phrase_en,
    render,
)
from minitrans.data.growth import generate_sentence
from minitrans.data.lexicon import (
    ACC,
    DAT,
    LEXICON_SIZE,
    NOM,
    NOUNS,
    VERBS,
)


# ------------------------------------------------------------------------ noun phrases
@pytest.mark.parametrize(
    "english, forms",
    [
        ("the big dog", ("der große Hund", "den großen Hund", "dem großen Hund")),
        ("a big dog", ("ein großer Hund", "einen großen Hund", "einem großen Hund")),
        ("the old woman", ("die alte Frau", "die alte Frau", "der alten Frau")),
        ("an old woman", ("eine alte Frau", "eine alte Frau", "einer alten Frau")),
        ("the small child", ("das kleine Kind", "das kleine Kind", "dem kleinen Kind")),
        ("a small child", ("ein kleines Kind", "ein kleines Kind", "einem kleinen Kind")),
        ("the big dogs", ("die großen Hunde", "die großen Hunde", "den großen Hunden")),
        ("big dogs", ("große Hunde", "große Hunde", "großen Hunden")),
        ("no big dogs", ("keine großen Hunde", "keine großen Hunde", "keinen großen Hunden")),
        ("his new car", ("sein neues Auto", "sein neues Auto", "seinem neuen Auto")),
        ("her expensive coat", ("ihr teurer Mantel", "ihren teuren Mantel", "ihrem teuren Mantel")),
        ("our red books", ("unsere roten Bücher", "unsere roten Bücher", "unseren roten Büchern")),
        ("my tired cat", ("meine müde Katze", "meine müde Katze", "meiner müden Katze")),
        ("a dark forest", ("ein dunkler Wald", "einen dunklen Wald", "einem dunklen Wald")),
        ("the beautiful old house", ("das schöne alte Haus", "das schöne alte Haus", "dem schönen alten Haus")),
        (
            "a big black dog",
            ("ein großer schwarzer Hund", "einen großen schwarzen Hund", "einem großen schwarzen Hund"),
        ),
        ("the girls", ("die Mädchen", "die Mädchen", "den Mädchen")),  # plural in -n: no extra -n
        ("the cars", ("die Autos", "die Autos", "den Autos")),  # plural in -s: no dative -n
        ("the children", ("die Kinder", "die Kinder", "den Kindern")),
        ("the trees", ("die Bäume", "die Bäume", "den Bäumen")),
        ("the mice", ("die Mäuse", "die Mäuse", "den Mäusen")),
        ("the men", ("die Männer", "die Männer", "den Männern")),
    ],
)
def test_noun_phrase_declension(english, forms):
    phrase = np(english)
    assert " ".join(noun_phrase_en(phrase)) == english
    assert tuple(" ".join(noun_phrase_de(phrase, case)) for case in (NOM, ACC, DAT)) == forms


# --------------------------------------------------------------------- golden sentences (helpers.grammar.GOLDEN)
@pytest.mark.parametrize("tree, english, german", GOLDEN, ids=[en for _, en, _ in GOLDEN])
def test_golden_pairs(tree, english, german):
    assert render(tree) == (english, german)


def test_the_golden_pairs_exercise_every_construction_the_grammar_has():
    """What the hand-checked pairs must cover for a grammar bug to meet one of them."""
    found = [part for tree, _, _ in GOLDEN for part in parts(tree)]
    kinds = lambda cls: [part for part in found if isinstance(part, cls)]  # noqa: E731
    assert {verb.frame for verb in kinds(type(VERBS["sees"]))} == set("iadgc")
    noun_phrases = kinds(NounPhrase)
    assert {(n.noun.gender, n.is_plural) for n in noun_phrases} == {(g, p) for g in "mfn" for p in (False, True)}
    assert {n.det.de_stem for n in noun_phrases} >= {"", "ein", "kein"}  # definite, indefinite, negative
    assert any(n.adjectives for n in noun_phrases)
    assert {pp.prep.case for pp in kinds(PrepPhrase)} == {ACC, DAT}
    assert {rel.is_subject_gap for rel in kinds(RelativeClause)} == {True, False}
    assert kinds(SubordinateClause) and any(c.recipient for c in kinds(Clause))
    assert any(c.complement for c in kinds(Clause)) and any(len(c.subject) == 2 for c in kinds(Clause))
    mains = kinds(MainClause)
    assert any(m.adverb for m in mains) and any(m.fronted for m in mains) and any(m.trailing for m in mains)
    assert {word.de for sentence, _, _ in GOLDEN for word in sentence.coordinators} == {"und", "aber"}


# ----------------------------------------------------------------------------- lexicon
def test_lexicon_size_and_forms():
    assert LEXICON_SIZE >= 150
    for noun in NOUNS.values():
        assert noun.gender in "mfn" and noun.de_sg[0].isupper() and noun.de_pl[0].isupper()
    assert len({noun.en_pl for noun in NOUNS.values()} & set(NOUNS)) == 0  # plural never equals a singular
    for verb in VERBS.values():
        assert verb.frame in "iadgc" and verb.de_pl.endswith("n")


# ------------------------------------------------------------------------ random pairs
def test_generate_pair_length_is_close_to_target():
    rng = random.Random(0)
    for target in range(4, 56, 3):
        for _ in range(5):
            english, _ = generate_pair(rng, target)
            assert abs(len(english.split()) - target) <= max(3, target // 10)


def test_grown_sentence_renders_consistently():
    rng = random.Random(5)
    for target in (6, 20, 45):
        tree = generate_sentence(rng, target)
        english, german = render(tree)
        assert len(english.split()) == len(main_clause_en(tree.mains[0])) + sum(
            1 + len(main_clause_en(m)) for m in tree.mains[1:]
        )
        assert ",," not in german and ", ." not in german and not german.endswith(",.")


def test_one_german_translation_per_english_sentence():
    rng = random.Random(11)
    translations: dict[str, str] = {}
    for _ in range(3000):
        english, german = generate_pair(rng, rng.randint(4, 7))  # short: many repeats
        assert translations.setdefault(english, german) == german


# ------------------------------------------------------------------------------ corpus
SMALL = dict(num_train=1500, num_valid=100, num_test=250, seed=7)


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(**SMALL)


def test_corpus_sizes(corpus):
    assert {split: len(pairs) for split, pairs in corpus.items()} == {"train": 1500, "valid": 100, "test": 250}


def test_corpus_is_deterministic(corpus):
    assert generate_corpus(**SMALL) == corpus
    tiny = dict(num_train=50, num_valid=5, num_test=10)
    assert generate_corpus(**tiny, seed=7) != generate_corpus(**tiny, seed=8)


def test_splits_are_disjoint_without_duplicates(corpus):
    sources = [english for pairs in corpus.values() for english, _ in pairs]
    assert len(sources) == len(set(sources))


def test_test_split_is_stratified_by_length(corpus):
    buckets = length_buckets(4, 55)
    assert buckets == [(4, 10), (11, 20), (21, 30), (31, 40), (41, 55)]
    counts = Counter(
        next(i for i, (lo, hi) in enumerate(buckets) if lo <= len(en.split()) <= hi) for en, _ in corpus["test"]
    )
    assert counts == {i: 50 for i in range(5)}
    assert sum(len(en.split()) >= 45 for en, _ in corpus["test"]) >= 10


def test_lengths_respect_range_and_favour_short_training_sentences(corpus):
    for pairs in corpus.values():
        assert all(4 <= len(en.split()) <= 55 for en, _ in pairs)
    train = sorted(len(en.split()) for en, _ in corpus["train"])
    assert train[0] <= 5 and train[-1] >= 45
    assert sum(n <= 30 for n in train) / len(train) > 0.6


def test_custom_range_is_respected():
    pairs = generate_corpus(num_train=200, num_valid=20, num_test=30, min_words=6, max_words=12, seed=3)
    assert all(6 <= len(en.split()) <= 12 for split in pairs.values() for en, _ in split)
    assert length_buckets(6, 12) == [(6, 10), (11, 12)]


def test_sentences_are_capitalised_and_end_with_a_period(corpus):
    for pairs in corpus.values():
        for english, german in pairs:
            for text in (english, german):
                assert text[0].isupper() and text.endswith(".") and not text.endswith(",.")
                assert text.count(".") == 1 and "  " not in text and not re.search(r" [,.]", text)

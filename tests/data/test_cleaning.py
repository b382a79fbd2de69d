"""Cleaning of training pairs: each filter drops what it should, counts it under its reason,
can be turned off, and nothing is dropped without being counted."""

from __future__ import annotations

import pyarrow as pa
import pytest

from minitrans.core.checks import ConfigError
from minitrans.core.config import CleanConfig
from minitrans.data.cleaning import clean_pairs, emptied_message


def clean(pairs, **settings):
    table = pa.table({"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs]})
    out, report = clean_pairs(table, CleanConfig(**settings))
    kept = list(zip(out.column("src").to_pylist(), out.column("tgt").to_pylist()))
    assert report["pairs"] == len(pairs)
    assert report["kept"] == len(kept) == len(pairs) - sum(report["dropped"].values())  # nothing silent
    return kept, report


def test_normalising_strips_collapses_and_removes_control_characters():
    pairs = [
        ("  a \t b  ", "x\u00a0\u00a0y"),
        ("\ufeffbom\x07bell", "ok"),
        ("zwnj\u200ckept", "line\u2028sep"),
        ("clean", "clean"),
    ]
    kept, report = clean(pairs)
    assert kept == [("a b", "x y"), ("bombell", "ok"), ("zwnj\u200ckept", "line sep"), ("clean", "clean")]
    assert report["normalized"] == 3
    assert clean(pairs, normalize=False)[0] == pairs


@pytest.mark.parametrize(
    ("settings", "reason", "bad"),
    [
        ({}, "empty", [("", "x"), ("y", "   "), ("\x00", "z")]),
        ({"max_chars": 20}, "too_long", [("a" * 21, "b" * 10), ("c" * 10, "d" * 21)]),
        ({"max_ratio": 3.0}, "length_ratio", [("abcdefgh", "ab"), ("a", "abcd")]),
        ({"drop_duplicates": True}, "duplicate", [("good one", "gut eins"), (" good  one", "gut eins ")]),
    ],
)
def test_each_filter_counts_what_it_drops_and_can_be_disabled(settings, reason, bad):
    good = [("good one", "gut eins"), ("another pair", "ein anderes Paar")]
    kept, report = clean(good + bad, **settings)
    assert kept == good
    assert report["dropped"][reason] == len(bad)
    assert sum(report["dropped"].values()) == len(bad)
    off = {"empty": {"drop_empty": False}, "too_long": {"max_chars": None}}.get(reason)
    off = off or {"length_ratio": {"max_ratio": None}, "duplicate": {"drop_duplicates": False}}[reason]
    kept_off, report_off = clean(good + bad, **(settings | off))
    assert report_off["dropped"][reason] == 0
    assert len(kept_off) > len(kept)


def test_duplicates_keep_the_first_occurrence_in_order():
    pairs = [("b", "2"), ("a", "1"), ("b", "2"), ("c", "3"), ("a", "1")]
    kept, report = clean(pairs, drop_duplicates=True)
    assert kept == [("b", "2"), ("a", "1"), ("c", "3")]
    assert report["dropped"]["duplicate"] == 2


def test_filters_count_a_pair_once_under_the_first_reason_that_drops_it():
    kept, report = clean([("", "x" * 50)], max_chars=10, max_ratio=2.0)
    assert report["dropped"] == {"empty": 1, "too_long": 0, "length_ratio": 0, "duplicate": 0}


def test_the_emptied_message_names_the_filter_that_emptied_the_corpus():
    _, report = clean([("a" * 20, "b"), ("c" * 30, "d"), ("", "e")], max_ratio=3.0)
    message = emptied_message(report, CleanConfig(max_ratio=3.0))
    assert "data.clean.max_ratio=3.0" in message and "length_ratio 2" in message and "empty 1" in message


def test_impossible_settings_are_refused():
    with pytest.raises(ConfigError, match="data.clean.max_ratio"):
        CleanConfig(max_ratio=0.5)
    with pytest.raises(ConfigError, match="data.clean.max_chars"):
        CleanConfig(max_chars=0)


def test_a_pair_exactly_at_max_chars_is_kept_and_one_character_more_is_dropped():
    kept, report = clean(
        [("a" * 10, "b" * 3), ("c" * 3, "d" * 10), ("e" * 11, "f" * 3), ("g" * 3, "h" * 11)],
        max_chars=10,
        max_ratio=None,
    )
    assert kept == [("a" * 10, "b" * 3), ("c" * 3, "d" * 10)]
    assert report["dropped"]["too_long"] == 2


@pytest.mark.parametrize(
    ("src", "tgt", "is_kept"),
    [
        ("a" * 10, "b" * 5, True),  # exactly 2.0
        ("b" * 5, "a" * 10, True),  # either side may be the longer one
        ("a" * 11, "b" * 5, False),  # 2.2
        ("a" * 12, "恭喜", True),  # two Han characters weigh 6: exactly 2.0
        ("a" * 13, "恭喜", False),  # 13 / 6
        ("a", "bb", True),  # 2 / 1
        ("a", "bbb", False),  # 3 / 1: the shorter side counts at least 1
    ],
)
def test_a_pair_exactly_at_max_ratio_is_kept_and_one_just_past_it_is_dropped(src, tgt, is_kept):
    kept, report = clean([(src, tgt)], max_ratio=2.0)
    assert (kept == [(src, tgt)]) is is_kept
    assert report["dropped"]["length_ratio"] == (0 if is_kept else 1)

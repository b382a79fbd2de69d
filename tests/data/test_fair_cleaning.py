"""The length-ratio filter measures text in script-weighted characters, so correct pairs of a
Latin-script and a CJK language pass it, and the report shows which rule dropped what."""

from __future__ import annotations

import pyarrow as pa
import pytest

from minitrans.core.config import CleanConfig
from minitrans.data.cleaning import EXAMPLE_CHARS, EXAMPLES, clean_pairs, text_length
from minitrans.data.corpus import describe

# correct translations whose sides differ more than 3x in plain characters (the first two: over 5x)
CORRECT = [
    ("Congratulations!", "恭喜！"),
    ("I understand it.", "我懂。"),
    ("Please sit down.", "请坐。"),
    ("I like cats very much.", "猫が大好き。"),
    ("Thank you very much.", "감사합니다."),
]


def table(pairs) -> pa.Table:
    return pa.table({"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs]})


def test_a_han_character_counts_three_kana_and_hangul_two():
    lengths = text_length(pa.array(["abc", "恭喜！", "ひらがな", "한국", "Привет"])).to_pylist()
    assert lengths == [3, 3 + 3 + 1, 8, 4, 6]


def test_correct_cjk_pairs_pass_the_ratio_filter_that_plain_characters_failed():
    assert all(len(src) / len(tgt) > 3 for src, tgt in CORRECT)  # plain characters would drop every one
    kept, report = clean_pairs(table(CORRECT), CleanConfig(max_ratio=3.0))
    assert report["dropped"]["length_ratio"] == 0 and kept.num_rows == len(CORRECT)


def test_a_mismatched_cjk_pair_is_still_dropped_and_shown():
    wrong = [("Hi.", "如果一个人在成人前没有机会习得目标语言，他对该语言的认识达到母语者程度的机会是相当小的。")]
    wrong += [("If a person has not had a chance to acquire his target language by the time he's an adult.", "嗨。")]
    kept, report = clean_pairs(table(CORRECT + wrong), CleanConfig())
    assert report["dropped"]["length_ratio"] == 2 and kept.num_rows == len(CORRECT)
    assert report["examples"]["length_ratio"] == [list(pair) for pair in wrong]


def test_the_report_shows_at_most_two_examples_of_each_rule():
    pairs = [("", "leer"), ("a", ""), ("b", " "), ("x" * 50, "y"), ("same", "pair"), ("same", "pair"), ("same", "pair")]
    pairs += [("s" * 30, "t" * 30)]
    _, report = clean_pairs(table(pairs), CleanConfig(max_chars=20, drop_duplicates=True))
    assert report["dropped"] == {"empty": 3, "too_long": 2, "length_ratio": 0, "duplicate": 2}
    assert report["examples"]["empty"] == [["", "leer"], ["a", ""]]
    assert report["examples"]["too_long"] == [["x" * 50, "y"], ["s" * 30, "t" * 30]]
    assert report["examples"]["duplicate"] == [["same", "pair"], ["same", "pair"]]
    assert "length_ratio" not in report["examples"] and all(len(e) <= EXAMPLES for e in report["examples"].values())


def test_a_huge_dropped_line_is_shown_by_its_start_and_length_in_the_report():
    """A 10 MB line is dropped as too long; the report (train.log, console, summary.json) shows
    its first EXAMPLE_CHARS characters and its length, not the whole line."""
    huge = "w" * 10_000_117
    _, cleaning = clean_pairs(table([(huge, "kurz"), ("fine", "gut")]), CleanConfig(max_chars=100))
    (example,) = cleaning["examples"]["too_long"]
    assert example == ["w" * EXAMPLE_CHARS + "… (10,000,117 characters)", "kurz"]
    report = {"corpus": "hf", "source": "x.tsv", "cleaning": cleaning, "splits": {}, "held_out": {}}
    assert max(len(line) for line in describe(report)) < 2 * EXAMPLE_CHARS


def test_the_log_names_each_rule_with_its_examples():
    _, cleaning = clean_pairs(table([("Hi.", "嗨。"), ("", "x"), ("a b c d e f g h i j k l", "z")]), CleanConfig())
    report = {"corpus": "hf", "source": "cmn.txt", "cleaning": cleaning, "splits": {}, "held_out": {}}
    lines = describe(report)
    assert "  empty, e.g. '' -> 'x'" in lines
    assert any(line.startswith("  length_ratio, e.g. 'a b c d e f g h i j k l' -> 'z'") for line in lines)


@pytest.mark.parametrize("ratio", [None])
def test_no_ratio_limit_keeps_everything(ratio):
    _, report = clean_pairs(table([("a" * 40, "b")]), CleanConfig(max_ratio=ratio))
    assert report["dropped"]["length_ratio"] == 0 and "length_ratio" not in report["examples"]

"""Cleaning of training pairs, every dropped pair counted by its reason.

Vectorised with Arrow compute functions, so a million pairs take a second or two. The
filters run in a fixed order and each counts only the pairs still there when it runs:

    normalize        strip both sides, remove control characters and the byte-order mark,
                     collapse runs of whitespace to one space (pairs changed, none dropped)
    empty            a side is empty
    too_long         a side has more than ``max_chars`` characters
    length_ratio     the longer side has more than ``max_ratio`` times the shorter's length, in
                     characters weighted by script (:func:`text_length`), so that a correct
                     English-Chinese pair ("Congratulations!" / "恭喜！") is not dropped
    duplicate        the same pair (after normalising) appeared earlier

The report counts each filter's drops and shows the first two pairs it dropped.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from minitrans.core.config import CleanConfig

# Control characters other than whitespace, and U+FEFF; tabs, newlines and other spaces
# become plain spaces below. Format characters such as U+200C (ZWNJ) carry meaning in some
# scripts and are kept.
_CONTROL = r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\x{feff}]"
_SPACES = r"[\s\x{85}\p{Zs}\x{2028}\x{2029}]+"
REASONS = ("empty", "too_long", "length_ratio", "duplicate")
EXAMPLES = 2  # dropped pairs shown per filter in the report
EXAMPLE_CHARS = 200  # of each text shown there: a 10 MB line is shown by its start and its length
# How much text one character of a script stands for, in Latin characters: the median of
# English characters per character of the translation, measured on parallel text (Tatoeba
# en-zh 3.1 per character, 3.6 per Han character; passages en-ja 2.3 with about 40 % kanji,
# en-ko 1.9). Other scripts count 1: German, French, Czech, Vietnamese, Finnish and Thai are
# within 0.8-1.3 English characters per character. With these weights the median
# longer/shorter ratio of Tatoeba's en-zh pairs is 1.20 (3.12 in plain characters: 612 of
# 29,155 pairs over 5) against 1.17 for Multi30k en-de and 1.16 for en-fr.
SCRIPT_WEIGHTS = ((r"\p{Han}", 3), (r"[\p{Hiragana}\p{Katakana}]", 2), (r"\p{Hangul}", 2))
FILTER_KEYS = {
    "empty": "data.clean.drop_empty",
    "too_long": "data.clean.max_chars",
    "length_ratio": "data.clean.max_ratio",
    "duplicate": "data.clean.drop_duplicates",
}


def normalize_text(column: pa.Array) -> pa.Array:
    text = pc.replace_substring_regex(column, _CONTROL, "")
    text = pc.replace_substring_regex(text, _SPACES, " ")
    return pc.utf8_trim(text, " ")


def text_length(column: pa.Array) -> pa.Array:
    """The length the ratio filter compares: characters, each Han character counting 3 and
    each kana or Hangul syllable 2 (:data:`SCRIPT_WEIGHTS`), as float64."""
    length = pc.cast(pc.utf8_length(column), pa.float64())
    for pattern, weight in SCRIPT_WEIGHTS:
        extra = pc.multiply(pc.cast(pc.count_substring_regex(column, pattern), pa.float64()), float(weight - 1))
        length = pc.add(length, extra)
    return length


def clean_pairs(table: pa.Table, cfg: CleanConfig) -> tuple[pa.Table, dict]:
    """Filter a table with string columns ``src`` and ``tgt``; returns (kept rows, report).
    The report: ``{"pairs": n_in, "normalized": changed, "dropped": {reason: n}, "kept": n_out,
    "examples": {reason: [[src, tgt], ...]}}`` (the first pairs each filter dropped)."""
    src, tgt = table.column("src").combine_chunks(), table.column("tgt").combine_chunks()
    report = {"pairs": len(table), "normalized": 0, "dropped": dict.fromkeys(REASONS, 0), "kept": 0, "examples": {}}
    if cfg.normalize:
        new_src, new_tgt = normalize_text(src), normalize_text(tgt)
        changed = pc.or_(pc.not_equal(src, new_src), pc.not_equal(tgt, new_tgt))
        report["normalized"] = int(pc.sum(pc.fill_null(changed, False)).as_py() or 0)
        src, tgt = new_src, new_tgt
    src_len, tgt_len = pc.utf8_length(src), pc.utf8_length(tgt)
    keep = pa.array([True] * len(table)) if len(table) else pa.array([], pa.bool_())

    def drop(reason: str, mask) -> None:
        nonlocal keep
        mask = pc.and_(keep, pc.fill_null(mask, True))
        report["dropped"][reason] = int(pc.sum(mask).as_py() or 0)
        if report["dropped"][reason]:
            report["examples"][reason] = _examples(src, tgt, pc.indices_nonzero(mask))
        keep = pc.and_not(keep, mask)

    if cfg.drop_empty:
        drop("empty", pc.or_(pc.equal(src_len, 0), pc.equal(tgt_len, 0)))
    if cfg.max_chars is not None:
        drop("too_long", pc.greater(pc.max_element_wise(src_len, tgt_len), cfg.max_chars))
    if cfg.max_ratio is not None:
        src_weighted, tgt_weighted = text_length(src), text_length(tgt)
        longer = pc.max_element_wise(src_weighted, tgt_weighted)
        shorter = pc.max_element_wise(pc.min_element_wise(src_weighted, tgt_weighted), 1.0)
        drop("length_ratio", pc.greater(pc.divide(longer, shorter), cfg.max_ratio))
    out = pa.table({"src": src, "tgt": tgt}).filter(keep)
    if cfg.drop_duplicates and len(out):
        seen_first = _first_occurrences(out)
        report["dropped"]["duplicate"] = len(out) - len(seen_first)
        if report["dropped"]["duplicate"]:
            repeats = pc.indices_nonzero(
                pc.invert(pc.is_in(pa.array(range(len(out)), pa.int64()), value_set=seen_first))
            )
            report["examples"]["duplicate"] = _examples(out.column("src"), out.column("tgt"), repeats)
        out = out.take(seen_first)
    report["kept"] = len(out)
    return out, report


def _examples(src, tgt, rows: pa.Array) -> list[list[str]]:
    rows = rows.slice(0, EXAMPLES)
    shown = [[_cut(text) for text in pc.take(column, rows).to_pylist()] for column in (src, tgt)]
    return [list(pair) for pair in zip(*shown)]


def _cut(text: str) -> str:
    """A text as the report shows it: whole, or its start and its length in characters."""
    return text if len(text) <= EXAMPLE_CHARS else f"{text[:EXAMPLE_CHARS]}… ({len(text):,} characters)"


def _first_occurrences(table: pa.Table) -> pa.Array:
    """Row numbers of the first occurrence of each distinct (src, tgt) pair, in order."""
    numbered = table.append_column("row", pa.array(range(len(table)), pa.int64()))
    first = numbered.group_by(["src", "tgt"], use_threads=False).aggregate([("row", "min")]).column("row_min")
    return pc.take(first, pc.sort_indices(first))


def emptied_message(report: dict, cfg: CleanConfig) -> str:
    """Why nothing is left: the filter that dropped the most pairs, with every count."""
    counts = {reason: n for reason, n in report["dropped"].items() if n}
    if not counts:
        return "the training split has no pairs"
    worst = max(counts, key=counts.get)
    setting = {
        "empty": "",
        "too_long": f"={cfg.max_chars}",
        "length_ratio": f"={cfg.max_ratio}",
        "duplicate": "",
    }[worst]
    details = ", ".join(f"{reason} {n:,}" for reason, n in counts.items())
    return (
        f"cleaning dropped all {report['pairs']:,} training pairs ({details}); "
        f"most went to {FILTER_KEYS[worst]}{setting}: loosen or disable it"
    )

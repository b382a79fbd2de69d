"""A folder of aligned plain-text files as a `datasets.DatasetDict` of `src`/`tgt` pairs.

One sentence per line, line i of one language translating line i of the other, plain or
gzipped (`.gz` wins over plain), any split names and language codes. The layouts people have:

    {split}.{lang}            Moses, fairseq-preprocess, JoeyNMT: train.en, train.de, dev.en, ...
    src-{split}.txt           OpenNMT-py: src-train.txt / tgt-train.txt, src-val.txt / tgt-val.txt;
    tgt-{split}.txt             src and tgt are data.src_lang and data.tgt_lang; a src-test.txt
                                without its tgt-test.txt (sources to translate) is no split
    {lang}.txt, or one        one file per language and no splits at all (en.txt, zh.txt, or
    {name}.{lang} per lang      europarl.en, europarl.de): the training split, the rest held out

Multi30k is the first layout (`minitrans.data.multi30k` is its preset). Everything is local.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

import datasets

# Known splits first, in this order; any other split name follows alphabetically.
SPLIT_ORDER = (
    "train",
    "val",
    "valid",
    "dev",
    "test",
    "test_2016_flickr",
    "test_2017_flickr",
    "test_2017_mscoco",
    "test_2018_flickr",
)
FEATURES = datasets.Features({"src": datasets.Value("string"), "tgt": datasets.Value("string")})
OPENNMT = re.compile(r"(src|tgt)-(.+)\.txt")  # OpenNMT-py's names, the side first
LAYOUTS = (
    "expected {split}.{lang} files (train.en + train.de, optionally dev.* and test.*), OpenNMT's "
    "src-{split}.txt + tgt-{split}.txt, or one {lang}.txt per language (en.txt + de.txt)"
)
NOT_LANGUAGES = {"md", "rst", "json", "jsonl", "yaml", "yml", "py", "sh", "csv", "tsv", "parquet", "zip", "tar", "tgz"}
HELD_OUT_NAMES = ("val", "valid", "validation", "dev", "test")  # a lone split with such a name is not training data


def corpus_files(
    root: Path, hint: str = "", src_lang: str | None = None, tgt_lang: str | None = None
) -> dict[tuple[str, str], Path]:
    """{(split, lang): path} of every corpus file in `root`, in any layout of the module's
    docstring. OpenNMT's src-/tgt- files and {lang}.txt files are recognised only when the
    languages are given (they name no language themselves); a lone split for the two
    languages whose name is not one of validation or test is the training split."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no folder {root}{'. ' + hint if hint else ''}")
    files: dict[tuple[str, str], Path] = {}
    sides = {"src": src_lang, "tgt": tgt_lang}
    for path in sorted(root.iterdir(), key=lambda p: p.name.endswith(".gz")):  # .gz last: it wins
        name = path.name.removesuffix(".gz")
        # Skip hidden files (prepare.py's temporary files among them) and non-corpus names.
        if path.name.startswith(".") or not path.is_file():
            continue
        opennmt = OPENNMT.fullmatch(name)
        if opennmt is not None:
            side, split = opennmt.groups()
            if sides[side] is not None:
                files[split, sides[side]] = path
            continue
        split, dot, lang = name.rpartition(".")
        if lang == "txt" and split in (src_lang, tgt_lang):  # en.txt, zh.txt: one file per language
            split, lang = "train", split
        if dot and split and lang.isalnum() and lang != "txt" and lang.lower() not in NOT_LANGUAGES:
            files[split, lang] = path
    if src_lang is not None and tgt_lang is not None:
        both = {s for s, lang in files if lang == src_lang} & {s for s, lang in files if lang == tgt_lang}
        if len(both) == 1 and (lone := both.pop()) != "train" and not lone.startswith(HELD_OUT_NAMES):
            files["train", src_lang], files["train", tgt_lang] = files[lone, src_lang], files[lone, tgt_lang]
            del files[lone, src_lang], files[lone, tgt_lang]
    return files


def _split_key(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split), "") if split in SPLIT_ORDER else (len(SPLIT_ORDER), split)


def available_splits(root: str | Path, src_lang: str, tgt_lang: str) -> list[str]:
    """Every split present in `root` for both languages, known splits first."""
    files = corpus_files(Path(root), "", src_lang, tgt_lang)
    splits = {s for s, lang in files if lang == src_lang} & {s for s, lang in files if lang == tgt_lang}
    return sorted(splits, key=_split_key)


def half_splits(root: str | Path, src_lang: str, tgt_lang: str) -> dict[str, tuple[Path, str]]:
    """{split: (the file present, the language missing)} for splits with only one of the two
    (OpenNMT's src-test.txt without tgt-test.txt is not one: its test sources have no references)."""
    files = corpus_files(Path(root), "", src_lang, tgt_lang)
    out = {}
    for (split, lang), path in files.items():
        other = {src_lang: tgt_lang, tgt_lang: src_lang}.get(lang)
        if other is not None and (split, other) not in files and not OPENNMT.fullmatch(path.name.removesuffix(".gz")):
            out[split] = (path, other)
    return out


def split_paths(root: str | Path, src_lang: str, tgt_lang: str, split: str) -> list[Path]:
    """The files a split of the language pair is read from (for a cache's identity)."""
    files = corpus_files(Path(root), "", src_lang, tgt_lang)
    return [files[key] for key in ((split, src_lang), (split, tgt_lang)) if key in files]


def missing_pair_message(root: Path, src_lang: str, tgt_lang: str) -> str:
    """Why `root` has no usable pair of files for the languages, and the one-line fix (the
    folder is the problem when neither language has a file; else the missing language)."""
    files = corpus_files(root, "", src_lang, tgt_lang)
    present = sorted({lang for _, lang in files})
    absent = [lang for lang in (src_lang, tgt_lang) if lang not in present]
    if len(absent) == 2:
        names = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") or "nothing"
        return (
            f"no corpus files for {src_lang}-{tgt_lang} in {root} (it holds: {shown}); {LAYOUTS}; "
            "rename the files, or set data.src_lang / data.tgt_lang to the suffixes they have"
        )
    return (
        f"no {' or '.join(f'*.{lang}' for lang in absent) or 'common split'} files in {root} "
        f"(languages present: {', '.join(present)}); set data.src_lang / data.tgt_lang to two of them, "
        f"or rename the files ({LAYOUTS})"
    )


def read_lines(path: str | Path) -> list[str]:
    """The lines of a gzipped or plain UTF-8 file, without their line endings."""
    path = Path(path)
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise ValueError(f"{path} is not a valid gzip file ({err})") from err
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}, line {line}: not valid UTF-8 ({err.reason})") from err
    # Split on "\n" only: str.splitlines would also break at characters such as U+2028.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    return lines


def load_parallel(
    root: str | Path,
    src_lang: str,
    tgt_lang: str,
    splits: Iterable[str] | str | None = None,
    hint: str = "",
) -> datasets.DatasetDict:
    """Load sentence pairs as {split: Dataset with string columns "src" and "tgt"}.

    `splits=None` loads every split available for the language pair. Raises
    FileNotFoundError for a missing folder, language or split (``hint`` says how to get the
    files), ValueError for a split with one language's file only, a file that is not UTF-8,
    or line counts that differ.
    """
    root = Path(root)
    files = corpus_files(root, hint, src_lang, tgt_lang)
    available = available_splits(root, src_lang, tgt_lang)
    if not available:
        problem = missing_pair_message(root, src_lang, tgt_lang)
        raise FileNotFoundError(f"no {src_lang}-{tgt_lang} files: {problem}" + (f". {hint}" if hint else ""))
    if isinstance(splits, str):
        splits = [splits]
    wanted = available if splits is None else list(dict.fromkeys(splits))
    halves = half_splits(root, src_lang, tgt_lang)
    for split in wanted:
        if split in halves:
            present, lang = halves[split]
            raise ValueError(
                f"split {split!r} has {present} but no {split}.{lang} (or .gz) beside it; add it or remove {present.name}"
            )
    missing = [split for split in wanted if split not in available]
    if missing:
        raise FileNotFoundError(
            f"split(s) {', '.join(missing)} not found for {src_lang}-{tgt_lang} in {root}; "
            f"available: {', '.join(available)}"
        )

    dataset = datasets.DatasetDict()
    for split in wanted:
        src_path, tgt_path = files[split, src_lang], files[split, tgt_lang]
        src, tgt = read_lines(src_path), read_lines(tgt_path)
        if len(src) != len(tgt):
            raise ValueError(
                f"split {split!r}: {src_path} has {len(src):,} lines but {tgt_path} has {len(tgt):,}; "
                "they must pair line by line"
            )
        dataset[split] = datasets.Dataset.from_dict({"src": src, "tgt": tgt}, features=FEATURES)
    return dataset

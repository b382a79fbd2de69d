"""A folder of aligned plain-text files as a `datasets.DatasetDict` of `src`/`tgt` pairs.

The layout of Moses, fairseq-preprocess and JoeyNMT: `{split}.{lang}` or `{split}.{lang}.gz`,
one sentence per line, line i of one language translating line i of the other. Any split
names ("train", "dev", "test_2016_flickr", ...) and any language codes. Multi30k is this
layout (`minitrans.data.multi30k` is its preset). Everything is local.
"""

from __future__ import annotations

import gzip
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


def corpus_files(root: Path, hint: str = "") -> dict[tuple[str, str], Path]:
    """{(split, lang): path} for every `{split}.{lang}[.gz]` in `root`; .gz wins over plain."""
    if not root.is_dir():
        raise FileNotFoundError(f"no folder {root}{'. ' + hint if hint else ''}")
    files: dict[tuple[str, str], Path] = {}
    for path in root.iterdir():
        is_gz = path.name.endswith(".gz")
        split, dot, lang = path.name.removesuffix(".gz").rpartition(".")
        # Skip hidden files (prepare.py's temporary files among them) and non-corpus names.
        if path.name.startswith(".") or not (dot and split and lang.isalnum()):
            continue
        if path.is_file() and (is_gz or (split, lang) not in files):
            files[split, lang] = path
    return files


def _split_key(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split), "") if split in SPLIT_ORDER else (len(SPLIT_ORDER), split)


def available_splits(root: str | Path, src_lang: str, tgt_lang: str) -> list[str]:
    """Every split present in `root` for both languages, known splits first."""
    files = corpus_files(Path(root))
    splits = {s for s, lang in files if lang == src_lang} & {s for s, lang in files if lang == tgt_lang}
    return sorted(splits, key=_split_key)


def half_splits(root: str | Path, src_lang: str, tgt_lang: str) -> dict[str, tuple[Path, str]]:
    """{split: (the file present, the language missing)} for splits with only one of the two."""
    files = corpus_files(Path(root))
    out = {}
    for (split, lang), path in files.items():
        other = {src_lang: tgt_lang, tgt_lang: src_lang}.get(lang)
        if other is not None and (split, other) not in files:
            out[split] = (path, other)
    return out


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
    files = corpus_files(root, hint)
    available = available_splits(root, src_lang, tgt_lang)
    if not available:
        langs = sorted({lang for _, lang in files})
        raise FileNotFoundError(
            f"no {src_lang}-{tgt_lang} files ({{split}}.{src_lang} and {{split}}.{tgt_lang}, or .gz) in {root} "
            f"(languages present: {', '.join(langs) or 'none'}; set data.src_lang and data.tgt_lang){'. ' + hint if hint else ''}"
        )
    if isinstance(splits, str):
        splits = [splits]
    wanted = available if splits is None else list(dict.fromkeys(splits))
    halves = half_splits(root, src_lang, tgt_lang)
    for split in wanted:
        if split in halves:
            present, lang = halves[split]
            raise ValueError(f"split {split!r} has {present} but no {split}.{lang} (or .gz) beside it")
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

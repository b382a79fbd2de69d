"""Multi30k (task 1) as a `datasets.DatasetDict` of `src`/`tgt` sentence pairs.

Reads the `{split}.{lang}.gz` (or uncompressed `{split}.{lang}`) files that
`data/multi30k/prepare.py` stores: one sentence per line, line i of one
language translating line i of every other. Any split name present for both
languages can be loaded ("train", "val", "test_2016_flickr", or a user's own).
Everything is local; nothing here touches the network or global settings.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from pathlib import Path

import datasets

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "data" / "multi30k"

# Known splits first, in this order; any other split name follows alphabetically.
SPLIT_ORDER = (
    "train",
    "val",
    "test_2016_flickr",
    "test_2017_flickr",
    "test_2017_mscoco",
    "test_2018_flickr",
)
FEATURES = datasets.Features({"src": datasets.Value("string"), "tgt": datasets.Value("string")})


def _prepare_hint(root: Path) -> str:
    command = "python data/multi30k/prepare.py"
    if root.resolve() != DEFAULT_ROOT:
        command += f" --out {root}"
    return f"Prepare it with `{command}` (downloads it) or `{command} --source DIR` (copies it)."


def _corpus_files(root: Path) -> dict[tuple[str, str], Path]:
    """{(split, lang): path} for every `{split}.{lang}[.gz]` in `root`; .gz wins over plain."""
    if not root.is_dir():
        raise FileNotFoundError(f"No Multi30k folder at {root}. {_prepare_hint(root)}")
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


def available_splits(root: str | Path = DEFAULT_ROOT, src_lang: str = "de", tgt_lang: str = "en") -> list[str]:
    """Every split present in `root` for both languages, known splits first."""
    files = _corpus_files(Path(root))
    splits = {s for s, lang in files if lang == src_lang} & {s for s, lang in files if lang == tgt_lang}
    return sorted(splits, key=_split_key)


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
    return [line.removesuffix("\r") for line in lines]


def load_multi30k(
    root: str | Path = DEFAULT_ROOT,
    src_lang: str = "de",
    tgt_lang: str = "en",
    splits: Iterable[str] | str | None = None,
) -> datasets.DatasetDict:
    """Load sentence pairs as {split: Dataset with string columns "src" and "tgt"}.

    `splits=None` loads every split available for the language pair. Raises
    FileNotFoundError for a missing folder or split, ValueError for a file that
    is not UTF-8 or whose line count differs from its counterpart's.
    """
    root = Path(root)
    files = _corpus_files(root)
    available = available_splits(root, src_lang, tgt_lang)
    if not available:
        langs = sorted({lang for _, lang in files})
        raise FileNotFoundError(
            f"No Multi30k files for {src_lang}-{tgt_lang} in {root} "
            f"(languages present: {', '.join(langs) or 'none'}). {_prepare_hint(root)}"
        )
    if isinstance(splits, str):
        splits = [splits]
    wanted = available if splits is None else list(dict.fromkeys(splits))
    missing = [split for split in wanted if split not in available]
    if missing:
        raise FileNotFoundError(
            f"Split(s) {', '.join(missing)} not found for {src_lang}-{tgt_lang} in {root}; "
            f"available: {', '.join(available)}"
        )

    dataset = datasets.DatasetDict()
    for split in wanted:
        src_path, tgt_path = files[split, src_lang], files[split, tgt_lang]
        src, tgt = read_lines(src_path), read_lines(tgt_path)
        if len(src) != len(tgt):
            raise ValueError(
                f"Split {split!r}: {src_path.name} has {len(src)} lines "
                f"but {tgt_path.name} has {len(tgt)}; they must pair line by line"
            )
        dataset[split] = datasets.Dataset.from_dict({"src": src, "tgt": tgt}, features=FEATURES)
    return dataset

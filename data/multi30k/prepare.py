#!/usr/bin/env python
"""Fetch (or copy) the Multi30k task-1 corpus into this folder.

    python data/multi30k/prepare.py               # download from github.com/multi30k/dataset
    python data/multi30k/prepare.py --source DIR  # copy a folder laid out like data/task1/raw/

Stores `{split}.{lang}.gz` files (raw text, one sentence per line, line i of
every language translating the same image description). Each file is checked
before it is written: it must decompress, be UTF-8, and have as many lines as
the same split in the other languages (and as the official corpus, unless
--no-check-counts). A split is written only once all its languages pass, each
file through a temporary file and a rename, so an interrupted run never leaves
a half file behind. Files already present and valid are kept.

Standalone on purpose (standard library only), so it runs before the project
is installed; `minitrans.data.multi30k` reads what it stores.
"""

from __future__ import annotations

import argparse
import codecs
import gzip
import http.client
import io
import os
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import urlopen

BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
DEFAULT_OUT = Path(__file__).resolve().parent
LANGS = ("en", "de", "fr", "cs")
REQUIRED_SPLITS = ("train", "val")
TEST_SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr")
KNOWN_COUNTS = {
    "train": 29000,
    "val": 1014,
    "test_2016_flickr": 1000,
    "test_2017_flickr": 1000,
    "test_2017_mscoco": 461,
    "test_2018_flickr": 1071,
}
TIMEOUT_S = 60.0
OFFLINE_HINT = "Offline? Copy a local copy with: python data/multi30k/prepare.py --source DIR"

# (split, lang) -> the file's gzip bytes, or None when that file does not exist there
Fetcher = Callable[[str, str], bytes | None]


class PrepareError(Exception):
    """A problem the user can fix; `main` prints it as one line, without a traceback."""


MAX_TEXT_BYTES = 256 * 2**20  # a Multi30k file is at most ~2.5 MB of text; a gzip bomb stops here
CHUNK = 2**20


def count_lines(name: str, gz_bytes: bytes, limit: int = MAX_TEXT_BYTES) -> int:
    """Check that `gz_bytes` is gzip-compressed UTF-8 text of at most `limit` bytes and return
    its number of lines. Decompressed a chunk at a time, so a gzip bomb costs one chunk of
    memory and stops at the limit."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = size = 0
    last = b""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(gz_bytes)) as file:
            while chunk := file.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise PrepareError(f"{name} decompresses to more than {limit // 2**20} MiB; refused")
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as err:
                    line = lines + chunk.count(b"\n", 0, max(err.start, 0)) + 1
                    raise PrepareError(f"{name}, line {line}: not valid UTF-8 ({err.reason})") from None
                lines += chunk.count(b"\n")
                last = chunk[-1:]
        decoder.decode(b"", final=True)
    except (OSError, EOFError, zlib.error) as err:
        raise PrepareError(f"{name} is not a valid gzip file ({err})") from None
    except UnicodeDecodeError as err:
        raise PrepareError(f"{name}, line {lines + 1}: not valid UTF-8 ({err.reason})") from None
    # Lines end at "\n" only (as the loader splits them); a last line may lack it.
    return lines + (1 if size and last != b"\n" else 0)


def download(split: str, lang: str, timeout: float = TIMEOUT_S) -> bytes | None:
    """The public repository's `{split}.{lang}.gz`, or None if it has no such file (HTTP 404)."""
    url = f"{BASE_URL}/{split}.{lang}.gz"
    try:
        with urlopen(url, timeout=timeout) as response:
            data = response.read(MAX_TEXT_BYTES + 1)
            if len(data) > MAX_TEXT_BYTES:
                raise PrepareError(f"{url} is larger than {MAX_TEXT_BYTES // 2**20} MiB; refused")
            return data
    except HTTPError as err:
        if err.code == 404:
            return None
        reason = f"HTTP {err.code} {err.reason}"
    except URLError as err:
        reason = str(err.reason)
    except (OSError, http.client.HTTPException) as err:  # timeouts, resets, truncated bodies
        reason = str(err) or type(err).__name__
    raise PrepareError(f"could not download {url}: {reason}. {OFFLINE_HINT}")


def find_source_file(source: Path, split: str, lang: str) -> Path | None:
    """`{split}.{lang}.gz` in `source`, else the uncompressed `{split}.{lang}`, else None."""
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (source / name).is_file():
            return source / name
    return None


def read_source(source: Path, split: str, lang: str) -> bytes | None:
    """A local file as gzip bytes (uncompressed files are compressed), or None if absent."""
    path = find_source_file(source, split, lang)
    if path is None:
        return None
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise PrepareError(f"{path} is larger than {MAX_TEXT_BYTES // 2**20} MiB; refused")
    data = path.read_bytes()
    return data if path.suffix == ".gz" else gzip.compress(data, mtime=0)


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder and a rename: all or nothing."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_split_counts(split: str, counts: dict[str, int], check_counts: bool) -> None:
    """Every language of a split has the same number of lines (the official one if known)."""
    found = ", ".join(f"{lang}: {n}" for lang, n in counts.items())
    if len(set(counts.values())) > 1:
        raise PrepareError(f"{split}: line counts differ across languages ({found})")
    expected = KNOWN_COUNTS.get(split)
    if check_counts and expected is not None and set(counts.values()) != {expected}:
        raise PrepareError(
            f"{split}: expected {expected} lines per language as in Multi30k, found {found} "
            "(pass --no-check-counts for a corpus other than the official one)"
        )


def prepare_split(
    split: str,
    langs: list[str],
    out_dir: Path,
    fetch: Fetcher,
    check_counts: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, int]:
    """Fetch, check and store one split; returns {lang: lines} of the languages stored."""
    counts: dict[str, int] = {}
    pending: dict[str, bytes] = {}
    absent = []
    for lang in langs:
        name = f"{split}.{lang}.gz"
        target = out_dir / name
        if target.is_file():
            try:
                counts[lang] = count_lines(str(target), target.read_bytes())
                continue
            except PrepareError as err:
                log(f"{err}; fetching it again")
        data = fetch(split, lang)
        if data is None:
            absent.append(lang)
            continue
        counts[lang] = count_lines(name, data)
        pending[lang] = data

    if absent and split in REQUIRED_SPLITS:
        names = ", ".join(f"{split}.{lang}" for lang in absent)
        raise PrepareError(f"required file(s) not available: {names}")
    if absent:
        note = "not available" if not counts else f"not available for {', '.join(absent)}"
        log(f"{split}: {note}, skipped")
    if not counts:
        return counts
    kept = [lang for lang in counts if lang not in pending]
    try:
        check_split_counts(split, counts, check_counts)
    except PrepareError as err:
        if not kept:
            raise
        names = ", ".join(f"{split}.{lang}.gz" for lang in kept)
        raise PrepareError(f"{err}; already in {out_dir}: {names} (delete to fetch again)") from None
    for lang, data in pending.items():
        try:
            write_atomic(out_dir / f"{split}.{lang}.gz", data)
        except OSError as err:
            raise PrepareError(f"could not write {out_dir / f'{split}.{lang}.gz'}: {err}") from None
    parts = [f"stored {' '.join(pending)}"] if pending else []
    parts += [f"already present {' '.join(kept)}"] if kept else []
    log(f"{split}: {next(iter(counts.values()))} lines per language ({'; '.join(parts)})")
    return counts


def prepare(
    out_dir: str | Path = DEFAULT_OUT,
    langs: list[str] | tuple[str, ...] = LANGS,
    source: str | Path | None = None,
    check_counts: bool = True,
    timeout: float = TIMEOUT_S,
    log: Callable[[str], None] = print,
) -> dict[str, dict[str, int]]:
    """Fetch (or copy from `source`) every split for `langs` into `out_dir`.

    Returns {split: {lang: lines}} of the splits now present; raises PrepareError.
    """
    out_dir, langs = Path(out_dir), list(dict.fromkeys(langs))
    bad = [lang for lang in langs if not lang.isalnum()]
    if not langs or bad:
        raise PrepareError(f"invalid language code(s): {bad or '(none given)'}")
    if source is None:

        def fetch(split: str, lang: str) -> bytes | None:
            return download(split, lang, timeout)
    else:
        source = Path(source)
        if not source.is_dir():
            raise PrepareError(f"source folder not found: {source}")
        missing = [
            f"{split}.{lang}.gz"
            for split in REQUIRED_SPLITS
            for lang in langs
            if find_source_file(source, split, lang) is None
        ]
        if missing:
            raise PrepareError(f"{source} lacks required file(s): {', '.join(missing)} (gzipped or plain)")

        def fetch(split: str, lang: str) -> bytes | None:
            return read_source(source, split, lang)

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PrepareError(f"could not create {out_dir}: {err}") from None
    present = {}
    for split in REQUIRED_SPLITS + TEST_SPLITS:
        counts = prepare_split(split, langs, out_dir, fetch, check_counts, log)
        if counts:
            present[split] = counts
    log(f"Multi30k ready in {out_dir}: {', '.join(present)} ({' '.join(langs)})")
    return present


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--source",
        type=Path,
        metavar="DIR",
        help="copy from a local folder laid out like data/task1/raw/ (.gz or plain files) instead of downloading",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where to store the files (default: %(default)s)",
    )
    parser.add_argument(
        "--langs",
        nargs="+",
        default=list(LANGS),
        metavar="LANG",
        help=f"languages to fetch (default: {' '.join(LANGS)})",
    )
    parser.add_argument(
        "--no-check-counts",
        dest="check_counts",
        action="store_false",
        help="do not require the official line counts (for other corpora); languages of a split must still agree",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        metavar="S",
        help="seconds to wait on the network per request (default: %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; on failure prints one line and exits with status 1."""
    args = parse_args(argv)
    try:
        prepare(args.out, args.langs, args.source, args.check_counts, args.timeout)
    except PrepareError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Local corpus files for ``datasets``' builders: which builder reads a file, whether a
tab- or comma-separated file has a header, and, when a builder fails, the file and line to fix.

Formats by suffix (compressed forms too): ``.jsonl`` / ``.json`` (JSON Lines), ``.csv``,
``.tsv``, ``.parquet``; a file with any other suffix (``.txt``, ``.dat``) or none is read as
tab-separated when its first line holds a tab. A delimited file's first row is a header only when it names the
two columns the run reads (``data.src_field`` / ``data.tgt_field``, else the language codes):
otherwise it is data, its columns are named by position (``1``, ``2``, ...) and the first two
are source and target unless the fields name others (Tatoeba's ``cmn.txt``:
``English<TAB>Chinese<TAB>attribution``, no header, trains as is).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from minitrans.core.checks import ConfigError
from minitrans.core.config import DataConfig

log = logging.getLogger(__name__)

# file suffix -> (datasets builder, its options)
BUILDERS = {
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".csv": ("csv", {}),
    # text may hold quotes; lines end at "\n" only, as data=parallel's do (a CRLF's "\r" is
    # stripped after loading, see strip_crlf): pandas would also end one at a lone "\r" inside a sentence
    ".tsv": ("csv", {"delimiter": "\t", "quoting": csv.QUOTE_NONE, "lineterminator": "\n"}),
    ".parquet": ("parquet", {}),
}
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
SUFFIXES = (*BUILDERS, ".txt")  # what the folder form and a typo check recognise


def suffix(path: Path) -> str:
    """The format suffix of a file name, compression removed: ``train.tsv.gz`` -> ``.tsv``."""
    name = path.name.lower()
    for ending in COMPRESSIONS:
        name = name.removesuffix(ending)
    return Path(name).suffix


def _lines(path: Path) -> Iterator[bytes]:
    with fsspec.open(str(path), "rb", compression="infer") as handle:
        yield from handle


def _first_line(path: Path) -> str:
    for line in _lines(path):
        return line.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")
    return ""


@dataclass
class SplitFiles:
    """How ``datasets`` reads one split's files: its builder, the builder's options, and what
    the run was told about the columns (logged once)."""

    builder: str
    options: dict = field(default_factory=dict)
    note: str = ""


def builder_for(files: list[Path], cfg: DataConfig, split: str = "train") -> SplitFiles:
    """The builder and options for one split's files (all of one format), or a ConfigError that
    says what was expected."""
    suffixes = sorted({suffix(f) for f in files})
    if len(suffixes) != 1:
        raise ConfigError(f"data.path: {files[0].parent} mixes formats ({', '.join(suffixes)}); use one per folder")
    kind = suffixes[0]
    if kind not in BUILDERS:  # .txt, no suffix, or any other (pairs.dat): tab-separated if its first line says so
        first = _first_line(files[0])
        if "\t" not in first:
            raise ConfigError(
                f"data.path: {files[0]} is not tab-separated (its first line holds no tab): expected "
                "source<TAB>target per line; for one file per language use data=parallel data.root=FOLDER "
                f"(or give the file one of the suffixes {', '.join(BUILDERS)})"
            )
        kind = ".tsv"
    builder, options = BUILDERS[kind]
    if builder != "csv":
        return SplitFiles(builder, dict(options))
    return _delimited(files[0], cfg, dict(options), split)


def _delimited(path: Path, cfg: DataConfig, options: dict, split: str) -> SplitFiles:
    delimiter = options.get("delimiter", ",")
    quoting = options.get("quoting", csv.QUOTE_MINIMAL)
    limit = csv.field_size_limit(sys.maxsize)  # a first field past csv's 128 KB is data, read by pandas
    try:
        first = next(csv.reader(io.StringIO(_first_line(path)), delimiter=delimiter, quoting=quoting), [])
    finally:
        csv.field_size_limit(limit)
    positions = [str(i) for i in range(1, len(first) + 1)]
    fields = (cfg.src_field, cfg.tgt_field)
    by_position = cfg.src_field is not None and all(f.isdigit() for f in fields)
    if cfg.src_field is not None and not by_position:  # names: the first row is a header
        for key, name in zip(("data.src_field", "data.tgt_field"), fields):
            if name not in first:
                raise ConfigError(
                    f"{key}: split {split!r} has no field {name!r}; its fields are: {', '.join(first)} "
                    f"(the first row of {path.name}; if that row is data, not a header, name the columns by "
                    f"position: data.src_field=1 data.tgt_field=2)"
                )
        return SplitFiles("csv", options)
    if cfg.src_field is None and ({cfg.src_lang, cfg.tgt_lang} <= set(first) or "translation" in first):
        return SplitFiles("csv", options)  # a header naming the languages: as before
    if len(first) < 2:
        sep = "tab" if delimiter == "\t" else repr(delimiter)
        raise ConfigError(
            f"data.path: {path}, line 1: one column only; expected source{sep}target (more columns ignored)"
        )
    if not by_position:
        src, tgt = "1", "2"
        names = [cfg.src_lang, cfg.tgt_lang, *positions[2:]]
    elif {cfg.src_field, cfg.tgt_field} <= set(positions):
        src, tgt = cfg.src_field, cfg.tgt_field
        names = positions
    else:
        raise ConfigError(
            f"data.src_field: {path} has {len(first)} columns; data.src_field={cfg.src_field} "
            f"data.tgt_field={cfg.tgt_field} name positions 1 to {len(first)}"
        )
    ignored = [p for p in positions if p not in (src, tgt)]
    note = (
        f"{path.name} has no header (its first row, {_shown(first)}, names neither column read): "
        f"column {src} is read as {cfg.src_lang} and column {tgt} as {cfg.tgt_lang}"
        + (f", column{'s' if len(ignored) > 1 else ''} {', '.join(ignored)} ignored" if ignored else "")
        + " (data.src_field=N data.tgt_field=M choose others)"
    )
    return SplitFiles("csv", options | {"column_names": names}, note)


def _shown(cells: list[str], width: int = 24) -> str:
    return ", ".join(repr(c if len(c) <= width else c[: width - 1] + "…") for c in cells[:3])


def strip_crlf(dataset: datasets.Dataset) -> datasets.Dataset:
    """A file read with lines ending at ``"\n"`` (:data:`BUILDERS`): the ``"\r"`` of a CRLF
    line ending off the last column's name and values."""
    last = dataset.column_names[-1]
    if last.endswith("\r"):
        dataset = dataset.rename_column(last, last.removesuffix("\r"))
        last = last.removesuffix("\r")
    table = dataset.data.table
    column = table.column(last)
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        return dataset
    stripped = pc.replace_substring_regex(column, "\r$", "")
    table = table.set_column(table.schema.get_field_index(last), last, stripped)
    return datasets.Dataset(datasets.table.InMemoryTable(table), info=dataset.info)


# -- what a failed load was about -------------------------------------------------------------
def diagnose(files: list[Path], reader: SplitFiles, error: BaseException) -> str | None:
    """The first problem in ``files`` that explains ``error``, as "FILE, line N: what" (or
    "FILE is empty"); None when no file shows one."""
    for path in files:
        problem = _file_problem(path, reader)
        if problem is not None:
            return problem
    match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(getattr(error, "__cause__", "")))
    if match is not None and len(files) == 1:
        expected, line, seen = match.groups()
        return _field_count(files[0], int(line), int(expected), int(seen), reader)
    return None


def _field_count(path: Path, line: int, expected: int, seen: int, reader: SplitFiles) -> str:
    sep = "tab" if reader.options.get("delimiter") == "\t" else "comma"
    return (
        f"{path}, line {line}: {seen} {sep}-separated fields where the first row has {expected} "
        f"(a {sep} inside a sentence?); fix or remove that row"
    )


def _file_problem(path: Path, reader: SplitFiles) -> str | None:
    empty, expected = True, None
    sep = reader.options.get("delimiter", ",")
    for number, raw in enumerate(_lines(path), start=1):
        empty = False
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return f"{path}, line {number}: not valid UTF-8 ({error.reason}); re-encode the file as UTF-8"
        text = text.rstrip("\r\n")
        if reader.builder == "json" and suffix(path) == ".jsonl" and text.strip():
            try:
                json.loads(text)
            except ValueError as error:
                return f"{path}, line {number}: not valid JSON ({error}); fix or remove that line"
        if reader.builder == "csv" and sep == "\t" and text:
            count = text.count("\t") + 1
            if expected is None:
                expected = count
            elif count > expected:
                return _field_count(path, number, expected, count, reader)
    return f"{path} is empty: no pairs in it" if empty else None


def first_non_string(files: list[Path], names: tuple[str, ...]) -> str | None:
    """For JSON Lines ``files``: "FILE, line N: NAME is VALUE (TYPE), not text" for the first
    row whose field (``translation.LANG`` for the Hub's nested layout) is not a string."""
    for path in files:
        if suffix(path) != ".jsonl":
            continue
        for number, raw in enumerate(_lines(path), start=1):
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            for name in names:
                value = row
                for part in name.split("."):
                    value = value.get(part) if isinstance(value, dict) else None
                if value is not None and not isinstance(value, str):
                    return (
                        f"{path}, line {number}: {name} is {json.dumps(value, ensure_ascii=False)[:40]} "
                        f"({type(value).__name__}), not text; quote it as a JSON string"
                    )
    return None


__all__ = ["BUILDERS", "SUFFIXES", "SplitFiles", "builder_for", "diagnose", "first_non_string", "strip_crlf", "suffix"]

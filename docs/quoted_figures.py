"""The figures the pages quote, held against the record of measured results (docs/results.yaml).

The record groups figures by measurement: each measurement names its command, its CPU (``lscpu``'s
model name), its steps, runs or seeds and its commit or date, and each of its figures holds its
value as the pages quote it, its unit and the phrases that quote it. A phrase is a regular
expression with one group, the figure itself; a space in it matches any run of white space, a
line break included, so prose may wrap anywhere. Three checks, each a list of problems:

- every page occurrence of a figure's phrase carries the record's value, and every phrase quotes
  something somewhere (a phrase that matches nothing has gone stale);
- a number of a drifting kind (a test BLEU of 97.xx, an AER "AER 0.xxx") on a page that quotes
  results is the value of some figure of the record;
- layers and heads are counted from 1 wherever a person reads them: no "layer 0", "head 0",
  ``L0``/``H0`` or "counted from 0", except on a line that names the numbers as indices.

``docs/check_site.py`` runs them over the repository it sits in; ``tests/docs/test_quoted_figures.py``
runs them over the real pages and over small pages made to fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "docs" / "results.yaml"
# The provenance pages: where the figures of earlier rounds and other machines stand beside their
# commands, so a number of a drifting kind there need not be a figure the other pages quote
PROVENANCE_PAGES = ("docs/results.md", "docs/performance.md")
# Numbers that drift when copied by hand, and what each is, for the message
DRIFTING = {
    r"\b(97\.\d\d)\b": "a test BLEU near the default run's",
    r"\bAER \**(0\.\d{2,3})\b": "an alignment error rate",
}
# A layer or head counted from 0, as a person reads it (lines that say "index" or "indices" name
# Python's or a JSON key's numbering, which may count from 0)
FROM_ZERO = re.compile(
    r"\b(?:layer|head)s? 0\b(?!\.\d)|\b[LH]0\b|\b0-based\b|\b(?:counted|counts?|numbered) from 0\b", re.IGNORECASE
)
INDEX_WORDS = re.compile(r"\bind(?:ex|ices)\b", re.IGNORECASE)
# Notebook cells another change owns, with what they still get wrong: their problems are listed
# as waiting, not failed; a waiting cell that has no problem left fails, so the note goes with the mistake
WAITING: dict[str, str] = {}


@dataclass
class Figure:
    key: str  # "measurement.figure", stable: tests and pages refer to it
    value: str
    unit: str
    command: str
    phrases: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)  # where its phrases are looked for (globs); empty: everywhere


@dataclass
class Page:
    name: str  # the repository path, and for a notebook the cell: "docs/tutorial/x.ipynb, cell 3"
    text: str


def load_record(path: Path = RECORD) -> list[Figure]:
    """Every figure of the record, with its measurement's command."""
    record = yaml.safe_load(path.read_text(encoding="utf-8"))
    figures = []
    for name, measurement in record.items():
        for figure_name, figure in measurement["figures"].items():
            figures.append(
                Figure(
                    key=f"{name}.{figure_name}",
                    value=str(figure["value"]),
                    unit=figure.get("unit", ""),
                    command=figure.get("command", measurement.get("command", "")),
                    phrases=list(figure.get("quoted", [])),
                    pages=list(figure.get("pages", [])),
                )
            )
    return figures


def read_pages(root: Path = ROOT) -> list[Page]:
    """README.md, mkdocs.yml (the navigation's titles), every Markdown page under docs/ and the
    notebooks' Markdown cells."""
    pages = [
        Page(name, (root / name).read_text(encoding="utf-8"))
        for name in ("README.md", "mkdocs.yml")
        if (root / name).exists() or name == "README.md"
    ]
    for path in sorted((root / "docs").rglob("*.md")):
        pages.append(Page(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")))
    for path in sorted((root / "docs").rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                name = f"{path.relative_to(root).as_posix()}, cell {number}"
                pages.append(Page(name, "".join(cell["source"])))
    return pages


def _pattern(phrase: str) -> re.Pattern:
    return re.compile(phrase.replace(" ", r"\s+"))


def _file(page: Page) -> str:
    return page.name.split(",")[0]


def _on(page: Page, globs: Iterable[str]) -> bool:
    globs = list(globs)
    return not globs or any(Path(_file(page)).match(glob) for glob in globs)


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


NUMBER = re.compile(r"[+−-]?\d+(?:[.,]\d+)*")


def _same(quoted: str, value: str) -> bool:
    """Whether a quote gives the record's figure: the same numbers in the same order (wording,
    emphasis and arrows aside), or the same words where the figure holds no number."""
    numbers = NUMBER.findall(value)
    if numbers:
        return NUMBER.findall(quoted) == numbers
    return " ".join(quoted.split()) == " ".join(value.split())


def differing_quotes(figures: list[Figure], pages: list[Page]) -> list[str]:
    """Each place where a figure's phrase quotes another value than the record's, and each phrase
    that quotes nothing on any page."""
    problems = []
    for figure in figures:
        for phrase in figure.phrases:
            pattern = _pattern(phrase)
            if pattern.groups != 1:
                problems.append(f"results.yaml: {figure.key}: phrase {phrase!r} must hold one group, the figure")
                continue
            found = False
            for page in pages:
                if not _on(page, figure.pages):
                    continue
                for match in pattern.finditer(page.text):
                    found = True
                    if not _same(match.group(1), figure.value):
                        problems.append(
                            f"{page.name}:{_line(page.text, match.start(1))}: quotes {match.group(1)!r} "
                            f"for {figure.key}, the record says {figure.value!r} ({figure.command})"
                        )
            if not found:
                problems.append(f"results.yaml: {figure.key}: phrase {phrase!r} quotes nothing on any page")
    return problems


def figures_outside_the_record(figures: list[Figure], pages: list[Page]) -> list[str]:
    """Each number of a drifting kind, on a page that quotes results, that no figure of the record holds."""
    known = {" ".join(figure.value.split()) for figure in figures}
    known |= {number for figure in figures for number in re.findall(r"\d+(?:\.\d+)?", figure.value)}
    problems = []
    for page in pages:
        if _file(page) in PROVENANCE_PAGES:
            continue
        for drifting, what in DRIFTING.items():
            for match in _pattern(drifting).finditer(page.text):
                if match.group(1) not in known:
                    problems.append(
                        f"{page.name}:{_line(page.text, match.start(1))}: {match.group(1)} ({what}) "
                        "is no figure of the record (docs/results.yaml)"
                    )
    return problems


def counted_from_zero(pages: list[Page]) -> list[str]:
    """Each line that counts a layer or a head from 0 for a person to read."""
    problems = []
    for page in pages:
        for number, line in enumerate(page.text.splitlines(), 1):
            if INDEX_WORDS.search(line):
                continue
            for match in FROM_ZERO.finditer(line):
                problems.append(
                    f"{page.name}:{number}: {match.group(0)!r}: layers and heads are counted from 1 "
                    "where a person reads them (say 'index' where a number is one)"
                )
    return problems


def problems(root: Path = ROOT, record: Path | None = None, waiting: dict[str, str] | None = None):
    """All three checks over the pages of the repository at ``root``: (problems, waiting), where
    waiting holds the problems of the cells ``waiting`` names (``WAITING`` by default)."""
    waiting = WAITING if waiting is None else waiting
    figures = load_record(record or root / "docs" / "results.yaml")
    pages = read_pages(root)
    found = differing_quotes(figures, pages) + figures_outside_the_record(figures, pages) + counted_from_zero(pages)
    held = [problem for problem in found if problem.split(":")[0] in waiting]
    failed = [problem for problem in found if problem not in held]
    for cell, what in waiting.items():
        if not any(problem.split(":")[0] == cell for problem in held):
            failed.append(f"{cell}: waits to be mended ({what}) but quotes nothing wrong: drop it from WAITING")
    return failed, held

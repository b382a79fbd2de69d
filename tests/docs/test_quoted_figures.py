"""The figures the pages quote, held against the record of measured results (docs/results.yaml,
docs/quoted_figures.py): the real pages agree with it, and a page made here to disagree fails,
naming the page, the line, the quoted value and the record's."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from helpers import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "docs"))

import check_site  # noqa: E402
import quoted_figures  # noqa: E402

RECORD = """
default_run:
  what: the default run
  command: python scripts/train.py
  cpu: AMD EPYC
  figures:
    test_bleu:
      value: "97.56"
      unit: BLEU
      quoted: ['test BLEU (\\d+\\.\\d+) chrF']
    tutorial:
      value: "45"
      unit: minutes
      quoted: ['(\\d+)-minute tutorial']
"""


def write_repo(root: Path, pages: dict[str, str], record: str = RECORD) -> Path:
    """A repository of README.md, the pages given (paths under it) and docs/results.yaml."""
    for name, text in {"README.md": "# x\n", **pages}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "results.yaml").write_text(record, encoding="utf-8")
    return root


def check(root: Path, waiting: dict[str, str] | None = None) -> list[str]:
    failed, _ = quoted_figures.problems(root, waiting=waiting or {})
    return failed


def test_the_pages_the_readme_and_the_notebooks_quote_the_record():
    failed, waiting = quoted_figures.problems()
    assert failed == []
    # each cell left waiting for its owner still holds the mistake it is listed for
    assert {problem.split(":")[0] for problem in waiting} == set(quoted_figures.WAITING)


def test_a_planted_mismatch_names_the_page_the_line_and_both_values(tmp_path):
    page = "Intro.\n\nIt ends with: test BLEU 97.65 chrF 98.79, then the\n45-minute tutorial.\n"
    repo = write_repo(tmp_path, {"docs/a.md": page, "README.md": "test BLEU 97.56 chrF 98.79\n"})
    assert check(repo) == [
        "docs/a.md:3: quotes '97.65' for default_run.test_bleu, the record says '97.56' (python scripts/train.py)",
        "docs/a.md:3: 97.65 (a test BLEU near the default run's) is no figure of the record (docs/results.yaml)",
    ]


def test_a_quote_split_over_two_lines_is_still_found(tmp_path):
    repo = write_repo(tmp_path, {"README.md": "a 40-minute tutorial; the last line: test\nBLEU 96.50 chrF\n"})
    assert [problem.split(": quotes")[0] for problem in check(repo)] == ["README.md:2", "README.md:1"]


def test_the_sites_navigation_titles_are_read_too(tmp_path):
    pages = {"README.md": "test BLEU 97.56 chrF 98.79, the 45-minute tutorial\n"}
    repo = write_repo(tmp_path, {**pages, "mkdocs.yml": "nav:\n  - A 40-minute tutorial: tutorial/index.md\n"})
    assert [problem.split(" for ")[0] for problem in check(repo)] == ["mkdocs.yml:2: quotes '40'"]


def test_a_phrase_quoting_nothing_or_without_one_group_is_a_record_problem(tmp_path):
    repo = write_repo(tmp_path, {"README.md": "the 45-minute tutorial\n"})
    assert check(repo) == [
        "results.yaml: default_run.test_bleu: phrase 'test BLEU (\\\\d+\\\\.\\\\d+) chrF' quotes nothing on any page"
    ]
    repo = write_repo(tmp_path, {}, RECORD.replace("'(\\d+)-minute tutorial'", "'\\d+-minute tutorial'"))
    assert "phrase '\\\\d+-minute tutorial' must hold one group, the figure" in " ".join(check(repo))


def test_a_quote_agrees_by_its_numbers_not_its_wording():
    assert quoted_figures._same("34 to 9", "34 → 9")
    assert quoted_figures._same("96.20 / **13.26** / 96.42", "96.20 / 13.26 / 96.42")
    assert not quoted_figures._same("16.9", "−16.9")
    assert not quoted_figures._same("1,184,208", "1,184,280")
    assert quoted_figures._same("layer 2 head 3", "layer 2 head 3")
    assert not quoted_figures._same("5½", "6½")


def test_a_drifting_number_the_record_lacks_is_found_outside_the_provenance_pages(tmp_path):
    pages = {
        "README.md": "test BLEU 97.56 chrF; the 45-minute tutorial; one run gave 97.72\n",
        "docs/claims.md": "the best head, AER 0.061, and AER **0.050**\n",
        "docs/results.md": "an earlier round: 97.68; AER 0.2\n",
    }
    assert check(write_repo(tmp_path, pages)) == [
        "README.md:1: 97.72 (a test BLEU near the default run's) is no figure of the record (docs/results.yaml)",
        "docs/claims.md:1: 0.061 (an alignment error rate) is no figure of the record (docs/results.yaml)",
        "docs/claims.md:1: 0.050 (an alignment error rate) is no figure of the record (docs/results.yaml)",
    ]


def test_layers_and_heads_counted_from_0_are_found_unless_named_as_indices(tmp_path):
    pages = {
        "README.md": "test BLEU 97.56 chrF, the 45-minute tutorial\n",
        "docs/a.md": (
            "The best head is layer 1 head 0.\n"  # line 1: a head 0
            "Layers are counted from 0 here.\n"  # line 2
            "cross L0 H2, best head 0.044\n"  # line 3: L0, but an AER of 0.044 is no head 0
            "its layer index 0, head index 2, is layer 1, head 3\n"  # line 4: indices, named as such
        ),
    }
    problems = check(write_repo(tmp_path, pages))
    assert [(problem.split(":")[1], problem.split("'")[1]) for problem in problems] == [
        ("1", "head 0"),
        ("2", "counted from 0"),
        ("3", "L0"),
    ]


def test_the_markdown_cells_of_a_notebook_are_read_and_its_code_cells_are_not(tmp_path):
    notebook = {
        "cells": [
            {"cell_type": "code", "source": ["print('a 30-minute tutorial')"], "outputs": []},
            {"cell_type": "markdown", "source": ["## Next\n", "- the 30-minute tutorial\n"]},
        ]
    }
    pages = {"README.md": "test BLEU 97.56 chrF, the 45-minute tutorial\n", "docs/nb.ipynb": json.dumps(notebook)}
    repo = write_repo(tmp_path, pages)
    differing = "docs/nb.ipynb, cell 1:2: quotes '30' for default_run.tutorial, the record says '45'"
    assert [problem.split(" (")[0] for problem in check(repo)] == [differing]
    failed, waiting = quoted_figures.problems(repo, waiting={"docs/nb.ipynb, cell 1": "the tutorial's length"})
    assert failed == [] and [problem.split(" (")[0] for problem in waiting] == [differing]
    failed, _ = quoted_figures.problems(repo, waiting={"README.md": "nothing wrong there"})
    assert "README.md: waits to be mended (nothing wrong there) but quotes nothing wrong" in " ".join(failed)


def test_the_site_check_fails_on_a_quoted_figure_that_differs_from_the_record(tmp_path, capsys, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        f"<html><head><link rel='stylesheet' href='{check_site.STYLESHEET}'></head></html>"
    )
    repo = write_repo(tmp_path / "repo", {"README.md": "test BLEU 97.56 chrF; the 45-minute tutorial\n"})
    monkeypatch.setattr(check_site, "SOURCES", repo)
    monkeypatch.setattr(quoted_figures, "WAITING", {})
    assert check_site.main([str(site)]) == 0
    (repo / "docs" / "getting-started.md").write_text("Then take the 40-minute tutorial.\n", encoding="utf-8")
    assert check_site.main([str(site)]) == 1
    assert "docs/getting-started.md:1: quotes '40' for default_run.tutorial" in capsys.readouterr().out


def test_the_tutorial_lasts_the_sum_of_its_steps():
    page = (ROOT / "docs" / "tutorial" / "index.md").read_text(encoding="utf-8")
    steps = re.findall(r"^## \d\. .*\((?:about )?(?:\d+–)?(\d+) minutes\)$", page, re.M)
    assert len(steps) == 5
    figures = {figure.key: figure for figure in quoted_figures.load_record()}
    assert int(figures["tutorial.total_minutes"].value) == 5 * math.ceil(sum(map(int, steps)) / 5)

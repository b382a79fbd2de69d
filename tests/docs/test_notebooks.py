"""The two tutorial notebooks as stored (docs/tutorial/*.ipynb): the diagrams they show are the
project's own, byte for byte; their "Try it" lines link to sections of the exercises page that
exist; the attention tour quotes no time its outputs could contradict; and its bottleneck section
shows the fixed-context GRU losing BLEU with sentence length while the same GRU with attention
keeps most of it, in the stored outputs and (slow) when that part of the notebook runs again."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from helpers import REPO

ROOT = REPO
TUTORIAL = ROOT / "docs" / "tutorial"
TOUR = TUTORIAL / "attention_tour.ipynb"
EMPTY_FILE = TUTORIAL / "from_an_empty_file.ipynb"
# the diagrams (docs/diagrams/NAME.png) each notebook shows, in the sections they illustrate
DIAGRAMS = {
    TOUR: {"one_head", "masks", "heads", "encoder_decoder", "contexts"},
    EMPTY_FILE: {"masks", "one_head", "heads", "positions", "encoder_decoder"},
}
# the sections (by their "## N." heading) with an exercise to try
SECTIONS_WITH_EXERCISES = {TOUR: {1, 2, 3, 4, 5, 6}, EMPTY_FILE: {1, 2, 3, 5, 6, 7, 8}}
TABLE_END = "longest / shortest"


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell: dict) -> str:
    return "".join(cell["source"])


def printed(cell: dict) -> str:
    return "".join("".join(out["text"]) for out in cell.get("outputs", []) if out["output_type"] == "stream")


def sections(path: Path) -> dict[int, str]:
    """Each numbered section's markdown, from its "## N." heading to the next heading of that level."""
    found: dict[int, str] = {}
    current = None
    for cell in cells(path):
        if cell["cell_type"] != "markdown":
            continue
        for part in re.split(r"(?m)^(?=## )", text(cell)):
            heading = re.match(r"## (\d+)\.", part)
            if part.startswith("## "):
                current = int(heading.group(1)) if heading else None
            if current is not None:
                found[current] = found.get(current, "") + part
    return found


def bleu_by_length(output: str) -> tuple[list[str], dict[str, list[float]]]:
    """The buckets and each model's BLEU per bucket from the tour's printed table."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.rstrip().endswith(TABLE_END))
    buckets = lines[header].removesuffix(TABLE_END).split()
    rows = {}
    for line in lines[header + 1 :]:
        match = re.match(r"(\D+?)\s+([\d.\s]+)$", line)
        if match:
            numbers = [float(x) for x in match.group(2).split()]
            rows[match.group(1).strip()] = numbers[: len(buckets)]
    return buckets, rows


def check_the_bottleneck(output: str) -> None:
    buckets, rows = bleu_by_length(output)
    assert buckets[0] == "1-10" and len(buckets) >= 2, buckets
    fixed, attention = rows["fixed context C"], rows["attention, c_i"]
    # the fixed context loses most of its short-sentence BLEU on the longest sentences ...
    assert fixed[0] >= 15 and fixed[-1] <= 0.6 * fixed[0], fixed
    # ... the same network with attention keeps most of it, and leads at every length
    assert attention[-1] >= 0.75 * attention[0], attention
    assert all(a > f + 20 for a, f in zip(attention, fixed)), (attention, fixed)


def table_cell(path: Path) -> dict:
    (cell,) = [cell for cell in cells(path) if cell["cell_type"] == "code" and TABLE_END in text(cell)]
    return cell


@pytest.mark.parametrize("path", list(DIAGRAMS), ids=lambda path: path.stem)
def test_the_notebooks_show_the_projects_diagrams(path):
    """By their files (../diagrams/NAME.png, as Jupyter opens them; docs/hooks.py points the site
    at the same files), so a diagram redrawn by docs/diagrams.py is the one every notebook shows."""
    shown = set()
    for cell in cells(path):
        if cell["cell_type"] != "markdown":
            continue
        assert not cell.get("attachments"), f"{path.name}: a picture kept inside the notebook, not its file"
        for name in re.findall(r"!\[[^\]]+\]\(\.\./diagrams/([\w]+)\.png\)", text(cell)):
            assert (ROOT / "docs" / "diagrams" / f"{name}.png").is_file(), f"{path.name}: no docs/diagrams/{name}.png"
            shown.add(name)
    assert shown == DIAGRAMS[path]


@pytest.mark.parametrize("path", list(DIAGRAMS), ids=lambda path: path.stem)
def test_each_section_with_an_exercise_links_to_it(path):
    from markdown.extensions.toc import slugify

    exercises = (ROOT / "docs" / "exercises.md").read_text(encoding="utf-8")
    anchors = {slugify(heading, "-") for heading in re.findall(r"(?m)^##+ (.+)$", exercises)}
    with_links = set()
    for number, section in sections(path).items():
        tries = [line for line in section.splitlines() if line.startswith("Try it: ")]
        for line in tries:
            links = re.findall(r"\]\(\.\./exercises\.md#([\w-]+)\)", line)
            assert links and set(links) <= anchors, (path.name, line)
        if tries:
            with_links.add(number)
            assert len(tries) == 1, (path.name, number, tries)
    assert with_links == SECTIONS_WITH_EXERCISES[path]


def test_the_tour_quotes_no_time_and_prints_what_it_took():
    intro = text(cells(TOUR)[0])
    assert not re.search(r"\d+ s\b|\d+ (?:to \d+ )?minutes", intro), intro
    assert "last cell prints the CPU time" in intro
    last = [cell for cell in cells(TOUR) if cell["cell_type"] == "code"][-1]
    assert re.search(r"this notebook took \d+ s of CPU", printed(last)), printed(last)


def test_the_stored_tour_shows_the_fixed_context_falling_with_length():
    cell = table_cell(TOUR)
    assert cell["execution_count"] is not None
    check_the_bottleneck(printed(cell))
    assert any("image/png" in out.get("data", {}) for out in cell["outputs"]), "no figure"


def test_the_bottleneck_check_fails_on_a_flat_fixed_context():
    flat = (
        f"{'':18}{'1-10':>8}{'11-20':>8}   {TABLE_END}\n"
        f"{'fixed context C':18}{30.0:8.1f}{28.0:8.1f}   0.93\n"
        f"{'attention, c_i':18}{90.0:8.1f}{85.0:8.1f}   0.94\n"
    )
    with pytest.raises(AssertionError):
        check_the_bottleneck(flat)
    check_the_bottleneck(flat.replace(f"{28.0:8.1f}", f"{9.0:8.1f}"))


@pytest.mark.slow
def test_the_tours_bottleneck_section_shows_the_decline_when_run_again(tmp_path):
    """The tour's set-up, its configuration and its bottleneck cells, run as they are (the two
    GRUs, without the Transformer): the printed table shows the decline again."""
    nbformat = pytest.importorskip(
        "nbformat", reason='the notebook runner is in the docs extra: pip install -e ".[docs]"'
    )
    nbclient = pytest.importorskip(
        "nbclient", reason='the notebook runner is in the docs extra: pip install -e ".[docs]"'
    )
    notebook = nbformat.read(TOUR, as_version=4)
    wanted = ("import matplotlib.pyplot", "def config(", 'for kind in ("rnn", "rnn_attention")', TABLE_END)
    notebook.cells = [
        cell for cell in notebook.cells if cell.cell_type == "code" and any(mark in cell.source for mark in wanted)
    ]
    assert len(notebook.cells) == len(wanted), [cell.source[:60] for cell in notebook.cells]
    os.environ.setdefault("MINITRANS_CACHE_DIR", str(tmp_path / "cache"))
    client = nbclient.NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    check_the_bottleneck("".join(out.get("text", "") for out in notebook.cells[-1].outputs))

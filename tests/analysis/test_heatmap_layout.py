"""The layer x head heatmaps (heads_heatmap) read on a documentation page: at most two panels to a
row, every cell's number inside its cell, and the smallest text still readable once the picture is
scaled to the page's column, for the default model's grids and for wider models."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from helpers import REPO

from minitrans.analysis.heads import heads_heatmap
from minitrans.core.pictures import smallest_text_px

sys.path.insert(0, str(REPO / "docs"))
from site_pictures import MIN_TEXT_PX  # noqa: E402

# The width of a page's article column in px, as docs/check_site.py --browser lays the site out at 1280 px
PAGE_COLUMN_PX = 688
KINDS = ("enc_self", "dec_self", "cross")


def grids(kinds: int, layers: int, heads: int) -> dict[str, list[list[float]]]:
    """Grids of the widest numbers the default format writes (a minus sign and two digits before the point)."""
    return {
        f"{kind}: Δ bleu": [[-10.0 - layer - head / 100 for head in range(heads)] for layer in range(layers)]
        for kind in KINDS[:kinds]
    }


def panels(fig) -> list:
    return [ax for ax in fig.axes if ax.get_title()]  # the colour bar has no title


def text_px_on_page(fig) -> float:
    width = fig.get_figwidth() * fig.dpi
    return smallest_text_px(fig) * min(1.0, PAGE_COLUMN_PX / width)


def test_the_ablation_pictures_three_kinds_go_two_to_a_row_and_read_at_page_width():
    fig = heads_heatmap(grids(3, 2, 4), "Δ bleu, head masked", cmap="Blues_r")
    rows = Counter(round(ax.get_position().y0, 3) for ax in panels(fig))
    assert len(panels(fig)) == 3 and sorted(rows.values()) == [1, 2]
    assert text_px_on_page(fig) >= MIN_TEXT_PX + 3  # no longer at the edge of legibility


@pytest.mark.parametrize(("kinds", "layers", "heads"), [(1, 2, 4), (3, 2, 4), (3, 6, 8), (2, 4, 16), (1, 1, 1)])
def test_every_number_sits_inside_its_cell_and_the_text_reads_at_page_width(kinds, layers, heads):
    fig = heads_heatmap(grids(kinds, layers, heads), "Δ bleu, head masked")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert len(panels(fig)) == kinds
    for ax in panels(fig):
        numbers = [text for text in ax.texts if text.get_text().startswith("-")]
        assert len(numbers) == layers * heads
        for text in numbers:
            head, layer = text.get_position()
            (left, bottom), (right, top) = ax.transData.transform(
                [(head - 0.5, layer + 0.5), (head + 0.5, layer - 0.5)]
            )
            box = text.get_window_extent(renderer)
            assert left <= box.x0 and box.x1 <= right and bottom <= box.y0 and box.y1 <= top, text.get_text()
    assert text_px_on_page(fig) >= MIN_TEXT_PX


def test_panels_do_not_overlap():
    fig = heads_heatmap(grids(3, 3, 6), "AER")
    fig.canvas.draw()
    boxes = [ax.get_window_extent() for ax in panels(fig)]
    for i, first in enumerate(boxes):
        for second in boxes[i + 1 :]:
            assert not first.overlaps(second)

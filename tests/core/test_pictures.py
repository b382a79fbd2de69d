"""A saved figure records the size of its smallest text, which the site check scales to the page."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from minitrans.core.pictures import TEXT_PX_KEY, save_figure, smallest_text_px  # noqa: E402


def test_the_smallest_text_is_the_tick_labels_at_the_saved_dpi(tmp_path):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title", fontsize=14)
    ax.tick_params(labelsize=6)
    path = save_figure(fig, tmp_path / "plot.png", dpi=144)
    plt.close(fig)
    assert float(Image.open(path).info[TEXT_PX_KEY]) == 12.0  # 6 pt at 144 dpi: 6 * 2 px


def test_text_of_an_axis_not_drawn_does_not_count(tmp_path):
    fig, ax = plt.subplots()
    ax.tick_params(labelsize=4)
    ax.axis("off")
    ax.text(0.5, 0.5, "shown", fontsize=10)
    assert smallest_text_px(fig, dpi=72) == 10
    plt.close(fig)


def test_a_figure_without_text_records_nothing_and_other_metadata_is_kept(tmp_path):
    fig, ax = plt.subplots()
    ax.axis("off")
    path = save_figure(fig, tmp_path / "blank.png", metadata={"Title": "blank"})
    plt.close(fig)
    info = Image.open(path).info
    assert TEXT_PX_KEY not in info and info["Title"] == "blank"

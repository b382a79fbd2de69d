"""Saving a matplotlib figure as a PNG that says how small its text is.

A picture on the site is scaled to its column, and its labels with it: a label drawn 20 px high
in a picture shown at a third of its width reads as 7 px. So every PNG the project writes carries
the height of its smallest text, in pixels of the saved file, as a PNG text entry
(:data:`TEXT_PX_KEY`), and the site check (``docs/site_pictures.py``) scales it by the width the
browser gives the picture to find the labels a reader cannot read.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.text import Text

TEXT_PX_KEY = "minitrans-text-px"  # PNG text entry: the smallest text's font size, in px of the file
POINTS_PER_INCH = 72


def smallest_text_px(fig: Figure, dpi: float | None = None) -> float | None:
    """The font size of the figure's smallest visible text (titles, labels, tick labels, legends,
    annotations), in pixels at ``dpi`` (the figure's own when None); None if it holds no text."""
    fig.canvas.draw()  # tick labels exist only once the figure is laid out
    hidden = set()  # the tick labels of an axis not drawn (``ax.axis("off")``, a hidden axis)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not (ax.get_visible() and ax.axison and axis.get_visible()):
                hidden |= {id(text) for text in axis.findobj(Text)}
    sizes = [
        text.get_fontsize()
        for text in fig.findobj(Text)
        if id(text) not in hidden and text.get_visible() and text.get_text().strip()
    ]
    if not sizes:
        return None
    return min(sizes) * (dpi or fig.dpi) / POINTS_PER_INCH


def save_figure(fig: Figure, path: str | Path, dpi: float | None = None, metadata: dict | None = None) -> Path:
    """``fig.savefig(path)`` as a PNG with the smallest text's size recorded beside ``metadata``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dpi = dpi or fig.dpi
    entries = dict(metadata or {})
    px = smallest_text_px(fig, dpi)
    if px is not None:
        entries[TEXT_PX_KEY] = f"{px:.2f}"
    fig.savefig(path, dpi=dpi, metadata=entries)
    return path

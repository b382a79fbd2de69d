"""The figures of ``compare.py``: test BLEU over num_heads × d_k (a heatmap with each cell's
parameter count), BLEU against the number of heads at a fixed h·d_k (the matched sweep: equal
parameters and FLOPs, only the split into heads changes), and BLEU by source length, one line
per run. Each returns None when the runs give it nothing to show."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from minitrans.analysis.viz import model_color, new_figure
from minitrans.runs.run_set import Run, run_labels, test_splits


def _figure(width: float, height: float) -> Figure:
    return new_figure(figsize=(width, height), dpi=120, layout="constrained")


def _short_count(value: float) -> str:
    """1,184,208 -> 1.18M; 45,300 -> 45.3k."""
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.0f}"


def _transformer_scores(runs: Sequence[Run], split: str | None) -> dict[tuple[int, int], list[Run]]:
    cells: dict[tuple[int, int], list[Run]] = {}
    for run in runs:
        if run.kind == "transformer" and "bleu" in run.test(split) and run.num_heads and run.d_k:
            cells.setdefault((run.num_heads, run.d_k), []).append(run)
    return cells


def heads_dk_grid(runs: Sequence[Run], split: str | None = None):
    """(heads values, d_k values, mean BLEU grid with NaN where no run, run counts, mean
    parameter counts), or None when the Transformer runs do not vary num_heads or d_k."""
    cells = _transformer_scores(runs, split)
    heads = sorted({h for h, _ in cells})
    d_ks = sorted({d for _, d in cells})
    if len(heads) < 2 and len(d_ks) < 2:
        return None
    grid = np.full((len(heads), len(d_ks)), np.nan)
    counts = np.zeros((len(heads), len(d_ks)), dtype=int)
    params = np.zeros((len(heads), len(d_ks)))
    for (h, d), cell in cells.items():
        i, j = heads.index(h), d_ks.index(d)
        grid[i, j] = float(np.mean([run.test(split)["bleu"] for run in cell]))
        counts[i, j] = len(cell)
        params[i, j] = float(np.mean([run.summary.params for run in cell]))
    return heads, d_ks, grid, counts, params


def plot_heads_dk(runs: Sequence[Run], path: str | Path, split: str | None = None) -> Path | None:
    """Heatmap of test BLEU over num_heads (rows) × d_k (columns), each cell with its parameter
    count; None if they do not vary. Empty cells are combinations with no finished run."""
    found = heads_dk_grid(runs, split)
    if found is None:
        return None
    heads, d_ks, grid, counts, params = found
    fig = _figure(1.4 * len(d_ks) + 2.4, 0.9 * len(heads) + 1.6)
    ax = fig.add_subplot()
    finite = grid[np.isfinite(grid)]
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")  # grey: no finished run
    top = max(finite.max(), finite.min() + 1e-6)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=finite.min(), vmax=top, aspect="auto")
    middle = (finite.min() + finite.max()) / 2
    for i in range(len(heads)):
        for j in range(len(d_ks)):
            value = grid[i, j]
            if np.isnan(value):
                text = "–"
            else:
                repeats = f" (n={counts[i, j]})" if counts[i, j] > 1 else ""
                text = f"{value:.1f}{repeats}\n{_short_count(params[i, j])} params"
            color = "black" if np.isnan(value) or value > middle else "white"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize=9)
    ax.set_xticks(range(len(d_ks)), [str(d) for d in d_ks])
    ax.set_yticks(range(len(heads)), [str(h) for h in heads])
    ax.set_xlabel("d_k (per-head key width)")
    ax.set_ylabel("num_heads")
    ax.set_title(f"{split or test_splits(runs)[0]} BLEU by heads × d_k", fontsize=11)
    fig.colorbar(image, ax=ax, label="BLEU", shrink=0.9)
    path = Path(path)
    fig.savefig(path)
    return path


class MatchedPoint(NamedTuple):
    """One head count of a fixed h·d_k: its mean test BLEU over the runs (seeds) that share it,
    their lowest and highest, and how many there are."""

    heads: int
    d_k: int
    bleu: float
    params: float
    low: float
    high: float
    runs: int


def matched_series(runs: Sequence[Run], split: str | None = None) -> dict[int, list[MatchedPoint]]:
    """For each h·d_k that at least two head counts share: a :class:`MatchedPoint` by number of
    heads; the diagonals of a heads × d_k grid, or a matched sweep (over seeds, when it has several)."""
    by_width: dict[int, list[MatchedPoint]] = {}
    for (h, d), cell in sorted(_transformer_scores(runs, split).items()):
        scores = [run.test(split)["bleu"] for run in cell]
        params = float(np.mean([run.summary.params for run in cell]))
        point = MatchedPoint(h, d, float(np.mean(scores)), params, min(scores), max(scores), len(scores))
        by_width.setdefault(h * d, []).append(point)
    return {width: points for width, points in sorted(by_width.items()) if len(points) >= 2}


def plot_matched_heads(runs: Sequence[Run], path: str | Path, split: str | None = None) -> Path | None:
    """Test BLEU against the number of heads at a fixed h·d_k, one line per h·d_k; None when
    no two runs share one."""
    series = matched_series(runs, split)
    if not series:
        return None
    fig = _figure(7.0, 4.3)
    ax = fig.add_subplot()
    colors = matplotlib.colormaps["tab10"].colors
    for index, (width, points) in enumerate(series.items()):
        heads = [point.heads for point in points]
        params = sorted({point.params for point in points})
        size = _short_count(params[0]) if len(params) == 1 else f"{_short_count(params[0])}–{_short_count(params[-1])}"
        color = colors[index % len(colors)]
        repeats = sorted({point.runs for point in points})
        label = f"h·d_k = {width} ({size} params)"
        if repeats[-1] > 1:  # several seeds: the mean, with a bar from the lowest run to the highest
            label += f", mean of {'–'.join(map(str, sorted({repeats[0], repeats[-1]})))} runs, bar: range"
        means = [point.bleu for point in points]
        below = [point.bleu - point.low for point in points]
        above = [point.high - point.bleu for point in points]
        ax.errorbar(heads, means, yerr=[below, above], marker="o", color=color, capsize=4, label=label)
        for point in points:
            ax.annotate(
                f"{point.heads}×{point.d_k}",
                (point.heads, point.low),
                textcoords="offset points",
                xytext=(0, -14),
                ha="center",
                fontsize=9,
            )
    all_heads = sorted({point.heads for points in series.values() for point in points})
    ax.margins(y=0.12)  # room for the labels under the lowest points
    ax.set_xscale("log", base=2)
    ax.set_xticks(all_heads, [str(h) for h in all_heads])
    ax.minorticks_off()
    ax.set_xlabel("num_heads (h × d_k fixed: equal parameters and FLOPs)")
    ax.set_ylabel("BLEU")
    ax.grid(alpha=0.3)
    ax.set_title(f"{split or test_splits(runs)[0]} BLEU by number of heads at fixed h·d_k", fontsize=11)
    ax.legend(fontsize=8)
    path = Path(path)
    fig.savefig(path)
    return path


def _bucket_order(label: str) -> int:
    return int(re.match(r"\d+", label).group()) if re.match(r"\d+", label) else 10**9


MARKERS = "osD^v<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")


def line_styles(kinds: Sequence[str]) -> list[tuple[str, str, str]]:
    """(colour, marker, line style) per run. Runs of several model kinds: the colour is the
    kind's fixed colour (:data:`minitrans.analysis.viz.MODEL_COLORS`, the same in every plot), and
    marker and line style tell runs of one kind apart. Runs of one kind (a sweep): the colour
    tells the runs apart."""
    if len(set(kinds)) > 1:
        seen: dict[str, int] = {}
        styles = []
        for index, kind in enumerate(kinds):
            n = seen[kind] = seen.get(kind, -1) + 1
            styles.append((model_color(kind, index), MARKERS[n % len(MARKERS)], LINESTYLES[n % len(LINESTYLES)]))
        return styles
    colors = matplotlib.colormaps["tab10" if len(kinds) <= 10 else "tab20"].colors
    return [
        (matplotlib.colors.to_hex(colors[i % len(colors)]), MARKERS[i % len(MARKERS)], "-") for i in range(len(kinds))
    ]


def bucket_ticks(labels: Sequence[str], series: Sequence[Sequence[dict]]) -> list[str]:
    """A tick per bucket with its sentence count: ``(n=50)`` when the runs agree, ``(n=30–50)``
    when their test sets put different numbers of sentences into it."""
    ticks = []
    for label in labels:
        counts = sorted({b["count"] for buckets in series for b in buckets if b["bucket"] == label and "count" in b})
        if not counts:
            ticks.append(label)
        else:
            ticks.append(f"{label}\n(n={counts[0]})" if len(counts) == 1 else f"{label}\n(n={counts[0]}–{counts[-1]})")
    return ticks


def plot_bleu_by_length(
    runs: Sequence[Run], path: str | Path, split: str | None = None, title: str | None = None
) -> Path | None:
    """Test BLEU by source-length bucket, one line per run (in the spirit of Bahdanau et al.,
    2015, Figure 2); None if no run has per-bucket scores or all sentences share one bucket."""
    series = [(label, run.test(split).get("by_length") or [], run.kind) for run, label in zip(runs, run_labels(runs))]
    series = [(label, buckets, kind) for label, buckets, kind in series if buckets]
    if not series:
        return None
    labels = sorted({b["bucket"] for _, buckets, _ in series for b in buckets}, key=_bucket_order)
    if len(labels) < 2:
        return None
    ticks = bucket_ticks(labels, [buckets for _, buckets, _ in series])
    fig = _figure(7.5 if len(series) <= 8 else 10, 4.5)
    ax = fig.add_subplot()
    for (label, buckets, _), (color, marker, style) in zip(series, line_styles([kind for _, _, kind in series])):
        by_label = {b["bucket"]: b["bleu"] for b in buckets}
        ax.plot(
            [i for i, name in enumerate(labels) if name in by_label],
            [by_label[name] for name in labels if name in by_label],
            marker=marker,
            linestyle=style,
            color=color,
            label=label,
        )
    ax.set_xticks(range(len(labels)), ticks)
    ax.set_xlabel("source sentence length (words)")
    ax.set_ylabel("BLEU")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"{split or test_splits(runs)[0]} BLEU by source length", fontsize=11)
    if len(series) <= 8:
        ax.legend(fontsize=8)
    else:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    path = Path(path)
    fig.savefig(path)
    return path


__all__ = [
    "bucket_ticks",
    "heads_dk_grid",
    "line_styles",
    "MatchedPoint",
    "matched_series",
    "plot_bleu_by_length",
    "plot_heads_dk",
    "plot_matched_heads",
]

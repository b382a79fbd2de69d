"""Which attention heads matter: head importance by ablation (Michel et al. 2019).

A head is masked by zeroing its columns of the output projection ``out_proj.weight`` for the
time of a measurement: its output then adds nothing to the layer's, exactly as if its slice
were zeroed before the projection (the bias stays). Nothing in the model changes otherwise,
and the weights are restored bit for bit afterwards. Each head is masked alone, then, greedily,
heads are masked cumulatively from the least important (smallest loss increase) to the most,
which shows how many heads the model can lose before its translations suffer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from minitrans.analysis.viz import new_figure
from minitrans.models.attention import MultiHeadAttention

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Head = tuple[str, int, int]  # (kind, layer, head): kind "enc_self", "dec_self" or "cross"
_KINDS = {"enc_self": ("encoder_layers", "self_attn"), "dec_self": ("decoder_layers", "self_attn")}
_KINDS["cross"] = ("decoder_layers", "cross_attn")


def attention_layers(model: nn.Module) -> dict[str, list[MultiHeadAttention]]:
    """The multi-head attention modules of a Transformer by kind, one per layer ({} for a model
    without them, such as the RNNs)."""
    found: dict[str, list[MultiHeadAttention]] = {}
    for kind, (stack, name) in _KINDS.items():
        layers = getattr(model, stack, None) or []
        modules = [getattr(layer, name, None) for layer in layers]
        if modules and all(isinstance(m, MultiHeadAttention) for m in modules):
            found[kind] = modules
    return found


def all_heads(model: nn.Module) -> list[Head]:
    return [
        (kind, layer, head)
        for kind, modules in attention_layers(model).items()
        for layer, module in enumerate(modules)
        for head in range(module.num_heads)
    ]


@contextlib.contextmanager
def masked_heads(model: nn.Module, heads: Iterable[Head]) -> Iterator[None]:
    """Zero the output-projection columns of ``heads`` inside the block; restore them after."""
    layers = attention_layers(model)
    saved = []
    try:
        with torch.no_grad():
            for kind, layer, head in heads:
                module = layers[kind][layer]
                columns = slice(head * module.d_v, (head + 1) * module.d_v)
                saved.append((module, columns, module.out_proj.weight[:, columns].clone()))
                module.out_proj.weight[:, columns] = 0.0
        yield
    finally:
        with torch.no_grad():
            for module, columns, weight in reversed(saved):
                module.out_proj.weight[:, columns] = weight


Measure = Callable[[], dict[str, float]]  # e.g. {"loss": ..., "bleu": ...} of the model as it is now


@dataclass
class Ablation:
    """Scores of the full model, of each head masked alone, and of heads masked cumulatively."""

    baseline: dict[str, float]
    single: dict[Head, dict[str, float]]
    cumulative: list[tuple[Head, dict[str, float]]]  # in order: the head added and the scores after

    def deltas(self, metric: str) -> dict[Head, float]:
        return {head: scores[metric] - self.baseline[metric] for head, scores in self.single.items()}

    def grid(self, kind: str, metric: str) -> list[list[float]]:
        """layer x head changes of ``metric`` for the heads of one kind."""
        deltas = {(layer, head): value for (k, layer, head), value in self.deltas(metric).items() if k == kind}
        layers = 1 + max(layer for layer, _ in deltas)
        heads = 1 + max(head for _, head in deltas)
        return [[deltas[(layer, head)] for head in range(heads)] for layer in range(layers)]

    def table(self, metrics: Iterable[str] = ("loss", "bleu")) -> str:
        """A plain-text table: one line per head, most important (largest loss increase) first."""
        metrics = list(metrics)
        lines = [f"{'head':<16}" + "".join(f"{'Δ ' + m:>10}" for m in metrics)]
        lines.append(f"{'(none masked)':<16}" + "".join(f"{self.baseline[m]:>10.3f}" for m in metrics))
        order = sorted(self.single, key=lambda head: -self.deltas(metrics[0])[head])
        for head in order:
            values = "".join(f"{self.single[head][m] - self.baseline[m]:>+10.3f}" for m in metrics)
            lines.append(head_label(*head).ljust(16) + values)
        lines.append("")
        lines.append("masking heads cumulatively, least important first:")
        for count, (head, scores) in enumerate(self.cumulative, 1):
            values = "".join(f"{scores[m]:>10.3f}" for m in metrics)
            lines.append(f"{count:>3} masked, + {head_label(*head)}".ljust(30) + values)
        return "\n".join(lines)

    def summary(self, metric: str = "loss") -> dict:
        """Entries for a run's summary: per-head changes and the greedy curve."""
        return {
            "heads_baseline": self.baseline,
            "heads_delta": {
                head_label(*head): {m: v - self.baseline[m] for m, v in s.items()} for head, s in self.single.items()
            },
            "heads_cumulative": [{"masked": head_label(*head), **scores} for head, scores in self.cumulative],
            "heads_order_metric": metric,
        }


def ablate_heads(model: nn.Module, measure: Measure, metric: str = "loss", heads: list[Head] | None = None) -> Ablation:
    """Mask each head alone, then heads cumulatively in order of increasing ``metric`` change
    (higher ``metric`` is worse, as for a loss)."""
    heads = all_heads(model) if heads is None else heads
    baseline = measure()
    single = {}
    for head in heads:
        with masked_heads(model, [head]):
            single[head] = measure()
    order = sorted(heads, key=lambda head: single[head][metric])
    cumulative = []
    for count in range(1, len(order) + 1):
        with masked_heads(model, order[:count]):
            cumulative.append((order[count - 1], measure()))
    return Ablation(baseline, single, cumulative)


def head_label(kind: str, layer: int, head: int) -> str:
    """A head as a person reads it, layers and heads counted from 1 as every picture counts
    them: ``head_label("cross", 0, 2)`` is ``"cross L1 H3"`` (``layer`` and ``head`` are indices)."""
    return f"{kind} L{layer + 1} H{head + 1}"


def heads_heatmap(
    grids: dict[str, list[list[float]]], label: str, cmap: str = "viridis", fmt: str = "{:.2f}"
) -> Figure:
    """One layer x head heatmap per entry of ``grids`` (e.g. per attention kind), each cell written
    out; ``label`` names the colour scale, which all panels share.

    The figure is sized for a documentation page: a head's column is wide enough for its number,
    and panels go two to a row only while two fit the page's width (one to a row otherwise), so a
    page that shows the picture at its column's width keeps every label readable."""
    page_inches = 7.0  # about what a page's column shows unscaled at the figure's dpi
    colorbar_inches = 1.0
    head_inches, layer_inches = 0.5, 0.5  # a cell holds a signed number of two decimals at 10 pt
    heads = max((len(row) for grid in grids.values() for row in grid), default=1)
    layers = max(map(len, grids.values()), default=1)
    panel = (max(2.9, head_inches * heads + 0.7), layer_inches * layers + 1.3)  # + axis labels, title
    per_row = 2 if len(grids) > 1 and 2 * panel[0] + colorbar_inches <= page_inches else 1
    rows = -(-len(grids) // per_row)
    values = [value for grid in grids.values() for row in grid for value in row]
    low, high = min(values, default=0.0), max(values, default=1.0)
    fig = new_figure(figsize=(per_row * panel[0] + colorbar_inches, rows * panel[1]), dpi=100, layout="constrained")
    axes = list(fig.subplots(rows, per_row, squeeze=False).ravel())
    for spare in axes[len(grids) :]:  # an odd panel out leaves its row's second place empty
        spare.remove()
    axes = axes[: len(grids)]
    for ax, (title, grid) in zip(axes, grids.items()):
        image = ax.imshow(grid, cmap=cmap, vmin=low, vmax=high, aspect="auto")
        ax.set_title(title)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(len(grid[0])), [str(head) for head in range(1, len(grid[0]) + 1)])  # from 1
        ax.set_yticks(range(len(grid)), [str(layer) for layer in range(1, len(grid) + 1)])
        for layer, row in enumerate(grid):
            for head, value in enumerate(row):
                red, green, blue, _ = image.cmap(image.norm(value))
                ink = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
                ax.text(head, layer, fmt.format(value), ha="center", va="center", color=ink, fontsize=10)
    fig.colorbar(image, ax=axes, label=label)
    return fig

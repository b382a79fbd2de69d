"""Why attention divides by √d_k, measured at initialisation (docs/claims.md, claim 1).

The notes argue that the dot product of two d_k-wide vectors grows with d_k, so that unscaled
scores push softmax towards 0/1 and its gradients vanish, and that dividing by √d_k keeps them
stable. For each d_k this measures, with and without the division:

- the variance of the raw dot products q·k;
- the mean largest softmax weight of a row (1 is a one-hot row, 1/L a uniform one) and the
  mean row entropy in nats (log L is uniform, 0 one-hot);
- the mean norm of the gradient reaching the scores (the softmax's input) of a row, for a
  loss Σ g·(weights V) with a fixed random g of variance 1/d_v: the signal that reaches Q and
  K through the softmax (the gradient of the raw q·k is this one times the scale).

On two kinds of input: the notes' assumption (q, k, v with independent unit-variance
components), over a range of d_k; and freshly initialised minitrans Transformers over a grid of
d_model × heads (× d_k, by default d_model / heads), whose first encoder layer's Q, K and V are
projected from random tokens embedded as the model embeds them (embedding × √d_model +
sinusoidal positions, then the pre-norm LayerNorm). Xavier initialisation gives a projection's
outputs about unit variance only when it is square (heads × d_k = d_model), so the grid shows
where the notes' assumption holds for the model and where a wider projection softens the scores.

Shape legend: B batch, H heads, L length, Dk per-head key width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from matplotlib.figure import Figure
from torch import Tensor

from minitrans.core.config import TransformerConfig
from minitrans.models.transformer import Transformer

D_KS = (4, 8, 16, 32, 64, 128, 256, 512)
D_MODELS = (64, 128, 256)
HEADS = (1, 2, 4, 8)
INPUTS = ("unit variance", "minitrans at init")


def model_grid(
    d_models: Sequence[int] = D_MODELS, heads: Sequence[int] = HEADS, d_ks: Sequence[int] | None = None
) -> list[tuple[int, int, int]]:
    """(d_model, heads, d_k) for every d_model × heads (× d_k; without ``d_ks``, d_model / heads).

    ValueError, in one line, for a width or head count under 1, or a d_model that ``heads`` do
    not divide when d_k is left to follow from it."""
    for name, values in (("d_model", d_models), ("heads", heads), ("d_k", d_ks or ())):
        if bad := [value for value in values if value < 1]:
            raise ValueError(f"{name} must be at least 1, got {bad[0]}")
    grid = []
    for d_model in d_models:
        for num_heads in heads:
            if d_ks is None and d_model % num_heads:
                raise ValueError(
                    f"{num_heads} heads do not divide d_model {d_model}: give d_k explicitly or another head count"
                )
            for d_k in d_ks or (d_model // num_heads,):
                grid.append((d_model, num_heads, d_k))
    return grid


@dataclass(frozen=True)
class ScalingPoint:
    inputs: str  # one of INPUTS
    d_k: int
    d_model: int | None  # the model's width and head count; None for unit-variance inputs
    num_heads: int | None
    is_scaled: bool
    dot_variance: float  # Var(q·k), the same with or without scaling (the raw products)
    max_weight: float  # mean over rows of the largest softmax weight
    entropy: float  # mean row entropy, nats
    score_grad_norm: float  # mean over rows of ‖∂loss/∂scores‖


def unit_variance_qkv(d_k: int, batch: int, heads: int, length: int, generator: torch.Generator):
    """q, k, v (B, H, L, Dk) with independent N(0, 1) components: the notes' assumption."""
    return tuple(torch.randn(batch, heads, length, d_k, generator=generator) for _ in range(3))


@torch.no_grad()
def model_qkv(d_k: int, batch: int, length: int, seed: int, vocab: int = 1000, d_model: int = 128, num_heads: int = 4):
    """q, k, v (B, H, L, Dk) of the first encoder layer of a freshly initialised Transformer of
    width ``d_model`` with ``num_heads`` heads of ``d_k``, fed random (non-padding) tokens."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(d_model=d_model, num_heads=num_heads, d_k=d_k, dropout=0.0)
    model = Transformer(cfg, vocab, vocab, pad_id=0).eval()
    tokens = torch.randint(4, vocab, (batch, length))  # (B, L)
    x = model.src_embed(tokens) * math.sqrt(model.d_model) + model.positions(length)  # (B, L, D)
    layer = model.encoder_layers[0]
    return layer.self_attn.project_qkv(layer.attn_block.sublayer_input(x))  # each (B, H, L, Dk)


def measure(q: Tensor, k: Tensor, v: Tensor, is_scaled: bool, generator: torch.Generator) -> dict[str, float]:
    raw = q @ k.transpose(-2, -1)  # (B, H, L, L)
    scores = (raw / math.sqrt(q.shape[-1]) if is_scaled else raw).detach().requires_grad_(True)
    weights = scores.softmax(dim=-1)  # (B, H, L, L)
    # g of variance 1/Dv makes each g·v_j of about unit variance for unit-variance v, so the
    # gradient measures the softmax's own sensitivity, not the width of the values.
    upstream = torch.randn(weights.shape[:-1] + (v.shape[-1],), generator=generator) / math.sqrt(v.shape[-1])
    (weights @ v * upstream).sum().backward()
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)  # (B, H, L)
    return {
        "dot_variance": raw.var().item(),
        "max_weight": weights.max(dim=-1).values.mean().item(),
        "entropy": entropy.mean().item(),
        "score_grad_norm": scores.grad.norm(dim=-1).mean().item(),
    }


def measure_scaling(
    d_ks: Sequence[int] = D_KS,
    batch: int = 16,
    heads: int = 4,
    length: int = 32,
    seed: int = 0,
    grid: Sequence[tuple[int, int, int]] | None = None,
) -> list[ScalingPoint]:
    """Every point, scaled and unscaled on the same q, k, v: unit-variance inputs (``heads``
    rows of ``length`` keys per sentence) at each of ``d_ks``, and minitrans at initialisation
    at each (d_model, heads, d_k) of ``grid`` (default :func:`model_grid`)."""
    points = []

    def add(inputs, d_k, d_model, num_heads, qkv):
        for is_scaled in (False, True):
            grads = torch.Generator().manual_seed(seed)
            found = measure(*qkv, is_scaled, grads)
            points.append(ScalingPoint(inputs, d_k, d_model, num_heads, is_scaled, **found))

    for d_k in d_ks:
        generator = torch.Generator().manual_seed(seed + d_k)
        add("unit variance", d_k, None, None, unit_variance_qkv(d_k, batch, heads, length, generator))
    for d_model, num_heads, d_k in model_grid() if grid is None else grid:
        qkv = model_qkv(d_k, batch, length, seed + d_k, d_model=d_model, num_heads=num_heads)
        add("minitrans at init", d_k, d_model, num_heads, qkv)
    return points


def as_rows(points: Sequence[ScalingPoint]) -> list[dict]:
    return [asdict(point) for point in points]


def table(points: Sequence[ScalingPoint]) -> str:
    """Markdown that fits a page: one table for unit-variance inputs and one for the model at
    initialisation, a row per d_k (per width and head count), each measure given for the raw
    scores and then the scaled ones in one cell (Var(q·k) is the raw products', the same for both)."""

    def pair(raw: float, scaled: float, spec: str) -> str:
        return f"{raw:{spec}} / {scaled:{spec}}"

    def cells(raw: ScalingPoint, scaled: ScalingPoint) -> str:
        return (
            f"{raw.d_k} | {raw.dot_variance:.3g} | {pair(raw.max_weight, scaled.max_weight, '.3f')} | "
            f"{pair(raw.entropy, scaled.entropy, '.3f')} | {pair(raw.score_grad_norm, scaled.score_grad_norm, '.3g')} |"
        )

    both = {}  # (inputs, d_model, heads, d_k) -> {is_scaled: point}
    for p in points:
        both.setdefault((p.inputs, p.d_model, p.num_heads, p.d_k), {})[p.is_scaled] = p
    measures = "Var(q·k) | mean max weight | entropy (nats) | ‖grad at scores‖ |"
    lines = [
        "Each measure is given for the raw scores q·k first and for the scaled scores q·k/√d_k second;",
        "Var(q·k) is the same for both.",
    ]
    for inputs, title, head in (
        ("unit variance", "**Unit-variance queries and keys**", "| d_k | "),
        (
            "minitrans at init",
            "**minitrans at initialisation** (the first encoder layer of a freshly built model, fed random tokens)",
            "| d_model, heads | d_k | ",
        ),
    ):
        rows = sorted(((key, pairs) for key, pairs in both.items() if key[0] == inputs), key=lambda row: row[0][1:])
        if not rows:
            continue
        lines += ["", title, "", head + measures, "|" + "---|" * (head.count("|") - 2) + "---:|" * 5]
        for (_, d_model, heads, _), pairs in rows:
            lead = "| " if d_model is None else f"| {d_model}, {heads} | "
            lines.append(lead + cells(pairs[False], pairs[True]))
    return "\n".join(lines)


def _series(points: Sequence[ScalingPoint]) -> dict[str, list[ScalingPoint]]:
    """The points as lines against d_k: unit-variance inputs, then one line per model width."""
    lines: dict[str, list[ScalingPoint]] = {}
    for p in sorted(points, key=lambda p: (p.d_model or 0, p.d_k)):
        name = "unit variance" if p.d_model is None else f"minitrans d_model {p.d_model} at init"
        lines.setdefault(name, []).append(p)
    return lines


def plot(points: Sequence[ScalingPoint], length: int = 32) -> Figure:
    """Four panels against d_k (log scale): Var(q·k), max weight, entropy, gradient norm; one
    colour for unit-variance inputs and one per model width, solid ÷ √d_k, dashed unscaled."""
    fig = Figure(figsize=(11, 8.5), dpi=100, layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    panels = [
        ("dot_variance", "Var(q·k) of the raw dot products", True),
        ("max_weight", "mean largest softmax weight (1 = one-hot)", False),
        ("entropy", "mean row entropy, nats", False),
        ("score_grad_norm", "mean ‖gradient reaching the scores‖", True),
    ]
    series = _series(points)
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    colours = {name: palette[index % len(palette)] for index, name in enumerate(series)}
    for ax, (field, title, is_log) in zip(axes, panels):
        for name, chosen in series.items():
            for is_scaled in (True, False):
                if field == "dot_variance" and is_scaled:
                    continue  # the raw products do not depend on the scaling
                line = [p for p in chosen if p.is_scaled == is_scaled]
                ax.plot(
                    [p.d_k for p in line],
                    [getattr(p, field) for p in line],
                    marker="o",
                    color=colours[name],
                    linestyle="-" if is_scaled or field == "dot_variance" else "--",
                    label=name if field == "dot_variance" else None,
                )
        if field == "dot_variance":
            d_ks = sorted({p.d_k for p in points})
            ax.plot(d_ks, d_ks, color="grey", linewidth=6, alpha=0.35, label="= d_k (the notes' prediction)")
        if field == "entropy":
            ax.axhline(math.log(length), color="grey", linestyle=":", label=f"uniform over {length}: log {length}")
        if field == "max_weight":
            ax.axhline(1 / length, color="grey", linestyle=":", label=f"uniform: 1/{length}")
        ax.set_xscale("log", base=2)
        d_ks = sorted({p.d_k for p in points})
        ax.set_xticks(d_ks, [str(d_k) for d_k in d_ks])
        ax.minorticks_off()
        if is_log:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=12)
        ax.set_xlabel("d_k (per-head key width)", fontsize=11)
        ax.tick_params(labelsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=10)
    fig.suptitle(f"√d_k scaling at initialisation, {length} keys per row: solid ÷ √d_k, dashed unscaled", fontsize=13)
    return fig

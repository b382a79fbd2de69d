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
components) and a freshly initialised minitrans Transformer of that d_k, whose first encoder
layer's Q, K and V are projected from random tokens embedded as the model embeds them
(embedding × √d_model + sinusoidal positions, then the pre-norm LayerNorm).

Shape legend: B batch, H heads, L length, Dk per-head key width.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from matplotlib.figure import Figure
from torch import Tensor

D_KS = (4, 8, 16, 32, 64, 128, 256, 512)
INPUTS = ("unit variance", "minitrans at init")


@dataclass(frozen=True)
class ScalingPoint:
    inputs: str  # one of INPUTS
    d_k: int
    is_scaled: bool
    dot_variance: float  # Var(q·k), the same with or without scaling (the raw products)
    max_weight: float  # mean over rows of the largest softmax weight
    entropy: float  # mean row entropy, nats
    score_grad_norm: float  # mean over rows of ‖∂loss/∂scores‖


def unit_variance_qkv(d_k: int, batch: int, heads: int, length: int, generator: torch.Generator):
    """q, k, v (B, H, L, Dk) with independent N(0, 1) components: the notes' assumption."""
    return tuple(torch.randn(batch, heads, length, d_k, generator=generator) for _ in range(3))


@torch.no_grad()
def model_qkv(d_k: int, batch: int, length: int, seed: int, vocab: int = 1000):
    """q, k, v (B, H, L, Dk) of the first encoder layer of a freshly initialised default-sized
    Transformer with per-head width ``d_k``, fed random (non-padding) tokens."""
    from minitrans.core.config import TransformerConfig
    from minitrans.models.transformer import Transformer

    torch.manual_seed(seed)
    model = Transformer(TransformerConfig(d_k=d_k, dropout=0.0), vocab, vocab, pad_id=0).eval()
    tokens = torch.randint(4, vocab, (batch, length))  # (B, L)
    x = model.src_embed(tokens) * math.sqrt(model.d_model) + model.positions(length)  # (B, L, D)
    layer = model.encoder_layers[0]
    return layer.self_attn.project_qkv(layer.attn_block.norm(x))  # each (B, H, L, Dk)


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
    d_ks: Sequence[int] = D_KS, batch: int = 16, heads: int = 4, length: int = 32, seed: int = 0
) -> list[ScalingPoint]:
    """Every (inputs, d_k, scaled or not) point; the same q, k, v for the scaled and unscaled."""
    points = []
    for d_k in d_ks:
        generator = torch.Generator().manual_seed(seed + d_k)
        sources = {
            "unit variance": unit_variance_qkv(d_k, batch, heads, length, generator),
            "minitrans at init": model_qkv(d_k, batch, length, seed + d_k),
        }
        for inputs, (q, k, v) in sources.items():
            for is_scaled in (False, True):
                grads = torch.Generator().manual_seed(seed)
                points.append(ScalingPoint(inputs, d_k, is_scaled, **measure(q, k, v, is_scaled, grads)))
    return points


def as_rows(points: Sequence[ScalingPoint]) -> list[dict]:
    return [asdict(point) for point in points]


TABLE_HEAD = "| inputs | d_k | scores | Var(q·k) | mean max weight | entropy (nats) | ‖grad at scores‖ |"


def table(points: Sequence[ScalingPoint]) -> str:
    """A Markdown table, one line per point."""
    lines = [TABLE_HEAD, "|---|---:|---|---:|---:|---:|---:|"]
    for p in points:
        scale = "q·k/√d_k" if p.is_scaled else "q·k"
        lines.append(
            f"| {p.inputs} | {p.d_k} | {scale} | {p.dot_variance:.3g} | {p.max_weight:.3f} | "
            f"{p.entropy:.3f} | {p.score_grad_norm:.3g} |"
        )
    return "\n".join(lines)


def plot(points: Sequence[ScalingPoint], length: int = 32) -> Figure:
    """Four panels against d_k (log scale): Var(q·k), max weight, entropy, gradient norm."""
    fig = Figure(figsize=(11, 7.5), dpi=100, layout="constrained")
    axes = fig.subplots(2, 2).ravel()
    panels = [
        ("dot_variance", "Var(q·k) of the raw dot products", True),
        ("max_weight", "mean largest softmax weight (1 = one-hot)", False),
        ("entropy", "mean row entropy, nats", False),
        ("score_grad_norm", "mean ‖gradient reaching the scores‖", True),
    ]
    colours = {"unit variance": "tab:blue", "minitrans at init": "tab:orange"}
    for ax, (field, title, is_log) in zip(axes, panels):
        for inputs in INPUTS:
            for is_scaled in (True, False):
                chosen = [p for p in points if p.inputs == inputs and p.is_scaled == is_scaled]
                if field == "dot_variance" and is_scaled:
                    continue  # the raw products do not depend on the scaling
                label = inputs if field == "dot_variance" else f"{inputs}, {'÷ √d_k' if is_scaled else 'unscaled'}"
                ax.plot(
                    [p.d_k for p in chosen],
                    [getattr(p, field) for p in chosen],
                    marker="o",
                    color=colours[inputs],
                    linestyle="-" if is_scaled or field == "dot_variance" else "--",
                    label=label,
                )
        if field == "dot_variance":
            d_ks = sorted({p.d_k for p in points})
            ax.plot(d_ks, d_ks, color="grey", linewidth=6, alpha=0.35, label="= d_k (the notes' prediction)")
        if field == "entropy":
            ax.axhline(math.log(length), color="grey", linestyle=":", label=f"uniform over {length}: log {length}")
        if field == "max_weight":
            ax.axhline(1 / length, color="grey", linestyle=":", label=f"uniform: 1/{length}")
        ax.set_xscale("log", base=2)
        if is_log:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("d_k (per-head key width)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"√d_k scaling at initialisation: {length} keys per row; solid ÷ √d_k, dashed unscaled")
    return fig


RESULTS = ("scaling_at_init.json", "scaling_at_init.md", "scaling_at_init.png")  # what the script writes


def is_own_result(path: str | Path) -> bool:
    """Whether ``path`` (one of :data:`RESULTS`) holds what scripts/scaling_at_init.py writes,
    so a rerun may replace it: rows of :class:`ScalingPoint`, the table, or a PNG beside such rows."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            rows = json.loads(path.read_text(encoding="utf-8"))
            names = {field.name for field in fields(ScalingPoint)}
            return isinstance(rows, list) and bool(rows) and all(isinstance(r, dict) and set(r) == names for r in rows)
        if path.suffix == ".md":
            return path.read_text(encoding="utf-8").startswith(TABLE_HEAD)
        with path.open("rb") as file:
            is_png = file.read(8) == b"\x89PNG\r\n\x1a\n"
        return is_png and is_own_result(path.with_suffix(".json"))
    except (OSError, ValueError):
        return False

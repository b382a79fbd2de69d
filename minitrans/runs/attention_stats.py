"""Two numbers per attention layer that the notes' claims are read by (docs/claims.md): the
entropy of the attention rows (claim 1: unscaled scores saturate the softmax, so rows grow
peaked and their entropy falls) and the share of the decoder self-attention's weight on later
positions (claim 2: with the causal mask it is exactly 0; without it the decoder looks ahead).

Maps are :meth:`minitrans.inference.translator.Translator.attention_maps`' ``{kind: [per-layer
(H, Lq, Lk)]}``. Shape legend: H heads, Lq query rows, Lk keys.
"""

from __future__ import annotations

import torch
from torch import Tensor


def row_entropy(weights: Tensor) -> Tensor:
    """-Σ w log w of each row, in nats (0 log 0 = 0): (..., Lq, Lk) -> (..., Lq)."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def attention_entropy(maps: dict[str, list[Tensor]]) -> dict[str, float]:
    """``{"enc_self_layer1": mean row entropy over heads and rows, ...}`` for every layer; rows
    with no weight at all (nothing to attend to) are left out."""
    found = {}
    for kind, layers in maps.items():
        for n, weights in enumerate(layers):
            if weights is None:
                continue
            real = weights.sum(dim=-1) > 0  # (H, Lq)
            found[f"{kind}_layer{n + 1}"] = float(row_entropy(weights.float())[real].mean()) if real.any() else 0.0
    return found


def future_share(weights: Tensor) -> float:
    """The mean share of a query row's weight on positions after its own: (H, T, T) -> float;
    0 for a causal decoder, up to (T-1-t)/T per row for one that attends uniformly."""
    length = weights.shape[-1]
    later = torch.ones(length, length, dtype=torch.bool, device=weights.device).triu(1)  # (T, T)
    return float((weights * later).sum(dim=-1).mean())


__all__ = ["attention_entropy", "future_share", "row_entropy"]

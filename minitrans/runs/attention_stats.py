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


def measure_attention_stats(translator, src_ids: list[list[int]], tgt_ids: list[list[int]]) -> dict[str, dict]:
    """Over sentence pairs (targets teacher-forced): each layer's mean row entropy and each
    decoder self-attention layer's mean future share, averaged over the sentences;
    ``{"entropy": {"enc_self_layer1": ...}, "future_share": {"dec_self_layer1": ...}}``."""
    entropy: dict[str, list[float]] = {}
    future: dict[str, list[float]] = {}
    for src, tgt in zip(src_ids, tgt_ids):
        maps = translator.attention_maps(src, tgt)
        for key, value in attention_entropy(maps).items():
            entropy.setdefault(key, []).append(value)
        for n, weights in enumerate(maps.get("dec_self", [])):
            future.setdefault(f"dec_self_layer{n + 1}", []).append(future_share(weights))
    mean = {key: sum(values) / len(values) for key, values in entropy.items()}
    return {"entropy": mean, "future_share": {key: sum(values) / len(values) for key, values in future.items()}}


def future_card(translator, src_ids: list[int], tgt_ids: list[int], title: str):
    """The decoder self-attention head with the most weight on later positions, for one pair
    teacher-forced, as an attention card (rows: decoder inputs; columns: the same positions)."""
    from minitrans.inference.translator import sentence_tokens
    from minitrans.runs.viz import attention_card

    layers = translator.attention_maps(src_ids, tgt_ids)["dec_self"]  # [(H, T, T)]
    share, layer, head = max((future_share(w[h][None]), n, h) for n, w in enumerate(layers) for h in range(len(w)))
    _, tgt_in_tokens, _ = sentence_tokens(translator.tokenizer, src_ids, tgt_ids)
    heading = f"{title} · decoder self-attention L{layer + 1} H{head + 1}: {share:.0%} on later words"
    return attention_card(layers[layer][head], tgt_in_tokens, tgt_in_tokens, heading)


__all__ = ["attention_entropy", "future_card", "future_share", "measure_attention_stats", "row_entropy"]

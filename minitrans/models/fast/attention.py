"""Multi-head attention made fast: the written-out path in place and with packed-bit dropout.

Shape legend: B batch, H heads, Lq query length, Lk key length, Dk per-head key width, Dv
per-head value width. The computation is :func:`minitrans.models.attention.scaled_dot_product_attention`'s.
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.models.attention import MultiHeadAttention, make_causal_mask
from minitrans.models.fast.dropout import dropout


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """The notes' softmax(Q Kᵀ · scale) V with fewer passes: the mask filled in place, rows
    without a key zeroed only when there are some, dropout from packed random bits."""
    if is_causal:
        causal = make_causal_mask(q.shape[-2], q.device)
        mask = causal if mask is None else mask & causal
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q * scale) @ k.transpose(-2, -1)  # (B, H, Lq, Lk)
    if mask is not None:
        # In place: the product is a fresh tensor that no backward keeps.
        scores = scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (B, H, Lq, Lk)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (B, 1|H, 1|Lq, 1)
        if torch.compiler.is_compiling() or not bool(has_key.all()):  # no data-dependent branch in graphs
            weights = weights.masked_fill(~has_key, 0.0)
    attended = dropout(weights, dropout_p)
    return attended @ v, (weights if need_weights else None)  # (B, H, Lq, Dv)


FEW_QUERIES = 16  # a decoding step's one query per row, or a sentence's K beams as K queries


class FastMultiHeadAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` whose written-out path is :func:`scaled_dot_product_attention`
    above, and which takes that path for few queries on the CPU without autograd (a decoding
    step, or a short source in inference): there PyTorch's fused kernel costs up to twice the two
    small products (docs/translating.md, "A decoding step's attention, written out")."""

    def takes_fused_kernel(self, q: Tensor, need_weights: bool) -> bool:
        few_queries_on_cpu = q.shape[-2] <= FEW_QUERIES and q.device.type == "cpu" and not torch.is_grad_enabled()
        return super().takes_fused_kernel(q, need_weights) and not few_queries_on_cpu

    def written_out(self, q, k, v, mask, is_causal, need_weights) -> tuple[Tensor, Tensor | None]:
        dropout_p = self.dropout.p if self.training else 0.0
        return scaled_dot_product_attention(q, k, v, mask, is_causal, dropout_p, need_weights, self.scale)


__all__ = ["FastMultiHeadAttention", "scaled_dot_product_attention"]

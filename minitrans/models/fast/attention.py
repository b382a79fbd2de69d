"""Multi-head attention made fast: which path each call takes, and a sentence's beams sharing
its source's keys and values.

Shape legend: B batch, H heads, Lq query length, Lk key length, D model width, Dk per-head key
width, Dv per-head value width, N decoder rows (beams), n sentences, K beams per sentence.
The computation is the notes' (:class:`minitrans.models.attention.MultiHeadAttention`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.models.attention import MultiHeadAttention, fused_attention, scaled_dot_product_attention

FEW_QUERIES = 16  # a decoding step's one query per row, or a sentence's K beams as K queries


def fused_kernel_pays(attn: MultiHeadAttention, queries: int, device: torch.device) -> bool:
    """Whether PyTorch's fused kernel is the faster path for ``queries`` queries. On the CPU it
    is not (docs/performance.md): in training with dropout (the fused CPU kernels have none and
    fall back to an unfused path slower than the written-out one), nor for a decoding step's few
    queries without autograd (there the kernel's overhead outweighs the two small products)."""
    if device.type != "cpu":
        return True
    if attn.training and attn.dropout.p > 0.0:
        return False
    return queries > FEW_QUERIES or torch.is_grad_enabled()


def attend_padded(attn: MultiHeadAttention, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
    """The attention of ``attn`` on heads already projected (the packed encoder's): (B, H, Lq, Dk)
    ... -> (B, H, Lq, Dv), through whichever path pays."""
    if attn.use_fused and fused_kernel_pays(attn, q.shape[-2], q.device):
        return fused_attention(q, k, v, mask, False, attn.dropout.p if attn.training else 0.0, attn.scale)
    return scaled_dot_product_attention(q, k, v, mask, False, attn.dropout, False, attn.scale)[0]


class FastMultiHeadAttention(MultiHeadAttention):
    """The notes' attention, taking the written-out path where the fused kernel does not pay
    (:func:`fused_kernel_pays`; the written-out path is the one that returns the weights, which
    are then dropped), and letting the K beams of a sentence attend as K queries of one row over
    its source's keys and values, kept once per sentence (``FastTransformer.reorder_cache``)."""

    def forward(self, x, memory=None, mask=None, is_causal=False, need_weights=False, kv_cache=None):
        if self.is_cross and kv_cache is not None and kv_cache["k"].shape[0] != x.shape[0]:
            return self._beams_over_one_source(x, mask, need_weights, kv_cache)
        written_out = need_weights or not fused_kernel_pays(self, x.shape[1], x.device)
        out, weights = super().forward(x, memory, mask, is_causal, written_out, kv_cache)
        return out, (weights if need_weights else None)

    def _beams_over_one_source(self, x: Tensor, mask: Tensor | None, need_weights: bool, kv_cache: dict):
        rows, sentences = x.shape[0], kv_cache["k"].shape[0]
        beam = rows // sentences
        x = x.reshape(sentences, beam, x.shape[-1])  # (N, 1, D) -> (n, K, D)
        mask = None if mask is None else mask[::beam]  # (n, 1, 1, S)
        out, weights = self.forward(x, None, mask, False, need_weights, kv_cache)  # (n, K, D), (n, H, K, S)
        if weights is not None:
            weights = weights.transpose(1, 2).reshape(rows, self.num_heads, 1, -1)  # (N, H, 1, S)
        return out.reshape(rows, 1, -1), weights  # (N, 1, D)


__all__ = ["FastMultiHeadAttention", "attend_padded", "fused_kernel_pays"]

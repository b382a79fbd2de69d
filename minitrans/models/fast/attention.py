"""Multi-head attention made fast: PyTorch's fused kernel where it pays, the notes' written-out
formula elsewhere, and a sentence's beams sharing its source's keys and values.

Shape legend: B batch, H heads, Lq query length, Lk key length, D model width, Dk per-head key
width, Dv per-head value width, N decoder rows (beams), n sentences, K beams per sentence.
The computation is the notes' (:class:`minitrans.models.attention.MultiHeadAttention`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from minitrans.models.attention import (
    MultiHeadAttention,
    make_causal_mask,
    merge_heads,
    scaled_dot_product_attention,
)

FEW_QUERIES = 16  # a decoding step's one query per row, or a sentence's K beams as K queries


def fused_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool, dropout_p: float, scale: float | None = None
) -> Tensor:
    """The notes' :func:`~minitrans.models.attention.scaled_dot_product_attention` through
    PyTorch's fused kernel, which computes softmax(QKᵀ · scale)V without materialising the
    weights where it has a kernel for the case (on the CPU, none with dropout: it falls back to
    a slower path that builds them); nanoGPT's ``if self.flash:``. (B, H, Lq, Dk) ... ->
    (B, H, Lq, Dv).

    PyTorch's kernels disagree on fully masked rows, so those rows are zeroed here to keep
    the project's convention; it costs one reduction over the mask, not over the scores.
    """
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    if is_causal:
        mask = mask & make_causal_mask(q.shape[-2], q.device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
    has_key = mask.any(dim=-1, keepdim=True)  # (B, 1|H, 1|Lq, 1)
    return torch.where(has_key, out, 0.0)  # (B, H, Lq, Dv)


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


class FastMultiHeadAttention(MultiHeadAttention):
    """The notes' attention, through PyTorch's fused kernel where it pays (:func:`fused_kernel_pays`)
    and nobody asks for the weights, and letting the K beams of a sentence attend as K queries of
    one row over its source's keys and values, kept once per sentence
    (``FastTransformer.reorder_cache``). ``use_fused = False`` on a module keeps it on the
    written-out path (the speed measures turn the kernel off that way)."""

    use_fused = True

    def forward(self, x, memory=None, mask=None, is_causal=False, need_weights=False, kv_cache=None):
        if self.is_cross and kv_cache is not None and kv_cache["k"].shape[0] != x.shape[0]:
            return self._beams_over_one_source(x, mask, need_weights, kv_cache)
        q, k, v = self.project(x, memory, kv_cache)  # (B, H, Lq|Lk, Dk|Dv)
        out, weights = self.attend(q, k, v, mask, is_causal, need_weights)
        return self.out_proj(merge_heads(out)), weights  # (B, H, Lq, Dv) -> (B, Lq, D)

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool = False, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """The heads' attention, (B, H, Lq, Dk) ... -> (B, H, Lq, Dv) and the weights when asked
        for (the packed encoder calls it on heads it projected itself)."""
        fused = not need_weights and self.use_fused and fused_kernel_pays(self, q.shape[-2], q.device)
        if fused:
            return fused_attention(q, k, v, mask, is_causal, self.dropout.p if self.training else 0.0, self.scale), None
        return scaled_dot_product_attention(q, k, v, mask, is_causal, self.dropout, need_weights, self.scale)

    def _beams_over_one_source(self, x: Tensor, mask: Tensor | None, need_weights: bool, kv_cache: dict):
        rows, sentences = x.shape[0], kv_cache["k"].shape[0]
        beam = rows // sentences
        x = x.reshape(sentences, beam, x.shape[-1])  # (N, 1, D) -> (n, K, D)
        mask = None if mask is None else mask[::beam]  # (n, 1, 1, S)
        out, weights = self.forward(x, None, mask, False, need_weights, kv_cache)  # (n, K, D), (n, H, K, S)
        if weights is not None:
            weights = weights.transpose(1, 2).reshape(rows, self.num_heads, 1, -1)  # (N, H, 1, S)
        return out.reshape(rows, 1, -1), weights  # (N, 1, D)


__all__ = ["FastMultiHeadAttention", "fused_attention", "fused_kernel_pays"]

"""Attention, from scratch: masks, scaled dot-product attention, multi-head attention.

Shape legend: B batch, H heads, Lq query length, Lk key length, D model width,
Dk per-head key (and query) width, Dv per-head value width.

Mask convention (one for the whole project): boolean, ``True`` means "may attend", broadcast
against the scores (B, H, Lq, Lk), as in ``torch.nn.functional.scaled_dot_product_attention``.
Masks are built only by :func:`make_padding_mask` and :func:`make_causal_mask`.
A query row with nothing it may attend to gets all-zero weights and a zero output, never NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def make_padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """(B, Lk) token ids -> (B, 1, 1, Lk): True at real tokens, False at padding."""
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, Lk)


def make_causal_mask(length: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, L, L): position i may attend to positions j <= i."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()[None, None]


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    dropout: nn.Module | None = None,
    need_weights: bool = False,
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """softmax(Q Kᵀ / √Dk) V, the reference implementation, written out.

    q (B, H, Lq, Dk), k (B, H, Lk, Dk), v (B, H, Lk, Dv) -> out (B, H, Lq, Dv) and, when
    ``need_weights``, the attention weights (B, H, Lq, Lk) (after masking, before dropout).
    ``dropout`` (a module, e.g. ``nn.Dropout``) acts on the weights; ``scale`` replaces 1/√Dk.
    """
    if is_causal:
        causal = make_causal_mask(q.shape[-2], q.device)
        mask = causal if mask is None else mask & causal
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q * scale) @ k.transpose(-2, -1)  # (B, H, Lq, Lk)
    if mask is not None:
        # A finite fill keeps a fully masked row finite (and its keys' weights exactly 0 in any
        # row with one real key); such rows are then zeroed below.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)  # (B, H, Lq, Lk)
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (B, 1|H, 1|Lq, 1)
        weights = weights.masked_fill(~has_key, 0.0)
    attended = weights if dropout is None else dropout(weights)
    return attended @ v, (weights if need_weights else None)  # (B, H, Lq, Dv)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(B, L, H·W) -> (B, H, L, W): each head's slice of the projection becomes its own sequence."""
    batch, length, width = x.shape
    return x.view(batch, length, num_heads, width // num_heads).transpose(1, 2)  # (B, H, L, W)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, L, W) -> (B, L, H·W): the heads' outputs side by side, head 0 first (the concatenation)."""
    batch, heads, length, width = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * width)  # (B, L, H·W)


class MultiHeadAttention(nn.Module):
    """Multi-head attention for self-attention (Q, K, V from one sequence) and cross-attention
    (Q from the decoder, K and V from the encoder memory).

    Q = X W^Q, K = X W^K, V = X W^V: D -> H·Dk for Q and K, D -> H·Dv for V, H·Dv -> D for the
    output W^O. Self-attention keeps W^Q, W^K and W^V side by side in one ``qkv_proj`` (one matrix
    product), cross-attention W^K and W^V in one ``kv_proj``: the same maps, the names
    checkpoints hold.

    ``scale`` multiplies the scores (None: 1/√Dk, as the notes scale them; the teaching switch
    ``model.attention_scale`` gives another).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_k: int,
        d_v: int | None = None,
        dropout: float = 0.0,
        is_cross: bool = False,
        scale: float | None = None,
    ) -> None:
        super().__init__()
        self.num_heads, self.d_k, self.d_v = num_heads, d_k, d_v or d_k
        self.is_cross, self.scale = is_cross, scale
        self.dropout = nn.Dropout(dropout)  # on the attention weights
        qk_width, v_width = num_heads * self.d_k, num_heads * self.d_v
        if is_cross:
            self.q_proj = nn.Linear(d_model, qk_width)
            self.kv_proj = nn.Linear(d_model, qk_width + v_width)
        else:
            self.qkv_proj = nn.Linear(d_model, 2 * qk_width + v_width)
        self.out_proj = nn.Linear(v_width, d_model)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention: x (B, L, D) -> q, k (B, H, L, Dk), v (B, H, L, Dv)."""
        qk_width = self.num_heads * self.d_k
        q, k, v = self.qkv_proj(x).split([qk_width, qk_width, self.num_heads * self.d_v], dim=-1)  # (B, L, H·Dk|H·Dv)
        return split_heads(q, self.num_heads), split_heads(k, self.num_heads), split_heads(v, self.num_heads)

    def project_q(self, x: Tensor) -> Tensor:
        """Cross-attention queries: (B, Lq, D) -> (B, H, Lq, Dk)."""
        return split_heads(self.q_proj(x), self.num_heads)

    def project_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention keys and values, computed once per source: (B, S, D) -> (B, H, S, Dk|Dv)."""
        k, v = self.kv_proj(memory).split([self.num_heads * self.d_k, self.num_heads * self.d_v], dim=-1)
        return split_heads(k, self.num_heads), split_heads(v, self.num_heads)

    def project(
        self, x: Tensor, memory: Tensor | None = None, kv_cache: dict | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The heads' queries (B, H, Lq, Dk), keys (B, H, Lk, Dk) and values (B, H, Lk, Dv): from x
        for self-attention, the keys and values from ``memory`` for cross-attention.

        ``kv_cache`` ({"k", "v"}, a decoding step's): self-attention appends x's keys and values
        to the earlier positions' there (it updates the dict it is given: the cache grows by one
        position a step); cross-attention takes the source's
        from it, projected once (:meth:`project_kv`), and needs no ``memory``."""
        if self.is_cross:
            q = self.project_q(x)  # (B, H, Lq, Dk)
            k, v = self.project_kv(memory) if kv_cache is None else (kv_cache["k"], kv_cache["v"])  # (B, H, Lk, Dk|Dv)
            return q, k, v
        q, k, v = self.project_qkv(x)  # (B, H, Lq, Dk|Dv)
        if kv_cache is not None:  # the new positions see every earlier one: no mask needed
            k = kv_cache["k"] = torch.cat([kv_cache["k"], k], dim=2)  # (B, H, Lk, Dk)
            v = kv_cache["v"] = torch.cat([kv_cache["v"], v], dim=2)  # (B, H, Lk, Dv)
        return q, k, v

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
        kv_cache: dict | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, Lq, D) gives the queries; the keys and values come from ``memory`` (B, Lk, D) for
        cross-attention, from x for self-attention (:meth:`project`; in decoding, ``kv_cache`` holds
        them). Returns (B, Lq, D) and, when ``need_weights``, the weights (B, H, Lq, Lk)."""
        q, k, v = self.project(x, memory, kv_cache)
        out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal, self.dropout, need_weights, self.scale)
        return self.out_proj(merge_heads(out)), weights  # (B, H, Lq, Dv) -> (B, Lq, H·Dv) -> (B, Lq, D)


__all__ = [
    "MultiHeadAttention",
    "make_causal_mask",
    "make_padding_mask",
    "merge_heads",
    "scaled_dot_product_attention",
    "split_heads",
]

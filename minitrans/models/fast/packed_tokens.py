"""The encoder on real tokens only: its position-wise work skips the source padding.

Shape legend: B batch, S source length, N real (non-pad) source tokens of the batch, D model
width, H heads, Dv per-head value width.

Speed only; the model's function is unchanged. An encoder layer's projections, feed-forward,
layer norms, residual adds and dropout act on each position alone, and a padded source
position is never attended to (its key is masked) and feeds no loss. Token-bucketed batches
still pad the source (batches are sorted by target length first), and those rows cost the
encoder's matrix products as much as real ones. So the encoder keeps the batch as (N, D) rows of real tokens, and only self-attention, which
needs the (B, H, S, S) grid, scatters its projected queries, keys and values back into a
padded batch (zeros at padding) and gathers its output rows again. The memory the decoder
reads is the padded (B, S, D) again, zeros at padding (any finite value there is masked).

The real positions' values are those of the padded computation up to float rounding (matrix
products over fewer rows may sum in another order); the dropout masks are drawn for N rows
instead of B·S, so a seeded run draws different masks than before packing.
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.models.attention import merge_heads, split_heads
from minitrans.models.fast.attention import FastMultiHeadAttention


class PackedTokens:
    """Where the real tokens of a padded (B, S) batch sit, to pack (B, S, ...) rows into
    (N, ...) and back."""

    def __init__(self, is_real: Tensor) -> None:
        """is_real: (B, S) boolean, True at real tokens."""
        self.batch, self.length = is_real.shape
        self.rows = is_real.flatten().nonzero().squeeze(1)  # (N,) indices into the B·S positions

    @staticmethod
    def is_worth_it(src_mask: Tensor | None, need_weights: bool) -> bool:
        """Pack when some source is padded, no attention weights are asked for (a padded query's
        row of weights would not be the padded computation's) and no graph is being compiled
        (N depends on the data)."""
        return src_mask is not None and not need_weights and not torch.compiler.is_compiling()

    def pack(self, x: Tensor) -> Tensor:
        return x.flatten(0, 1).index_select(0, self.rows)  # (B, S, ...) -> (N, ...)

    def unpack(self, x: Tensor) -> Tensor:
        padded = x.new_zeros(self.batch * self.length, *x.shape[1:])  # (B·S, ...)
        return padded.index_copy(0, self.rows, x).view(self.batch, self.length, *x.shape[1:])  # (B, S, ...)

    def self_attention(self, attn: FastMultiHeadAttention, h: Tensor, src_mask: Tensor) -> Tensor:
        """``attn(h, mask=src_mask)`` for packed h (N, D) -> (N, D): the projections on the real
        tokens, the attention itself over the padded batch."""
        qkv = self.unpack(attn.qkv_proj(h))  # (N, 2·H·Dk + H·Dv) -> (B, S, 2·H·Dk + H·Dv)
        qk_width = attn.num_heads * attn.d_k
        q, k, v = qkv.split([qk_width, qk_width, attn.num_heads * attn.d_v], dim=-1)  # (B, S, H·Dk|H·Dv)
        q, k, v = (split_heads(part, attn.num_heads) for part in (q, k, v))  # (B, H, S, Dk|Dv)
        out = merge_heads(attn.attend(q, k, v, src_mask)[0])  # (B, S, H·Dv)
        return attn.out_proj(self.pack(out))  # (N, D)


__all__ = ["PackedTokens"]

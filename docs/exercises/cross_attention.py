"""Exercise 7: cross-attention.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py cross_attention my_cross_attention.py

You may use your own solutions of exercises 1 and 4, or minitrans' (``from
minitrans.models.attention import scaled_dot_product_attention, split_heads, merge_heads``).
"""

from __future__ import annotations

from torch import Tensor


def cross_attention(
    y: Tensor,
    memory: Tensor,
    src_mask: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    w_o: Tensor,
    num_heads: int,
) -> Tensor:
    """Multi-head attention from the decoder to the encoder's output (no biases).

    y (B, T, D): the decoder's states, one per target position; memory (B, S, D): the encoder's
    output; src_mask (B, 1, 1, S): True at the source's real tokens, False at its padding.
    w_q, w_k (D, H·d_k), w_v (D, H·d_v), w_o (H·d_v, D); H = ``num_heads``.

    Q = y W^Q, K = memory W^K, V = memory W^V, split into H heads; each head computes
    softmax(Q Kᵀ / √d_k) V over the source positions it may attend to; the heads are
    concatenated (head 0 first) and mapped back by W^O. Returns (B, T, D).
    """
    raise NotImplementedError

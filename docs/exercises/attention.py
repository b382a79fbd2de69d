"""Exercise 1: scaled dot-product attention.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py attention my_attention.py
"""

from __future__ import annotations

from torch import Tensor


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """softmax(Q Kᵀ / √d_k) V.

    q (B, H, Lq, d_k), k (B, H, Lk, d_k), v (B, H, Lk, d_v); ``mask``: None, or boolean, broadcast
    against the scores (B, H, Lq, Lk), True where a query may attend to a key.

    Returns ``(out, weights)``: out (B, H, Lq, d_v) and the attention weights (B, H, Lq, Lk), each
    query's row summing to 1 over the keys it may attend to. A query that may attend to no key at
    all gets zero weights and a zero output, never NaN.
    """
    raise NotImplementedError

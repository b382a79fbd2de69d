"""Exercise 4: split and merge heads.

Copy this file, write both bodies, then check them against the notes model:

    python docs/exercises/check.py heads my_heads.py
"""

from __future__ import annotations

from torch import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """x (B, L, H·W), a projection's output -> (B, H, L, W): head h gets the features
    h·W to (h+1)·W - 1 of every position, as a sequence of its own.
    """
    raise NotImplementedError


def merge_heads(x: Tensor) -> Tensor:
    """x (B, H, L, W), the heads' outputs -> (B, L, H·W): at each position the heads' outputs
    side by side, head 0 first (the concatenation that W^O then maps back to d_model).
    Undoes :func:`split_heads`. ``x`` may be non-contiguous (it often comes from a transpose).
    """
    raise NotImplementedError

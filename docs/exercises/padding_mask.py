"""Exercise 3: the padding mask.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py padding_mask my_padding_mask.py
"""

from __future__ import annotations

from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """tokens (B, S), token ids with ``pad_id`` after the end of each shorter sentence.

    Returns a boolean mask (B, 1, 1, S) that broadcasts against the scores (B, H, Lq, S): True at
    the real tokens (keys a query may attend to), False at the padding.
    """
    raise NotImplementedError

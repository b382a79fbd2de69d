"""Exercise 5: sinusoidal positions.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py positions my_positions.py
"""

from __future__ import annotations

from torch import Tensor


def sinusoidal_positions(length: int, d_model: int) -> Tensor:
    """The table of positions (L, D) that is added to the embeddings, one row per position
    pos = 0, 1, ..., L - 1 (``d_model`` is even):

        PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))
    """
    raise NotImplementedError

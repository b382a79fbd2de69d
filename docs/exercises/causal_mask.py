"""Exercise 2: the causal mask.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py causal_mask my_causal_mask.py
"""

from __future__ import annotations

from torch import Tensor


def causal_mask(length: int) -> Tensor:
    """The decoder's self-attention mask for ``length`` target positions: boolean, shape
    (1, 1, L, L) so that it broadcasts against the scores (B, H, L, L); row i is the query at
    position i, column j the key at position j, True where i may attend to j (j <= i).
    """
    raise NotImplementedError

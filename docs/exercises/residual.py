"""Exercise 6: a residual pre-norm block.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py residual my_residual.py
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn


def residual_block(x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.LayerNorm) -> Tensor:
    """One sub-layer (self-attention or feed-forward) wrapped as a pre-norm Transformer layer
    wraps it: x (B, L, D) -> (B, L, D), the sub-layer applied to the normalised x and added to
    x itself. ``sublayer`` maps (B, L, D) to (B, L, D); ``norm`` is the block's LayerNorm.
    (No dropout here: the model's block adds it on the sub-layer's output while training.)
    """
    raise NotImplementedError

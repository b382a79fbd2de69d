"""The training loss: label-smoothed cross-entropy summed over the real target tokens.

Summed, not averaged: the caller divides by the token count of the (global) batch, which under
DistributedDataParallel is not the count of one rank's share. The validation loss is this one;
the training step's is :func:`minitrans.models.build.training_loss`'s choice: this one for
``model.implementation=notes``, else the same function in fewer passes (``models/fast/loss.py``).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from minitrans.data.tokenizer import PAD_ID


def token_loss(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Summed (label-smoothed) cross-entropy over real target tokens: logits (B, T, V),
    tgt_out (B, T) -> (). Computed in float32 whatever the logits' dtype (e.g. bfloat16 under
    autocast)."""
    vocab = logits.shape[-1]
    return F.cross_entropy(
        logits.reshape(-1, vocab).float(),  # (B·T, V)
        tgt_out.reshape(-1),  # (B·T,)
        ignore_index=PAD_ID,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


__all__ = ["token_loss"]

"""The training loss: label-smoothed cross-entropy summed over the real target tokens.

One function for the trainer's step, validation loss and the training benchmark, so a change
here changes all of them. Summed, not averaged: the caller divides by the token count of the
(global) batch, which under DistributedDataParallel is not the count of one rank's share.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minitrans.tokenizer import PAD_ID


def token_loss(logits: torch.Tensor, tgt_out: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Summed cross-entropy over real target tokens: logits (B, T, V), tgt_out (B, T) -> ().

    Computed in float32 whatever the logits' dtype (e.g. bfloat16 under autocast)."""
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),  # (B·T, V)
        tgt_out.reshape(-1),  # (B·T,)
        ignore_index=PAD_ID,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


__all__ = ["token_loss"]

"""Forced scoring: how likely a model finds given translations, piece by piece, and which
source piece each target piece attends to most (a hard alignment).

Both come from one teacher-forced pass (``model.decode`` on ``[BOS] + target``) with the
searches' conventions: PAD and BOS are never valid outputs, so they are left out of every
softmax, and a finished translation is scored with its EOS. Scoring a model's own greedy or
beam output therefore gives back the score the search reported for it.

Shape legend: B batch, H heads, S source length, T target length (with BOS), V vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.utils import eval_mode
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from minitrans.inference.decoding import length_normalizer
from minitrans.models.interface import Seq2SeqModel


@dataclass(frozen=True)
class ForcedScore:
    """One translation scored by teacher forcing."""

    token_log_probs: list[float]  # one per target piece, then one for EOS when ``with_eos``
    log_prob: float  # their sum
    score: float  # log_prob / length_normalizer(len(token_log_probs), length_penalty), as the search ranks
    alignment: list[int] | None  # per target piece, the most-attended source piece (None: no attention)


@torch.no_grad()
def force_decode(
    model: Seq2SeqModel,
    src: Tensor,
    targets: Sequence[Sequence[int]],
    length_penalty: float = DecodingOptions.length_penalty,
    with_eos: Sequence[bool] | bool = True,
) -> list[ForcedScore]:
    """src (B, S) with EOS-terminated rows, ``targets`` B lists of output ids (no BOS, no EOS)
    -> one :class:`ForcedScore` each. ``with_eos`` (per row or for all) adds EOS's probability,
    as for a translation that ended; a hypothesis cut at the length limit has none."""
    ends = [with_eos] * len(targets) if isinstance(with_eos, bool) else list(with_eos)
    longest = max((len(ids) for ids in targets), default=0) + 1
    tgt_in = src.new_full((len(targets), longest), PAD_ID)  # (B, T)
    tgt_out = src.new_full((len(targets), longest), PAD_ID)  # (B, T)
    for row, ids in enumerate(targets):
        tgt_in[row, : len(ids) + 1] = torch.as_tensor([BOS_ID, *ids])
        tgt_out[row, : len(ids) + 1] = torch.as_tensor([*ids, EOS_ID])
    with eval_mode(model):
        enc, _ = model.encode(src)
        logits, maps = model.decode(enc, tgt_in, need_weights=True)  # (B, T, V)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    logits[..., [PAD_ID, BOS_ID]] = float("-inf")
    log_probs = logits.log_softmax(dim=-1).gather(2, tgt_out[:, :, None])[:, :, 0]  # (B, T)
    alignments = hard_alignment(maps["cross"][-1], src) if maps.get("cross") else None  # (B, T)
    scores = []
    for row, (ids, end) in enumerate(zip(targets, ends)):
        pieces = log_probs[row, : len(ids) + int(end)].tolist()
        total = float(sum(pieces))
        alignment = alignments[row, : len(ids)].tolist() if alignments is not None else None
        scores.append(ForcedScore(pieces, total, total / length_normalizer(len(pieces), length_penalty), alignment))
    return scores


def hard_alignment(cross: Tensor, src: Tensor) -> Tensor:
    """cross (B, H, T, S) attention of one layer -> (B, T): for each decoder row, the source
    piece its heads attend to most on average. EOS and padding are never chosen (unless EOS is
    all a source has), so the index always names a real source piece."""
    weights = cross.float().mean(dim=1)  # (B, T, S)
    is_piece = (src != PAD_ID) & (src != EOS_ID)  # (B, S)
    is_piece[:, 0] |= ~is_piece.any(dim=1)  # an empty source: point at position 0
    return weights.masked_fill(~is_piece[:, None, :], float("-inf")).argmax(dim=-1)  # (B, T)


__all__ = ["ForcedScore", "force_decode", "hard_alignment"]

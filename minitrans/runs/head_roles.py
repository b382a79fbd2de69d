"""What each attention head does, scored on its attention maps (issue 38, the notes' claim that
heads capture different kinds of relation).

Each score is a share of attention weight in [0, 1], averaged over the query rows it applies
to, so a head that does the thing perfectly scores 1 and a head that spreads its weight
evenly over L keys scores about 1/L:

- previous-token share: the weight a position puts on the position just before it;
- next-token share: the weight on the position just after it (0 in the decoder's causal
  self-attention, which cannot see it);
- linked-position share: the weight a query position puts on a given set of key positions
  (for instance from a verb to its gold subject across a relative clause);
- alignment heads in cross-attention are scored by AER in :mod:`minitrans.runs.alignment`.

A head is given a role when its score reaches :data:`ROLE_THRESHOLDS` (more than half of its
weight on one neighbour, and so on); the thresholds are stated here, once.

Shape legend: B batch, H heads, Lq query length, Lk key length.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

# A score at or past its threshold names the role (AER: at or below).
ROLE_THRESHOLDS = {"previous": 0.5, "next": 0.5, "subject": 0.5, "alignment_aer": 0.3}


def _lengths(weights: Tensor, lengths: Sequence[int] | Tensor | None) -> Tensor:
    if lengths is None:
        return torch.full((weights.shape[0],), weights.shape[-1])
    return torch.as_tensor(lengths)


def neighbour_share(weights: Tensor, offset: int, lengths: Sequence[int] | Tensor | None = None) -> Tensor:
    """Mean weight of query i on key i + ``offset``, per head: (B, H, L, L) -> (H,).

    Only the rows that have such a key within their sentence's real length count (``lengths``
    (B,) real positions per sentence; None: all L). A uniform row of L keys gives 1/L."""
    real = _lengths(weights, lengths)  # (B,)
    # Diagonal entry n is query n, key n + offset (offset >= 0) or query n - offset, key n.
    pairs = weights.diagonal(offset=offset, dim1=-2, dim2=-1)  # (B, H, L - |offset|)
    further = torch.arange(pairs.shape[-1]) + abs(offset)  # the later of the two positions
    valid = (further[None] < real[:, None]).to(weights.dtype)[:, None]  # (B, 1, L - |offset|)
    rows = valid.sum()
    if rows == 0:
        return torch.zeros(weights.shape[1], dtype=weights.dtype)
    return (pairs * valid).sum(dim=(0, 2)) / rows  # (H,)


def previous_token_share(weights: Tensor, lengths: Sequence[int] | Tensor | None = None) -> Tensor:
    """Per head, the mean weight a position puts on the position before it: (B, H, L, L) -> (H,)."""
    return neighbour_share(weights, -1, lengths)


def next_token_share(weights: Tensor, lengths: Sequence[int] | Tensor | None = None) -> Tensor:
    """Per head, the mean weight a position puts on the position after it: (B, H, L, L) -> (H,)."""
    return neighbour_share(weights, +1, lengths)


def linked_share(weights: Tensor, links: Iterable[tuple[int, Sequence[int], Sequence[int]]]) -> Tensor:
    """Per head, the mean over ``links`` of the weight the query rows put on the key columns.

    ``weights`` (B, H, Lq, Lk); each link is (sentence b, query positions, key positions), e.g.
    the pieces of a verb and the pieces of its gold subject: the weight of each query row summed
    over the key positions, then averaged over the link's rows, then over links -> (H,)."""
    scores = []
    for b, rows, columns in links:
        part = weights[b][:, list(rows)][:, :, list(columns)]  # (H, rows, columns)
        scores.append(part.sum(dim=-1).mean(dim=-1))  # (H,)
    if not scores:
        return torch.zeros(weights.shape[1], dtype=weights.dtype)
    return torch.stack(scores).mean(dim=0)  # (H,)


def name_roles(scores: dict[str, float], aer: float | None = None) -> list[str]:
    """The roles whose score passes its threshold, e.g. ["previous"] or ["alignment"]."""
    roles = [role for role in ("previous", "next", "subject") if scores.get(role, 0.0) >= ROLE_THRESHOLDS[role]]
    if aer is not None and aer <= ROLE_THRESHOLDS["alignment_aer"]:
        roles.append("alignment")
    return roles


@torch.no_grad()
def self_attention_roles(maps: dict[str, list[Tensor]], lengths: dict[str, Sequence[int]]) -> dict:
    """{kind: [layer][head] {"previous": share, "next": share}} for the self-attention kinds of
    a model's maps (``enc_self`` and ``dec_self``, each (B, H, L, L) per layer); ``lengths``
    gives each kind's real positions per sentence."""
    out = {}
    for kind in ("enc_self", "dec_self"):
        if not maps.get(kind):
            continue
        out[kind] = [
            [
                {"previous": float(p), "next": float(n)}
                for p, n in zip(
                    previous_token_share(layer.float().cpu(), lengths[kind]),
                    next_token_share(layer.float().cpu(), lengths[kind]),
                )
            ]
            for layer in maps[kind]
        ]
    return out

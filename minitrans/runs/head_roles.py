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

from minitrans.core.utils import eval_mode
from minitrans.data.batching import collate
from minitrans.models.interface import Seq2SeqModel

# A score at or past its threshold names the role (AER: at or below).
ROLE_THRESHOLDS = {"previous": 0.5, "next": 0.5, "subject": 0.5, "alignment_aer": 0.3}


def _lengths(weights: Tensor, lengths: Sequence[int] | Tensor | None) -> Tensor:
    if lengths is None:
        return torch.full((weights.shape[0],), weights.shape[-1])
    return torch.as_tensor(lengths)


def neighbour_sums(weights: Tensor, offset: int, lengths: Sequence[int] | Tensor | None = None) -> tuple[Tensor, int]:
    """The weight of query i on key i + ``offset`` summed per head over the rows that have such
    a key within their sentence's real length (``lengths`` (B,); None: all L), and the number
    of those rows: (B, H, L, L) -> ((H,), rows). Sums add up over batches."""
    real = _lengths(weights, lengths)  # (B,)
    # Diagonal entry n is query n, key n + offset (offset >= 0) or query n - offset, key n.
    pairs = weights.diagonal(offset=offset, dim1=-2, dim2=-1)  # (B, H, L - |offset|)
    further = torch.arange(pairs.shape[-1]) + abs(offset)  # the later of the two positions
    valid = (further[None] < real[:, None]).to(weights.dtype)[:, None]  # (B, 1, L - |offset|)
    return (pairs * valid).sum(dim=(0, 2)), int(valid.sum())  # (H,), rows


def neighbour_share(weights: Tensor, offset: int, lengths: Sequence[int] | Tensor | None = None) -> Tensor:
    """Mean weight of query i on key i + ``offset``, per head: (B, H, L, L) -> (H,); a uniform
    row of L keys gives 1/L (see :func:`neighbour_sums` for which rows count)."""
    sums, rows = neighbour_sums(weights, offset, lengths)
    return sums / rows if rows else torch.zeros_like(sums)


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
def measure_self_attention_roles(
    model: Seq2SeqModel,
    src_ids: Sequence[Sequence[int]],
    tgt_ids: Sequence[Sequence[int]],
    device: torch.device | str = "cpu",
    batch_size: int = 32,
) -> dict[str, list[list[dict[str, float]]]]:
    """Teacher-force each pair (source ids end in EOS, target ids have none) and score every
    self-attention head: {kind: [layer][head] {"previous": share, "next": share}} for
    ``enc_self`` and ``dec_self`` ({} for a model without self-attention). The cost is one
    teacher-forced pass with the weights returned."""
    totals: dict[str, list[dict[str, Tensor]]] = {}
    rows: dict[str, dict[str, int]] = {}
    with eval_mode(model):
        for start in range(0, len(src_ids), batch_size):
            chunk = range(start, min(start + batch_size, len(src_ids)))
            batch = collate([src_ids[r] for r in chunk], [tgt_ids[r] for r in chunk]).to(device)
            enc, enc_maps = model.encode(batch.src, need_weights=True)
            _, dec_maps = model.decode(enc, batch.tgt_in, need_weights=True)
            lengths = {
                "enc_self": [len(src_ids[r]) for r in chunk],
                "dec_self": [len(tgt_ids[r]) + 1 for r in chunk],  # BOS, then the target
            }
            for kind, maps in (("enc_self", enc_maps.get("enc_self")), ("dec_self", dec_maps.get("dec_self"))):
                for layer, weights in enumerate(maps or []):
                    layer_totals = totals.setdefault(kind, [])
                    if layer == len(layer_totals):
                        layer_totals.append({})
                    for role, offset in (("previous", -1), ("next", +1)):
                        sums, count = neighbour_sums(weights.float().cpu(), offset, lengths[kind])
                        layer_totals[layer][role] = layer_totals[layer].get(role, 0) + sums
                        rows.setdefault(kind, {}).setdefault(f"{layer}.{role}", 0)
                        rows[kind][f"{layer}.{role}"] += count
    return {
        kind: [
            [
                {role: float(sums[head] / max(rows[kind][f"{layer}.{role}"], 1)) for role, sums in scores.items()}
                for head in range(len(scores["previous"]))
            ]
            for layer, scores in enumerate(layers)
        ]
        for kind, layers in totals.items()
    }

"""What each attention head does, scored on its attention maps (docs/claims.md, the notes' claim that
heads capture different kinds of relation).

Each score is a share of attention weight in [0, 1], averaged over the query rows it applies
to, so a head that does the thing perfectly scores 1 and a head that spreads its weight
evenly over L keys scores about 1/L:

- previous-token share: the weight a position puts on the position just before it;
- next-token share: the weight on the position just after it (0 in the decoder's causal
  self-attention, which cannot see it);
- linked-position share: the weight a query position puts on a given set of key positions
  (for instance from a verb to its gold subject across a relative clause);
- alignment heads in cross-attention are scored by AER in :mod:`minitrans.analysis.alignment`.

A head is given a role when its score reaches :data:`ROLE_THRESHOLDS` (more than half of its
weight on one neighbour, and so on); the thresholds are stated here, once.

Shape legend: B batch, H heads, Lq query length, Lk key length.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from minitrans.analysis.alignment import piece_words
from minitrans.core.config import DataConfig
from minitrans.core.utils import eval_mode
from minitrans.data.batching import collate
from minitrans.data.probes import subject_pairs
from minitrans.data.tokenizer import Tokenizer
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
    total, count = linked_sums(weights, links)
    return total / count if count else total


def linked_sums(weights: Tensor, links: Iterable[tuple[int, Sequence[int], Sequence[int]]]) -> tuple[Tensor, int]:
    """:func:`linked_share`'s sum over links (not yet averaged) and the number of links, so that
    batches add up: ((H,), links)."""
    total, count = torch.zeros(weights.shape[1], dtype=weights.dtype), 0
    for b, rows, columns in links:
        part = weights[b][:, list(rows)][:, :, list(columns)]  # (H, rows, columns)
        total += part.sum(dim=-1).mean(dim=-1)  # (H,)
        count += 1
    return total, count


def piece_positions(pieces: Sequence[str], words: Iterable[int], offset: int = 0) -> list[int]:
    """The positions of the pieces of ``words`` (word indices, words split at spaces) that hold
    a letter: "sleeps." is "▁sleeps" and ".", and only "▁sleeps" is the verb. ``offset`` shifts
    the positions (1 in the decoder, whose input starts with BOS)."""
    wanted, of_word = set(words), piece_words(pieces)
    return [p + offset for p, piece in enumerate(pieces) if of_word[p] in wanted and any(c.isalpha() for c in piece)]


def subject_links_at_pieces(
    src_pieces: Sequence[str], tgt_pieces: Sequence[str], src_links: Sequence, tgt_links: Sequence
) -> dict[str, list[tuple[list[int], list[int]]]]:
    """Word links from a verb to its subject (:func:`minitrans.data.grammar.subject_links`) as
    (query positions, key positions) of the encoder's and the decoder's self-attention. The
    decoder's positions are shifted by its BOS, and a link is kept there only when the subject
    comes before the verb (the causal decoder cannot look ahead: "Oft bringt der Sohn, ...")."""
    enc = [(piece_positions(src_pieces, verb), piece_positions(src_pieces, nouns)) for verb, nouns in src_links]
    dec = [(piece_positions(tgt_pieces, verb, 1), piece_positions(tgt_pieces, nouns, 1)) for verb, nouns in tgt_links]
    dec = [(rows, columns) for rows, columns in dec if rows and columns and max(columns) < min(rows)]
    return {"enc_self": [link for link in enc if link[0] and link[1]], "dec_self": dec}


def subject_probe(tokenizer: Tokenizer, data: DataConfig, count: int = 200, max_len: int | None = None, seed: int = 0):
    """Pairs of the run's grammar (``data`` of the embedded corpus: its languages and lengths)
    whose verbs have subjects across relative clauses: (source ids ending in EOS, target ids,
    links per pair for :func:`measure_self_attention_roles`); None for any other corpus. Pairs
    longer than ``max_len`` pieces on either side are left out (so no link is cut)."""
    if data.name != "generated":
        return None
    pairs = subject_pairs(count, seed, data.min_words, data.max_words)
    is_english_source = data.src_lang == "en"
    sides = [(p.en, p.de, p.en_links, p.de_links) for p in pairs]
    if not is_english_source:
        sides = [(de, en, de_links, en_links) for en, de, en_links, de_links in sides]
    src_ids = tokenizer.encode_src([s[0] for s in sides])
    tgt_ids = tokenizer.encode_tgt([s[1] for s in sides])
    kept = [
        (src, tgt, subject_links_at_pieces(tokenizer.src_pieces(src[:-1]), tokenizer.tgt_pieces(tgt), side[2], side[3]))
        for src, tgt, side in zip(src_ids, tgt_ids, sides)
        if max_len is None or (len(src) <= max_len and len(tgt) < max_len)
    ]
    return [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]


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
    links: Sequence[dict[str, Sequence[tuple[Sequence[int], Sequence[int]]]]] | None = None,
) -> dict[str, list[list[dict[str, float]]]]:
    """Teacher-force each pair (source ids end in EOS, target ids have none) and score every
    self-attention head: {kind: [layer][head] {"previous": share, "next": share}} for
    ``enc_self`` and ``dec_self`` ({} for a model without self-attention). With ``links`` (one
    per pair: {kind: [(query positions, key positions)]}, as :func:`subject_links_at_pieces`
    gives), each head also gets its "subject" share: :func:`linked_share` over all links of its
    kind (0 where there is none). The cost is one teacher-forced pass with the weights returned."""
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
                    counts = rows.setdefault(kind, {})
                    found = [(neighbour_sums(weights.float().cpu(), -1, lengths[kind]), "previous")]
                    found.append((neighbour_sums(weights.float().cpu(), +1, lengths[kind]), "next"))
                    if links is not None:
                        pairs = [(b, q, k) for b, r in enumerate(chunk) for q, k in links[r].get(kind, [])]
                        found.append((linked_sums(weights.float().cpu(), pairs), "subject"))
                    for (sums, count), role in found:
                        layer_totals[layer][role] = layer_totals[layer].get(role, 0) + sums
                        counts[f"{layer}.{role}"] = counts.get(f"{layer}.{role}", 0) + count
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


ROLE_LABELS = {"previous": "previous-token", "next": "next-token", "subject": "subject", "alignment": "alignment"}


def map_roles(
    maps: dict[str, Sequence[Tensor]], aer_by_head: Sequence[Sequence[float]] | None = None
) -> dict[str, list[list[str]]]:
    """The roles each head shows on one sentence's maps ``{kind: [per-layer (H, L, L)]}``, as
    the explorer and TensorBoard's cards name them: previous-/next-token shares of each self-
    attention map (the whole sentence, no padding), and "alignment" for a cross-attention head
    whose AER on the sentence (``aer_by_head`` [layer][head], when its gold is known) passes
    its threshold: {kind: [layer][head] labels joined by ", " ("" for none)}. Reads the maps
    only (no model call, no random draw)."""
    named: dict[str, list[list[str]]] = {}
    for kind, layers in maps.items():
        named[kind] = []
        for layer, weights in enumerate(layers):
            heads = []
            for head in range(weights.shape[0]):
                scores = {}
                if kind != "cross":
                    one = weights[head][None, None].float()  # (1, 1, L, L)
                    scores = {"previous": float(previous_token_share(one)), "next": float(next_token_share(one))}
                aer = aer_by_head[layer][head] if kind == "cross" and aer_by_head is not None else None
                heads.append(", ".join(ROLE_LABELS[role] for role in name_roles(scores, aer)))
            named[kind].append(heads)
    return named

"""Which attention heads align words: alignment error rate (AER) of every cross-attention head
against gold word alignments, by teacher forcing the reference (Garg et al. 2019).

For each sentence pair the model reads the source and is fed the reference; the cross-attention
row that predicts a target piece is that piece's attention over the source pieces. Pieces map
to words through SentencePiece's own marks (a piece starting with "▁" starts a word; the source
EOS is dropped): a target word's row is the mean of its pieces' rows, a source word's weight
the sum of its pieces' weights, and the hard alignment links each target word to the source
word of highest weight. The same is done for each head, for the heads of a layer averaged, and
for the attention RNN's single attention (one layer, one head); the fixed-context RNN has none.

Scores (Och & Ney 2003), summed over a corpus, with A the predicted links, S the sure and P the
possible gold links (S ⊆ P): precision |A∩P|/|A|, recall |A∩S|/|S|, and
AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|). Gold alignments are Pharaoh ``i-j`` (sure) and
``i?j`` or ``ipj`` (possible) links, source word i to target word j, 0-based.

Shape legend: L layers, H heads, T target pieces, S source pieces, J target words, I source words.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import datasets
import torch
from torch import Tensor

from minitrans.core.config import DataConfig
from minitrans.core.sharing import ALONE, Share
from minitrans.core.utils import eval_mode
from minitrans.data.batching import collate
from minitrans.data.generated import generate_aligned_corpus
from minitrans.data.tokenizer import Tokenizer
from minitrans.models.interface import Seq2SeqModel

Links = frozenset[tuple[int, int]]  # (source word, target word)
WORD_START = "▁"


@dataclass(frozen=True)
class GoldAlignment:
    sure: Links
    possible: Links  # includes the sure links


def parse_alignment(text: str, reverse: bool = False) -> GoldAlignment:
    """Pharaoh ``i-j`` / ``i?j`` / ``ipj`` links; ``reverse`` swaps the sides (the gold is
    English-German and the model translates German to English)."""
    sure, possible = set(), set()
    for link in text.split():
        sep = "-" if "-" in link else "?" if "?" in link else "p"
        i, j = (int(side) for side in link.split(sep))
        pair = (j, i) if reverse else (i, j)
        possible.add(pair)
        if sep == "-":
            sure.add(pair)
    return GoldAlignment(frozenset(sure), frozenset(possible))


@dataclass
class LinkCounts:
    """Counts of predicted and gold links, added up over sentences."""

    predicted: int = 0  # |A|
    sure: int = 0  # |S|
    hit_sure: int = 0  # |A ∩ S|
    hit_possible: int = 0  # |A ∩ P|

    def add(self, predicted: set[tuple[int, int]] | Links, gold: GoldAlignment) -> None:
        self.predicted += len(predicted)
        self.sure += len(gold.sure)
        self.hit_sure += len(gold.sure & predicted)
        self.hit_possible += len(gold.possible & predicted)

    def merge(self, other: LinkCounts) -> None:
        """Add another set of sentences' counts."""
        self.predicted += other.predicted
        self.sure += other.sure
        self.hit_sure += other.hit_sure
        self.hit_possible += other.hit_possible

    @property
    def precision(self) -> float:
        return self.hit_possible / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.hit_sure / self.sure if self.sure else 0.0

    @property
    def aer(self) -> float:
        total = self.predicted + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / total if total else 0.0


def aer(predicted: set[tuple[int, int]] | Links, gold: GoldAlignment) -> float:
    """The AER of one sentence's predicted links."""
    counts = LinkCounts()
    counts.add(predicted, gold)
    return counts.aer


def piece_words(pieces: Sequence[str]) -> list[int]:
    """The word index of each SentencePiece piece: a piece starting with "▁" opens a new word."""
    words, word = [], -1
    for piece in pieces:
        if piece.startswith(WORD_START) or word < 0:
            word += 1
        words.append(word)
    return words


def word_alignments(attention: Tensor, src_words: Sequence[int], tgt_words: Sequence[int]) -> Tensor:
    """Piece attention (..., T, S) -> for each target word, its source word (..., J).

    ``src_words`` (S) and ``tgt_words`` (T) give each piece's word; a source word's weight is
    the sum of its pieces', a target word's row the mean of its pieces'."""
    src_map = torch.zeros(len(src_words), max(src_words) + 1, dtype=attention.dtype)
    src_map[torch.arange(len(src_words)), torch.as_tensor(src_words)] = 1.0  # (S, I)
    tgt_map = torch.zeros(max(tgt_words) + 1, len(tgt_words), dtype=attention.dtype)
    tgt_map[torch.as_tensor(tgt_words), torch.arange(len(tgt_words))] = 1.0  # (J, T)
    tgt_map /= tgt_map.sum(dim=1, keepdim=True)
    word_attention = tgt_map @ attention.to(src_map.device) @ src_map  # (..., J, I)
    return word_attention.argmax(dim=-1)  # (..., J)


def as_links(best_source: Sequence[int]) -> set[tuple[int, int]]:
    return {(int(i), j) for j, i in enumerate(best_source)}


@dataclass
class AlignmentReport:
    """AER counts per cross-attention head and per layer (heads averaged)."""

    heads: list[list[LinkCounts]]  # [layer][head]
    layers: list[LinkCounts]
    sentences: int = 0

    @classmethod
    def merged(cls, reports: Sequence[AlignmentReport]) -> AlignmentReport | None:
        """One report of the sentences of all ``reports`` (counts added; None for none)."""
        if not reports:
            return None
        first = reports[0]
        total = cls(
            [[LinkCounts() for _ in row] for row in first.heads], [LinkCounts() for _ in first.layers], sentences=0
        )
        for report in reports:
            for into, counts in zip(total.all_counts(), report.all_counts()):
                into.merge(counts)
            total.sentences += report.sentences
        return total

    def all_counts(self) -> list[LinkCounts]:
        """Every head's counts (layer by layer), then every layer's."""
        return [counts for row in self.heads for counts in row] + self.layers

    def aer_grid(self) -> list[list[float]]:
        return [[counts.aer for counts in layer] for layer in self.heads]

    def best_head(self) -> tuple[int, int, float]:
        """(layer, head, AER) of the head with the lowest AER (0-based)."""
        return min(
            ((layer, head, counts.aer) for layer, row in enumerate(self.heads) for head, counts in enumerate(row)),
            key=lambda item: item[2],
        )

    def summary(self) -> dict:
        """Flat entries for ``summary.json``: fractions in [0, 1], layers and heads 0-based."""
        layer, head, best = self.best_head()
        counts = self.heads[layer][head]
        return {
            "aer_best": best,
            "aer_best_layer": layer,
            "aer_best_head": head,
            "aer_best_precision": counts.precision,
            "aer_best_recall": counts.recall,
            "aer_by_layer": [counts.aer for counts in self.layers],
            "aer_by_head": self.aer_grid(),
            "aer_sentences": self.sentences,
        }


@torch.no_grad()
def measure_alignment(
    model: Seq2SeqModel,
    tokenizer: Tokenizer,
    src_ids: Sequence[Sequence[int]],
    tgt_ids: Sequence[Sequence[int]],
    gold: Sequence[GoldAlignment | None],
    device: torch.device | str = "cpu",
    batch_size: int = 32,
    share: Share = ALONE,
) -> AlignmentReport | None:
    """Teacher-force each pair (source ids end in EOS, target ids have none) and score every
    cross-attention head's hard alignment against ``gold`` (pairs whose gold is None are
    skipped); None for a model without cross-attention (the fixed-context RNN). Shared, each
    rank takes every ``size``-th batch (rank 0 the fewest) and every rank gets the whole report."""
    report, has_cross = _measure_batches(model, tokenizer, src_ids, tgt_ids, gold, device, batch_size, share)
    if share.size == 1:
        return report if has_cross else None
    parts = share.all_gather((has_cross, report))
    if not all(cross for cross, _ in parts):
        return None
    return AlignmentReport.merged([part for _, part in parts if part is not None])


def _measure_batches(
    model: Seq2SeqModel,
    tokenizer: Tokenizer,
    src_ids: Sequence[Sequence[int]],
    tgt_ids: Sequence[Sequence[int]],
    gold: Sequence[GoldAlignment | None],
    device: torch.device | str,
    batch_size: int,
    share: Share,
) -> tuple[AlignmentReport | None, bool]:
    """This rank's batches of :func:`measure_alignment`: its report (None without a pair) and
    whether the model has cross-attention (False: it stopped at the first batch)."""
    report: AlignmentReport | None = None
    with eval_mode(model):
        for start in share.mine(range(0, len(src_ids), batch_size), main_last=True):
            rows = range(start, min(start + batch_size, len(src_ids)))
            batch = collate([src_ids[r] for r in rows], [tgt_ids[r] for r in rows]).to(device)
            enc, _ = model.encode(batch.src)
            _, maps = model.decode(enc, batch.tgt_in, need_weights=True)
            if not maps.get("cross"):
                return None, False
            cross = torch.stack(maps["cross"], dim=1).float().cpu()  # (B, L, H, T+1, S)
            if report is None:
                layers, heads = cross.shape[1:3]
                report = AlignmentReport(
                    [[LinkCounts() for _ in range(heads)] for _ in range(layers)], [LinkCounts() for _ in range(layers)]
                )
            for b, r in enumerate(rows):
                src_len, tgt_len = len(src_ids[r]) - 1, len(tgt_ids[r])  # no EOS column, no EOS row
                if gold[r] is None or src_len < 1 or tgt_len < 1:
                    continue
                attention = cross[b, :, :, :tgt_len, :src_len]  # (L, H, T, S): the rows predicting each piece
                src_words = piece_words(tokenizer.src_pieces(src_ids[r][:src_len]))
                tgt_words = piece_words(tokenizer.tgt_pieces(tgt_ids[r]))
                per_head = word_alignments(attention, src_words, tgt_words)  # (L, H, J)
                per_layer = word_alignments(attention.mean(dim=1), src_words, tgt_words)  # (L, J)
                for layer, row in enumerate(report.heads):
                    for head, counts in enumerate(row):
                        counts.add(as_links(per_head[layer, head].tolist()), gold[r])
                    report.layers[layer].add(as_links(per_layer[layer].tolist()), gold[r])
                report.sentences += 1
    return report, True


# ------------------------------------------------------------------- gold of a run's corpus
VALIDATION_SAMPLE = 100  # pairs of the validation split measured at each validation


@functools.lru_cache(maxsize=4)
def _gold_splits(num_valid: int, num_test: int, min_words: int, max_words: int, seed: int) -> dict[str, list]:
    return generate_aligned_corpus(0, num_valid, num_test, min_words, max_words, seed)


@functools.lru_cache(maxsize=4)
def _gold_table(num_valid: int, num_test: int, min_words: int, max_words: int, seed: int) -> dict[str, str]:
    splits = _gold_splits(num_valid, num_test, min_words, max_words, seed)
    return {en: alignment for rows in splits.values() for en, _, alignment in rows}


def gold_split(data: DataConfig, split: str = "test") -> list[tuple[str, str, GoldAlignment]] | None:
    """(source, target, gold alignment oriented source to target) of each pair of the ``valid``
    or ``test`` split of the embedded corpus a run trained on; None for any other corpus."""
    if data.name != "generated":
        return None
    rows = _gold_splits(data.num_valid, data.num_test, data.min_words, data.max_words, data.corpus_seed)[split]
    reverse = data.src_lang != "en"
    return [(de, en, parse_alignment(a, True)) if reverse else (en, de, parse_alignment(a)) for en, de, a in rows]


def gold_cells(
    tokenizer: Tokenizer, src_ids: Sequence[int], tgt_ids: Sequence[int], gold: GoldAlignment
) -> list[tuple[int, int, bool]]:
    """The gold links drawn on a cross-attention map's pieces: (target piece row, source piece
    column, sure) for every piece of each linked target and source word. ``src_ids`` end in
    EOS (its column has no link), ``tgt_ids`` have none (rows are the pieces they predict)."""
    src_words = piece_words(tokenizer.src_pieces(src_ids[:-1]))
    tgt_words = piece_words(tokenizer.tgt_pieces(tgt_ids))
    return [
        (row, column, (i, j) in gold.sure)
        for row, j in enumerate(tgt_words)
        for column, i in enumerate(src_words)
        if (i, j) in gold.possible
    ]


def gold_alignments(data: DataConfig) -> dict[str, str] | None:
    """English sentence -> gold alignment for the validation and test splits of the embedded
    corpus a run trained on (regenerated from its seed, once per process); None for any other
    corpus."""
    if data.name != "generated":
        return None
    return _gold_table(data.num_valid, data.num_test, data.min_words, data.max_words, data.corpus_seed)


def gold_for_pairs(
    data: DataConfig, sources: Sequence[str], targets: Sequence[str]
) -> list[GoldAlignment | None] | None:
    """The gold alignment of each (source, target) pair of a run's corpus, oriented source to
    target (None for a pair the grammar did not make); None when the corpus has no gold."""
    table = gold_alignments(data)
    if table is None:
        return None
    reverse = data.src_lang != "en"
    english = targets if reverse else sources
    return [parse_alignment(table[en], reverse) if en in table else None for en in english]


def split_alignment(
    model: Seq2SeqModel,
    tokenizer: Tokenizer,
    split: datasets.Dataset,
    data: DataConfig,
    max_len: int,
    device: torch.device | str = "cpu",
    limit: int | None = None,
    share: Share = ALONE,
) -> AlignmentReport | None:
    """:func:`measure_alignment` on (the first ``limit`` pairs of) a tokenised split of a run's
    corpus (columns src, tgt, src_ids, tgt_ids); pairs longer than the model's ``max_len`` are
    left out. None when the corpus has no gold alignments or the model no cross-attention."""
    rows = split if limit is None else split.select(range(min(limit, len(split))))
    gold = gold_for_pairs(data, rows["src"], rows["tgt"])
    if gold is None:
        return None
    # a pair the model's positions cannot hold is left out of the batches, not only unscored:
    # the model raises on a sequence longer than its max_len
    fits = [len(s) <= max_len and len(t) < max_len for s, t in zip(rows["src_ids"], rows["tgt_ids"])]
    src_ids = [s for s, keep in zip(rows["src_ids"], fits) if keep]
    tgt_ids = [t for t, keep in zip(rows["tgt_ids"], fits) if keep]
    gold = [g for g, keep in zip(gold, fits) if keep]
    return measure_alignment(model, tokenizer, src_ids, tgt_ids, gold, device, share=share)

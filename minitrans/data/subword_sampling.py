"""Subword sampling: each epoch segments the training pairs anew, so the model meets a word in
different pieces from epoch to epoch. A small corpus read thirty times over is then not the same
thirty times: the model must learn how pieces compose into words instead of one spelling of
each (the idea of BPE-dropout, Provilkov et al. 2020). Validation, test and translation always
use the best segmentation.

How a draw is made: BPE built every piece of its vocabulary by merging two smaller pieces. Each
piece of a sentence's best segmentation is split back into the two it was merged from with
chance ``p``, and each of those again with chance ``p``, down to single characters; the pieces
still spell the same text. (SentencePiece's own sampling draws from a generator that cannot be
seeded across processes, so two processes, or a resumed run, would draw differently; this draw
depends only on the run's seed and the epoch: every process draws the same pieces, so their
global batches agree, and a resumed run draws its epoch again as it was.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sentencepiece as spm

from minitrans.data.batching import TokenBatchSampler
from minitrans.data.token_ids import TokenIds
from minitrans.data.tokenizer import Tokenizer


def merge_splits(processor: spm.SentencePieceProcessor) -> np.ndarray:
    """For every id of a BPE model, the two ids it was merged from, or ``(-1, -1)`` for a piece
    that was never merged (a character, a byte, a special id). Found by replaying BPE on the
    piece's own characters: the pair of adjacent symbols whose union is the highest-scoring piece
    merges first, as SentencePiece encodes; the last merge is the piece's own."""
    size = processor.get_piece_size()
    splits = np.full((size, 2), -1, dtype=np.int64)
    score = {}
    for i in range(size):
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i) or processor.is_unused(i)):
            score[processor.id_to_piece(i)] = processor.get_score(i)
    for piece, i in ((p, processor.piece_to_id(p)) for p in score):
        symbols = list(piece)
        last = None
        while len(symbols) > 1:
            candidates = [(score.get(a + b), -k) for k, (a, b) in enumerate(zip(symbols, symbols[1:]))]
            best = max((c for c in candidates if c[0] is not None), default=None)
            if best is None:
                break
            k = -best[1]
            last = (symbols[k], symbols[k + 1])
            symbols[k : k + 2] = [symbols[k] + symbols[k + 1]]
        if symbols == [piece] and last is not None:
            splits[i] = processor.piece_to_id(last[0]), processor.piece_to_id(last[1])
    return splits


def split_pieces(ids: TokenIds, splits: np.ndarray, p: float, rng: np.random.Generator) -> TokenIds:
    """``ids`` with each piece split into its two merged pieces with chance ``p``, and each piece
    a split gives again, until no split is drawn. Vectorised: one draw per splittable new piece
    and round, so the result depends only on ``rng``'s state."""
    flat = np.asarray(ids.flat, dtype=np.int64)
    sentence = np.repeat(np.arange(len(ids)), ids.lengths)
    fresh = np.ones(len(flat), dtype=bool)  # pieces not yet drawn for
    while True:
        can = fresh & (splits[flat, 0] >= 0)
        if not can.any():
            break
        split = np.zeros(len(flat), dtype=bool)
        split[can] = rng.random(int(can.sum())) < p
        counts = np.where(split, 2, 1)
        starts = np.cumsum(counts) - counts  # where each piece's first half lands
        flat_next = np.repeat(flat, counts)
        flat_next[starts[split]] = splits[flat[split], 0]
        flat_next[starts[split] + 1] = splits[flat[split], 1]
        flat, fresh, sentence = flat_next, np.repeat(split, counts), np.repeat(sentence, counts)
    lengths = np.bincount(sentence, minlength=len(ids))
    return TokenIds(flat.astype(np.int32), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


@dataclass
class SubwordSampling:
    """The training pairs' ids for an epoch: :meth:`epoch`."""

    tokenizer: Tokenizer
    best_src: TokenIds  # the training pairs' best segmentation
    best_tgt: TokenIds
    p: float  # trainer.subword_sampling
    seed: int
    max_tokens: int  # a sentence's limit, as for the best segmentation
    batch_tokens: int  # a pair's limit: it must fit in one batch
    src_splits: np.ndarray = field(init=False, repr=False)
    tgt_splits: np.ndarray = field(init=False, repr=False)
    drawn: tuple[int, tuple[TokenIds, TokenIds]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.src_splits = merge_splits(self.tokenizer.src)
        self.tgt_splits = self.src_splits if self.tokenizer.is_joint else merge_splits(self.tokenizer.tgt)

    def epoch(self, epoch: int) -> tuple[TokenIds, TokenIds]:
        """The pairs' ids drawn for ``epoch``: a pair drawn longer than a limit keeps its best
        segmentation. The last epoch drawn is kept: the log line that counts epoch 0's pieces and
        the trainer's first epoch share one draw."""
        if self.drawn is not None and self.drawn[0] == epoch:
            return self.drawn[1]
        rng = np.random.default_rng([self.seed, epoch])
        src = split_pieces(self.best_src, self.src_splits, self.p, rng)
        tgt = split_pieces(self.best_tgt, self.tgt_splits, self.p, rng)
        fits = (
            (src.lengths <= self.max_tokens)
            & (tgt.lengths < self.max_tokens)
            & (src.lengths + tgt.lengths + 1 <= self.batch_tokens)
        )
        if not fits.all():
            src = TokenIds.from_lists(src[i] if ok else self.best_src[i] for i, ok in enumerate(fits))
            tgt = TokenIds.from_lists(tgt[i] if ok else self.best_tgt[i] for i, ok in enumerate(fits))
        self.drawn = (epoch, (src, tgt))
        return src, tgt

    def epoch_batches(self, epoch: int) -> tuple[TokenIds, TokenIds, TokenBatchSampler]:
        """The ids drawn for ``epoch`` and the sampler of that epoch's global batches of them."""
        src, tgt = self.epoch(epoch)
        return src, tgt, TokenBatchSampler(src.lengths, tgt.lengths, self.batch_tokens, seed=self.seed)


__all__ = ["SubwordSampling", "merge_splits", "split_pieces"]

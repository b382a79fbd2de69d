"""Greedy and beam search, written once over the shared model interface.

Shape legend: B batch, K beam size, N = B·K decoder rows, V vocabulary, L most output tokens,
n sentences still open, W words considered per beam (2K).

Both searches run incrementally by default: the model's ``step`` reuses its cache (the
Transformer's per-layer self-attention keys and values and its cross-attention keys and values,
computed once per sentence; an RNN's hidden state). With ``use_cache=False`` each step re-scores
the whole prefix through ``decode``: slower, and it must give the same output, which the tests
check for every model family.

One entry point, :func:`search`, takes the :class:`~minitrans.core.decoding_options.DecodingOptions`
(beam size, length penalty, output limits, cache) and returns :class:`Hypothesis` records: the
output ids with their log-probability and the score the search ranks by (the log-probability
over GNMT's length penalty), the ``nbest`` best of each sentence (greedy when the beam is 1).
:func:`best_ids` keeps the best ids of each sentence.

Output length: a sentence may produce at most ``max_output_ratio · source length + 10`` tokens,
and never more than ``max_output_len`` (default :data:`MAX_OUTPUT_LEN`); a hypothesis still
open at that limit ends there as it is (without EOS). PAD and BOS are never generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from minitrans.inference.top_k import top_k
from minitrans.models.interface import Seq2SeqModel, State, select_batch

NEG_INF = float("-inf")
GREEDY = DecodingOptions()  # the default options: greedy search
MAX_OUTPUT_LEN = 255  # the output cap when the options give none (the Translator passes the model's)


@dataclass(frozen=True)
class Hypothesis:
    """One finished output of a search."""

    ids: list[int]  # output ids, no BOS and no EOS
    log_prob: float  # sum of the log-probabilities of the generated tokens, EOS included
    score: float  # log_prob / length_normalizer(generated tokens, length_penalty): what the search ranks by
    is_finished: bool = True  # False when the length limit ended it before EOS

    @property
    def num_generated(self) -> int:
        """Tokens the search generated for it: the ids, plus EOS when it ended with one."""
        return len(self.ids) + int(self.is_finished)


class _Stepper:
    """Feeds one token per decoder row and returns next-token logits, with or without the cache.

    With ``beam`` > 1 each sentence gets ``beam`` consecutive rows. :meth:`reorder` follows the
    beams from step to step; with ``shrink`` it also drops the rows of finished sentences, so a
    batch gets cheaper as its sentences finish.
    """

    def __init__(self, model: Seq2SeqModel, enc: State, src: Tensor, use_cache: bool, beam: int = 1) -> None:
        self.model, self.use_cache = model, use_cache
        rows = torch.arange(src.shape[0], device=src.device).repeat_interleave(beam)  # (N,)
        if use_cache:
            cache = model.init_cache(enc)  # one row per sentence
            self.state = cache if beam == 1 else model.reorder_cache(cache, rows)
        else:
            self.state = torch.empty(len(rows), 0, dtype=torch.long, device=src.device)  # (N, 0) prefix
        self.enc = enc if beam == 1 else select_batch(enc, rows)

    def __call__(self, tokens: Tensor) -> Tensor:
        """tokens (N,) -> next-token logits (N, V), at least float32, PAD and BOS ruled out."""
        if self.use_cache:
            logits, self.state, _ = self.model.step(self.enc, tokens, self.state)  # (N, V)
        else:
            self.state = torch.cat([self.state, tokens[:, None]], dim=1)  # (N, t+1)
            logits = self.model.decode(self.enc, self.state)[0][:, -1]  # (N, V)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        logits[:, [PAD_ID, BOS_ID]] = NEG_INF  # never valid outputs
        return logits

    def reorder(self, rows: Tensor, shrink: bool = False) -> None:
        """Row i continues from row ``rows[i]``; ``shrink`` when rows of finished sentences go."""
        if self.use_cache:
            self.state = self.model.reorder_cache(self.state, rows)
        else:
            self.state = select_batch(self.state, rows)
        if shrink:
            self.enc = select_batch(self.enc, rows)


def output_limits(src: Tensor, max_output_ratio: float, max_output_len: int) -> Tensor:
    """Most tokens each sentence may generate (EOS included): ratio · source length + 10, capped."""
    return length_limits((src != PAD_ID).sum(dim=1), max_output_ratio, max_output_len)  # (B,)


def length_limits(src_lengths: Tensor, max_output_ratio: float, max_output_len: int) -> Tensor:
    """:func:`output_limits` from the source lengths (B,) (EOS included, no padding)."""
    return (src_lengths * max_output_ratio + 10).long().clamp(min=1, max=max_output_len)  # (B,)


def _strip(ids: list[int]) -> list[int]:
    """Output ids up to (not including) the first EOS or padding."""
    for position, token in enumerate(ids):
        if token in (EOS_ID, PAD_ID):
            return ids[:position]
    return ids


def _greedy_search(model: Seq2SeqModel, src: Tensor, limits: Tensor, options: DecodingOptions) -> list[Hypothesis]:
    """src (B, S) -> the greedy hypothesis of each sentence, scored (the length penalty only
    scales the reported score, as beam search would rank it; it cannot change a greedy choice)."""
    enc, _ = model.encode(src)
    stepper = _Stepper(model, enc, src, options.use_cache)
    outputs = src.new_full((src.shape[0], int(limits.max())), PAD_ID)  # (B, L)
    log_probs = torch.zeros(src.shape[0], device=src.device)  # (B,)
    alive = torch.arange(src.shape[0], device=src.device)  # (n,) the sentence of each decoder row
    tokens = src.new_full((src.shape[0],), BOS_ID)  # (n,)
    for t in range(outputs.shape[1]):
        logits = stepper(tokens)  # (n, V)
        tokens = top_k(logits, 1)[1][:, 0]  # (n,)
        log_probs[alive] += logits.log_softmax(dim=-1).gather(1, tokens[:, None])[:, 0]
        outputs[alive, t] = tokens
        done = (tokens == EOS_ID) | (t + 1 >= limits[alive])  # (n,)
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero()[:, 0]
            alive, tokens = alive[keep], tokens[keep]
            stepper.reorder(keep, shrink=True)
    return [
        _hypothesis(row, float(log_prob), options.length_penalty)
        for row, log_prob in zip(outputs.tolist(), log_probs.tolist())
    ]


def _hypothesis(row: list[int], log_prob: float, length_penalty: float) -> Hypothesis:
    """A generated row (ids, then EOS or padding, or neither at the limit) as a Hypothesis."""
    ids = _strip(row)
    is_finished = len(ids) < len(row) and row[len(ids)] == EOS_ID
    return Hypothesis(
        ids, log_prob, log_prob / length_normalizer(len(ids) + int(is_finished), length_penalty), is_finished
    )


def length_normalizer(length, length_penalty: float):
    """GNMT's length normalisation, ((5 + length) / 6) ** length_penalty (GNMT's alpha); 0 means
    raw log-probabilities.
    ``length`` may be a number or a tensor."""
    return ((5.0 + length) / 6.0) ** length_penalty


def _beam_search(
    model: Seq2SeqModel, src: Tensor, limits: Tensor, options: DecodingOptions, nbest: int
) -> list[list[Hypothesis]]:
    """Batched beam search: src (B, S) -> the ``nbest`` best finished hypotheses of each
    sentence, best first (``nbest`` <= the beam size K).

    Each step takes the 2K best extensions of a sentence's K open beams. An EOS among the top
    K of them ends a hypothesis (so beam size 1 is exactly greedy search); at the length limit
    every top-K extension ends. Ended hypotheses join the sentence's ``nbest`` best finished
    ones, compared after length normalisation (on a tie the earlier one stays ahead). The K
    best extensions that are not EOS stay open. A sentence is done at its length limit, once K
    hypotheses have ended (as in fairseq), or as soon as no open beam can beat its
    ``nbest``-th finished one: log-probabilities only fall as a beam grows, so the best open
    score, normalised at its most favourable length, bounds whatever it can still become.
    All bookkeeping is tensor operations over the whole batch.
    """
    device, batch, k, length_penalty = src.device, src.shape[0], options.beam_size, options.length_penalty
    enc, _ = model.encode(src)
    stepper = _Stepper(model, enc, src, options.use_cache, beam=k)
    # The nbest best finished hypotheses of every sentence: length-normalised score, log-prob, ids.
    final_score = torch.full((batch, nbest), NEG_INF, device=device)  # (B, nbest)
    final_log_prob = torch.full((batch, nbest), NEG_INF, device=device)  # (B, nbest)
    final_ids = torch.full((batch, nbest, int(limits.max())), PAD_ID, dtype=torch.long, device=device)  # (B, nbest, L)
    # The open sentences (n of them, n·K decoder rows); finished ones are dropped as they go.
    alive = torch.arange(batch, device=device)  # (n,) original index of each open sentence
    scores = torch.full((batch, k), NEG_INF, device=device)  # (n, K) log-probabilities of the beams
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    history = torch.full((batch * k, final_ids.shape[2]), PAD_ID, dtype=torch.long, device=device)  # (n·K, L)
    num_ended = torch.zeros(batch, dtype=torch.long, device=device)  # (n,)
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)  # (n·K,)
    for t in range(final_ids.shape[2]):
        logits = stepper(tokens)  # (n·K, V)
        n, vocab = len(alive), logits.shape[1]
        # Every extension of every beam, scored: one fused log_softmax, then one top-2K per sentence.
        word_scores = logits.log_softmax(dim=1).add_(scores.view(-1, 1))  # (n·K, V)
        top_scores, top_index = top_k(word_scores.view(n, k * vocab), min(2 * k, k * vocab))  # (n, 2K)
        top_row = torch.arange(n, device=device)[:, None] * k + top_index // vocab  # (n, 2K) row extended
        top_token = top_index % vocab  # (n, 2K)
        is_eos = top_token == EOS_ID
        at_limit = t + 1 >= limits[alive]  # (n,)

        # Hypotheses ending now (length t + 1) join the finished ones they beat.
        in_top_k = torch.arange(top_index.shape[1], device=device) < k  # (2K,)
        ends = in_top_k & (is_eos | at_limit[:, None]) & top_scores.isfinite()  # (n, 2K)
        num_ended += ends.sum(dim=1)
        ended = top_scores.masked_fill(~ends, NEG_INF) / length_normalizer(t + 1, length_penalty)  # (n, 2K)
        improves = ended.max(dim=1).values > final_score[alive, -1]  # (n,)
        if bool(improves.any()):
            _keep_best_finished(
                alive[improves], ended[improves], top_scores[improves], top_row[improves], top_token[improves],
                history, t, final_score, final_log_prob, final_ids,
            )  # fmt: skip

        # The open beams: the K best extensions that are not EOS (at most K of the 2K are).
        scores, pick = top_scores.masked_fill(is_eos, NEG_INF).topk(k, dim=1)  # (n, K)
        rows, tokens = top_row.gather(1, pick), top_token.gather(1, pick)  # (n, K)
        best_open = scores[:, 0]  # (n,)
        done = (
            at_limit
            | (num_ended >= k)
            | (best_open == NEG_INF)
            | (final_score[alive, -1] >= best_open / _most_favourable_penalty(t, limits[alive], length_penalty))
        )  # (n,)
        if bool(done.all()):
            break
        shrink = bool(done.any())
        if shrink:
            keep = (~done).nonzero()[:, 0]
            alive, scores, num_ended = alive[keep], scores[keep], num_ended[keep]
            rows, tokens = rows[keep], tokens[keep]
        rows, tokens = rows.view(-1), tokens.view(-1)  # (n·K,)
        history = history[rows]
        history[:, t] = tokens
        stepper.reorder(rows, shrink)
    return [
        [
            _hypothesis(ids, log_prob, length_penalty)
            for ids, log_prob in zip(sentence_ids, sentence_log_probs)
            if log_prob != NEG_INF
        ]
        for sentence_ids, sentence_log_probs in zip(final_ids.tolist(), final_log_prob.tolist())
    ]


def _keep_best_finished(
    sentences: Tensor,
    ended: Tensor,
    top_scores: Tensor,
    top_row: Tensor,
    top_token: Tensor,
    history: Tensor,
    t: int,
    final_score: Tensor,
    final_log_prob: Tensor,
    final_ids: Tensor,
) -> None:
    """Merge the hypotheses ending at step t (``ended``: (m, 2K) normalised, -inf where none)
    into the ``nbest`` finished ones of ``sentences`` (m,), in place; a stable sort keeps the
    earlier of two equal scores ahead."""
    m, nbest = len(sentences), final_score.shape[1]
    new_ids = history[top_row.view(-1)].view(m, -1, history.shape[1])  # (m, 2K, L)
    new_ids[:, :, t] = top_token
    candidates = torch.cat([final_score[sentences], ended], dim=1)  # (m, nbest + 2K)
    order = candidates.sort(dim=1, descending=True, stable=True).indices[:, :nbest]  # (m, nbest)
    log_probs = torch.cat([final_log_prob[sentences], top_scores.masked_fill(ended == NEG_INF, NEG_INF)], dim=1)
    ids = torch.cat([final_ids[sentences], new_ids], dim=1)  # (m, nbest + 2K, L)
    final_score[sentences] = candidates.gather(1, order)
    final_log_prob[sentences] = log_probs.gather(1, order)
    final_ids[sentences] = ids.gather(1, order[:, :, None].expand(-1, -1, ids.shape[2]))


def _most_favourable_penalty(t: int, limits: Tensor, length_penalty: float) -> Tensor | float:
    """The length penalty that flatters an open beam of length t + 1 the most over the lengths it
    can still end at (t + 2 to its limit): the longest when length_penalty > 0, the shortest when < 0."""
    if length_penalty > 0:
        return length_normalizer(limits.float(), length_penalty)  # (B,)
    return length_normalizer(t + 2, length_penalty)


@torch.no_grad()
def search(
    model: Seq2SeqModel, src: Tensor, options: DecodingOptions = GREEDY, nbest: int = 1
) -> list[list[Hypothesis]]:
    """src (B, S) -> the ``nbest`` best hypotheses of each sentence, best first: greedy when
    ``options.beam_size`` is 1, else beam search. Scores use ``options.length_penalty`` either way;
    outputs are capped by ``options.max_output_ratio`` and ``options.max_output_len``."""
    if not 1 <= nbest <= options.beam_size:
        raise ValueError(f"nbest must be between 1 and the beam size {options.beam_size}, got {nbest}")
    cap = MAX_OUTPUT_LEN if options.max_output_len is None else options.max_output_len
    limits = output_limits(src, options.max_output_ratio, cap)  # (B,)
    if options.beam_size == 1:
        return [[hyp] for hyp in _greedy_search(model, src, limits, options)]
    return _beam_search(model, src, limits, options, nbest)


def best_ids(found: Sequence[Sequence[Hypothesis]]) -> list[list[int]]:
    """The best hypothesis' ids of each sentence ([] where a sentence has none, as a blank one)."""
    return [hyps[0].ids if hyps else [] for hyps in found]


__all__ = [
    "GREEDY",
    "MAX_OUTPUT_LEN",
    "Hypothesis",
    "best_ids",
    "length_limits",
    "length_normalizer",
    "output_limits",
    "search",
]

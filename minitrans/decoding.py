"""Greedy and beam search, written once over the shared model interface.

Shape legend: B batch, K beam size, N = B·K decoder rows, V vocabulary, L most output tokens,
n sentences still open, W words considered per beam (2K).

Both searches run incrementally by default: the model's ``step`` reuses its cache (the
Transformer's per-layer self-attention keys and values and its cross-attention keys and values,
computed once per sentence; an RNN's hidden state). With ``use_cache=False`` each step re-scores
the whole prefix through ``decode``: slower, and it must give the same output, which the tests
check for every model family.

Output length: a sentence may produce at most ``max_output_ratio · source length + 10`` tokens,
and never more than ``max_output_len``; a hypothesis still open at that limit ends there as it
is (without EOS). PAD and BOS are never generated.
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.interface import Seq2SeqModel, State, select_batch
from minitrans.tokenizer import BOS_ID, EOS_ID, PAD_ID

NEG_INF = float("-inf")


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
            cache = model.init_cache(enc)  # cross-attention keys/values: once per sentence, not per beam
            self.state = cache if beam == 1 else select_batch(cache, rows)
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
        self.state = select_batch(self.state, rows)
        if shrink:
            self.enc = select_batch(self.enc, rows)


def output_limits(src: Tensor, max_output_ratio: float, max_output_len: int) -> Tensor:
    """Most tokens each sentence may generate (EOS included): ratio · source length + 10, capped."""
    src_lengths = (src != PAD_ID).sum(dim=1)  # (B,)
    return (src_lengths * max_output_ratio + 10).long().clamp(min=1, max=max_output_len)  # (B,)


def _strip(ids: list[int]) -> list[int]:
    """Output ids up to (not including) the first EOS or padding."""
    for position, token in enumerate(ids):
        if token in (EOS_ID, PAD_ID):
            return ids[:position]
    return ids


@torch.no_grad()
def greedy_decode(
    model: Seq2SeqModel,
    src: Tensor,
    max_output_ratio: float = 1.5,
    max_output_len: int = 255,
    use_cache: bool = True,
) -> list[list[int]]:
    """src (B, S) -> one list of target ids per sentence (no BOS, no EOS)."""
    enc, _ = model.encode(src)
    limits = output_limits(src, max_output_ratio, max_output_len)  # (B,)
    stepper = _Stepper(model, enc, src, use_cache)
    outputs = src.new_full((src.shape[0], int(limits.max())), PAD_ID)  # (B, L)
    alive = torch.arange(src.shape[0], device=src.device)  # (n,) the sentence of each decoder row
    tokens = src.new_full((src.shape[0],), BOS_ID)  # (n,)
    for t in range(outputs.shape[1]):
        tokens = stepper(tokens).argmax(dim=-1)  # (n,)
        outputs[alive, t] = tokens
        done = (tokens == EOS_ID) | (t + 1 >= limits[alive])  # (n,)
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero()[:, 0]
            alive, tokens = alive[keep], tokens[keep]
            stepper.reorder(keep, shrink=True)
    return [_strip(row) for row in outputs.tolist()]


def length_penalty(length, alpha: float):
    """GNMT's length normalisation, ((5 + length) / 6) ** alpha; alpha = 0 means raw log-prob.
    ``length`` may be a number or a tensor."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Seq2SeqModel,
    src: Tensor,
    beam_size: int = 5,
    alpha: float = 0.6,
    max_output_ratio: float = 1.5,
    max_output_len: int = 255,
    use_cache: bool = True,
) -> list[list[int]]:
    """Batched beam search: src (B, S) -> the best hypothesis per sentence (no BOS/EOS).

    Each step takes the 2K best extensions of a sentence's K open beams. An EOS among the top
    K of them ends a hypothesis (so beam size 1 is exactly greedy search); at the length limit
    every top-K extension ends. All hypotheses ending at one step have the same length, so
    only the best is compared, after length normalisation, with the sentence's best finished
    hypothesis so far. The K best extensions that are not EOS stay open. A sentence is done at
    its length limit, once K hypotheses have ended (as in fairseq), or as soon as no open beam
    can beat its best finished one: log-probabilities only fall as a beam grows, so the best
    open score, normalised at its most favourable length, bounds whatever it can still become.
    All bookkeeping is tensor operations over the whole batch.
    """
    device, batch, k = src.device, src.shape[0], beam_size
    enc, _ = model.encode(src)
    limits = output_limits(src, max_output_ratio, max_output_len)  # (B,)
    stepper = _Stepper(model, enc, src, use_cache, beam=k)
    best_score = torch.full((batch,), NEG_INF, device=device)  # best finished, length-normalised
    best_ids = torch.full((batch, int(limits.max())), PAD_ID, dtype=torch.long, device=device)  # (B, L)
    # The open sentences (n of them, n·K decoder rows); finished ones are dropped as they go.
    alive = torch.arange(batch, device=device)  # (n,) original index of each open sentence
    scores = torch.full((batch, k), NEG_INF, device=device)  # (n, K) log-probabilities of the beams
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    history = torch.full((batch * k, best_ids.shape[1]), PAD_ID, dtype=torch.long, device=device)  # (n·K, L)
    num_ended = torch.zeros(batch, dtype=torch.long, device=device)  # (n,)
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)  # (n·K,)
    for t in range(best_ids.shape[1]):
        logits = stepper(tokens)  # (n·K, V)
        n, width = len(alive), min(2 * k, logits.shape[1])
        # Only a row's 2K likeliest words can be among its sentence's 2K best extensions.
        word_logits, words = logits.topk(width, dim=1)  # (n·K, W)
        word_scores = scores.view(-1, 1) + word_logits - logits.logsumexp(dim=1, keepdim=True)  # (n·K, W)
        top_scores, top_index = word_scores.view(n, k * width).topk(min(2 * k, k * width), dim=1)  # (n, 2K)
        top_row = torch.arange(n, device=device)[:, None] * k + top_index // width  # (n, 2K) row extended
        top_token = words.view(n, k * width).gather(1, top_index)  # (n, 2K)
        is_eos = top_token == EOS_ID
        at_limit = t + 1 >= limits[alive]  # (n,)

        # Hypotheses ending now (length t + 1): the first of them in rank order is the best.
        in_top_k = torch.arange(top_index.shape[1], device=device) < k  # (2K,)
        ends = in_top_k & (is_eos | at_limit[:, None]) & top_scores.isfinite()  # (n, 2K)
        num_ended += ends.sum(dim=1)
        ended = top_scores.masked_fill(~ends, NEG_INF) / length_penalty(t + 1, alpha)  # (n, 2K)
        new_best, pick = ended.max(dim=1)  # (n,)
        improved = new_best > best_score[alive]  # (n,)
        if bool(improved.any()):
            sentences, pick = alive[improved], pick[improved]
            best_ids[sentences, :t] = history[top_row[improved, pick], :t]
            best_ids[sentences, t] = top_token[improved, pick]
            best_score[sentences] = new_best[improved]

        # The open beams: the K best extensions that are not EOS (at most K of the 2K are).
        scores, pick = top_scores.masked_fill(is_eos, NEG_INF).topk(k, dim=1)  # (n, K)
        rows, tokens = top_row.gather(1, pick), top_token.gather(1, pick)  # (n, K)
        best_open = scores[:, 0]  # (n,)
        done = (
            at_limit
            | (num_ended >= k)
            | (best_open == NEG_INF)
            | (best_score[alive] >= best_open / _most_favourable_penalty(t, limits[alive], alpha))
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
    return [_strip(row) for row in best_ids.tolist()]


def _most_favourable_penalty(t: int, limits: Tensor, alpha: float) -> Tensor | float:
    """The length penalty that flatters an open beam of length t + 1 the most over the lengths it
    can still end at (t + 2 to its limit): the longest when alpha > 0, the shortest when < 0."""
    if alpha > 0:
        return length_penalty(limits.float(), alpha)  # (B,)
    return length_penalty(t + 2, alpha)


@torch.no_grad()
def translate_ids(
    model: Seq2SeqModel,
    src: Tensor,
    beam_size: int = 1,
    alpha: float = 0.6,
    max_output_ratio: float = 1.5,
    max_output_len: int = 255,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy when ``beam_size`` is 1, else beam search."""
    if beam_size < 1:
        raise ValueError(f"beam size must be at least 1, got {beam_size}")
    if beam_size == 1:
        return greedy_decode(model, src, max_output_ratio, max_output_len, use_cache)
    return beam_search(model, src, beam_size, alpha, max_output_ratio, max_output_len, use_cache)


__all__ = ["beam_search", "greedy_decode", "length_penalty", "output_limits", "translate_ids"]

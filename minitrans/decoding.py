"""Greedy and beam search, written once over the shared model interface.

Shape legend: B batch, K beam size, V vocabulary, t steps decoded so far.

Both searches run incrementally by default: the model's ``step`` reuses its cache (cached
self-attention keys and values, precomputed cross-attention keys and values, or an RNN's
state). With ``use_cache=False`` each step re-scores the whole prefix through ``decode``,
which is slower and must give the same output: the tests hold the two paths together.
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.interface import Seq2SeqModel, State, select_batch
from minitrans.tokenizer import BOS_ID, EOS_ID, PAD_ID


class _Stepper:
    """Feeds one token per row and returns next-token logits, with or without the cache."""

    def __init__(self, model: Seq2SeqModel, enc: State, use_cache: bool) -> None:
        self.model, self.enc, self.use_cache = model, enc, use_cache

    def init_state(self, batch: int, device: torch.device) -> State:
        if self.use_cache:
            return self.model.init_cache(self.enc)
        return torch.empty(batch, 0, dtype=torch.long, device=device)  # (B, 0) prefix

    def __call__(self, tokens: Tensor, state: State) -> tuple[Tensor, State]:
        if self.use_cache:
            logits, state, _ = self.model.step(self.enc, tokens, state)
            return logits, state  # (B, V)
        prefix = torch.cat([state, tokens[:, None]], dim=1)  # (B, t+1)
        logits, _ = self.model.decode(self.enc, prefix)
        return logits[:, -1], prefix  # (B, V)

    def select(self, state: State, index: Tensor) -> State:
        return select_batch(state, index)


def output_limits(src: Tensor, max_output_ratio: float, max_len: int) -> Tensor:
    """Per-sentence cap on generated tokens (EOS included): ratio * source length + 10."""
    src_lengths = (src != PAD_ID).sum(dim=1)  # (B,)
    return (src_lengths * max_output_ratio + 10).long().clamp(max=max_len - 1)


@torch.no_grad()
def greedy_decode(
    model: Seq2SeqModel,
    src: Tensor,
    max_output_ratio: float = 1.5,
    max_len: int = 256,
    use_cache: bool = True,
) -> list[list[int]]:
    """src (B, S) -> one list of target ids per sentence (no BOS, no EOS)."""
    enc, _ = model.encode(src)
    batch = src.shape[0]
    limits = output_limits(src, max_output_ratio, max_len)  # (B,)
    stepper = _Stepper(model, enc, use_cache)
    state = stepper.init_state(batch, src.device)
    tokens = torch.full((batch,), BOS_ID, dtype=torch.long, device=src.device)  # (B,)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    outputs = []
    for t in range(int(limits.max())):
        logits, state = stepper(tokens, state)  # (B, V)
        tokens = logits.argmax(dim=-1).masked_fill(finished, PAD_ID)  # (B,)
        outputs.append(tokens)
        finished |= (tokens == EOS_ID) | (t + 1 >= limits)
        if bool(finished.all()):
            break
    generated = torch.stack(outputs, dim=1).tolist()  # (B, t)
    return [_strip(row, int(limit)) for row, limit in zip(generated, limits)]


def _strip(ids: list[int], limit: int) -> list[int]:
    out = []
    for token in ids[:limit]:
        if token in (EOS_ID, PAD_ID):
            break
        out.append(token)
    return out


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length normalisation, ((5 + length) / 6) ** alpha; alpha = 0 means raw log-prob."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Seq2SeqModel,
    src: Tensor,
    beam_size: int = 5,
    alpha: float = 0.6,
    max_output_ratio: float = 1.5,
    max_len: int = 256,
    use_cache: bool = True,
) -> list[list[int]]:
    """Batched beam search: src (B, S) -> the best hypothesis per sentence (no BOS/EOS).

    Finished hypotheses (those that produced EOS among the top K candidates) are kept per
    sentence with their length-normalised scores. A sentence stops when it holds K finished
    hypotheses, or when no open beam can still beat its best finished one, or at its
    length limit (open beams are then finished as they are). With K = 1 this is greedy search.
    """
    device, batch, k = src.device, src.shape[0], beam_size
    enc, _ = model.encode(src)
    expand = torch.arange(batch, device=device).repeat_interleave(k)  # (B·K,)
    stepper = _Stepper(model, select_batch(enc, expand), use_cache)
    state = stepper.init_state(batch * k, device)
    limits = output_limits(src, max_output_ratio, max_len).tolist()
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    history = torch.empty(batch * k, 0, dtype=torch.long, device=device)  # (B·K, t)
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch)]
    done = [False] * batch
    for t in range(max(limits)):
        logits, state = stepper(tokens, state)  # (B·K, V)
        log_probs = logits.float().log_softmax(dim=-1).view(batch, k, -1)  # (B, K, V)
        vocab = log_probs.shape[-1]
        candidates = (scores[:, :, None] + log_probs).view(batch, k * vocab)  # (B, K·V)
        top_scores, top_index = candidates.topk(2 * k, dim=1)  # (B, 2K)
        top_beam, top_token = top_index // vocab, top_index % vocab  # (B, 2K)
        new_scores = torch.full((batch, k), float("-inf"), device=device)
        new_beam = torch.zeros(batch, k, dtype=torch.long, device=device)
        new_token = torch.full((batch, k), PAD_ID, dtype=torch.long, device=device)
        cand_scores, cand_beam, cand_token = top_scores.tolist(), top_beam.tolist(), top_token.tolist()
        for b in range(batch):
            if done[b]:
                continue
            kept = 0
            for rank in range(2 * k):
                score, beam, token = cand_scores[b][rank], cand_beam[b][rank], cand_token[b][rank]
                if score == float("-inf"):
                    break
                if token == EOS_ID:
                    if rank < k:  # only an EOS among the top K candidates ends a hypothesis
                        ids = history[b * k + beam].tolist()
                        finished[b].append((score / length_penalty(len(ids) + 1, alpha), ids))
                    continue
                new_scores[b, kept], new_beam[b, kept], new_token[b, kept] = score, beam, token
                kept += 1
                if kept == k:
                    break
            at_limit = t + 1 >= limits[b]
            if at_limit:  # finish the open beams as they are
                for j in range(kept):
                    ids = history[b * k + int(new_beam[b, j])].tolist() + [int(new_token[b, j])]
                    finished[b].append((float(new_scores[b, j]) / length_penalty(len(ids), alpha), ids))
            done[b] = (
                at_limit
                or len(finished[b]) >= k
                or _cannot_improve(finished[b], float(new_scores[b, 0]), limits[b], alpha)
            )
            if done[b]:
                new_scores[b] = float("-inf")
        if all(done):
            break
        origin = (torch.arange(batch, device=device)[:, None] * k + new_beam).view(-1)  # (B·K,)
        history = torch.cat([history.index_select(0, origin), new_token.view(-1, 1)], dim=1)  # (B·K, t+1)
        state = stepper.select(state, origin)
        tokens, scores = new_token.view(-1), new_scores
    return [max(hyps, key=lambda item: item[0])[1] if hyps else [] for hyps in finished]


def _cannot_improve(finished: list, best_open: float, limit: int, alpha: float) -> bool:
    """True when the best open beam, even at its most favourable length, loses to the best
    finished hypothesis (log-probabilities only fall as a beam grows)."""
    if not finished or best_open == float("-inf"):
        return bool(finished) or best_open == float("-inf")
    best_length = limit if alpha > 0 else 1  # a longer hypothesis is divided by more
    return max(score for score, _ in finished) >= best_open / length_penalty(best_length, alpha)


@torch.no_grad()
def translate_ids(
    model: Seq2SeqModel,
    src: Tensor,
    beam_size: int = 1,
    alpha: float = 0.6,
    max_output_ratio: float = 1.5,
    max_len: int = 256,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy when ``beam_size`` is 1, else beam search."""
    if beam_size == 1:
        return greedy_decode(model, src, max_output_ratio, max_len, use_cache)
    return beam_search(model, src, beam_size, alpha, max_output_ratio, max_len, use_cache)


__all__ = ["beam_search", "greedy_decode", "length_penalty", "output_limits", "translate_ids"]

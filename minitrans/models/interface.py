"""The one model interface that every sequence-to-sequence model in minitrans implements.

Training, greedy and beam decoding, evaluation and attention pictures are written once
against this surface, for the Transformer and both RNN baselines alike.

Shape legend: B batch, S source length, T target length, D model width, H heads, V vocabulary.

Conventions
- ``src`` is (B, S) and ``tgt_in`` is (B, T) token ids, right-padded with ``pad_id``.
- The encoder's output (``Encoded``) and the decoder's incremental state (``Cache``) are
  nested dicts / lists / tuples of tensors whose dim 0 is the batch. That one rule lets the
  decoders repeat and reorder beams for any model with :func:`select_batch`.
- Attention weights are returned only when ``need_weights=True``, never stored on a module,
  as ``{kind: [per-layer tensor (B, H, Tq, Tk)]}``; kinds are ``"enc_self"``, ``"dec_self"``
  and ``"cross"``. A model with no attention returns ``{}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor, nn

State = Any  # nested dict/list/tuple of batch-first tensors
AttentionMaps = dict[str, list[Tensor]]


class Seq2SeqModel(nn.Module):
    """Base class: encode the source, score a target prefix, step the decoder one token."""

    pad_id: int

    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[State, AttentionMaps]:
        """src (B, S) -> (encoded state, encoder attention maps)."""
        raise NotImplementedError

    def decode(self, enc: State, tgt_in: Tensor, need_weights: bool = False) -> tuple[Tensor, AttentionMaps]:
        """Teacher-forced scoring: tgt_in (B, T) -> logits (B, T, V), decoder attention maps."""
        raise NotImplementedError

    def init_cache(self, enc: State) -> State:
        """The decoder state before the first target token (BOS) is fed."""
        raise NotImplementedError

    def step(
        self, enc: State, tokens: Tensor, cache: State, need_weights: bool = False
    ) -> tuple[Tensor, State, AttentionMaps]:
        """Feed one token per sentence: tokens (B,) -> logits (B, V), new cache, maps (B, H, 1, *)."""
        raise NotImplementedError

    def reorder_cache(self, cache: State, rows: Tensor) -> State:
        """Beam search's reorder: decoder row i continues from row ``rows[i]`` (N,), so every
        tensor of the cache is indexed by ``rows``. Rows come in groups, one per sentence still
        open, in their old order, and a group draws only on its own sentence's old rows."""
        return select_batch(cache, rows)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        enc, _ = self.encode(src)
        logits, _ = self.decode(enc, tgt_in)
        return logits  # (B, T, V)


def map_state(fn: Callable[[Tensor], Tensor], state: State) -> State:
    """Apply ``fn`` to every tensor of a nested state; other leaves pass through."""
    if isinstance(state, Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {key: map_state(fn, value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(map_state(fn, value) for value in state)
    return state


def select_batch(state: State, index: Tensor) -> State:
    """Pick rows ``index`` (a 1-d long tensor) of every tensor in a state: beam repeat/reorder."""
    return map_state(lambda t: t.index_select(0, index), state)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["AttentionMaps", "Seq2SeqModel", "State", "count_parameters", "map_state", "select_batch"]

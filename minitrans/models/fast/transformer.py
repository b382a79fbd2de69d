"""The Transformer made fast: the notes model (:mod:`minitrans.models.transformer`) with only its
speed changed.

Shape legend: B batch, S source length, T target length, D model width, H heads, Dk per-head
key width, Dv per-head value width, F feed-forward width, V vocabulary, N decoder rows (beams),
n sentences.

:func:`make_fast` turns a built notes model into this one in place: each module takes the fast
class of :data:`FAST_CLASSES`, which adds no state and overrides only what it speeds up, so the
parameters, their names and their values stay what the notes model built.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minitrans.models.attention import MultiHeadAttention, make_padding_mask
from minitrans.models.fast.attention import FastMultiHeadAttention
from minitrans.models.fast.dropout import Dropout, dropout_add, relu_dropout
from minitrans.models.fast.packed_tokens import PackedTokens
from minitrans.models.interface import AttentionMaps, State, select_batch
from minitrans.models.transformer import EncoderLayer, FeedForward, Residual, Transformer


class FastFeedForward(FeedForward):
    """ReLU and dropout as one autograd node (``relu_dropout``): its backward keeps no mask."""

    def forward(self, x: Tensor) -> Tensor:
        first, _, drop, second = self.net  # the Sequential names the parameters (net.0, net.3)
        return second(relu_dropout(first(x), drop.p if self.training else 0.0))  # (B, L, F) -> (B, L, D)


class FastResidual(Residual):
    """x + Dropout(out) in one pass (``dropout_add``)."""

    def forward(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        x = dropout_add(x, sublayer_out, self.dropout.p if self.training else 0.0)
        return x if self.norm_first else self.norm(x)


class FastEncoderLayer(EncoderLayer):
    """The layer on packed real tokens (N, D) when the encoder packs them (``packed``)."""

    def forward(self, x: Tensor, src_mask: Tensor | None, need_weights: bool = False, packed=None):
        if packed is None:
            return super().forward(x, src_mask, need_weights)
        x = self.attn_block(x, packed.self_attention(self.self_attn, self.attn_block.sublayer_input(x), src_mask))
        x = self.ff_block(x, self.feed_forward(self.ff_block.sublayer_input(x)))
        return x, None  # (N, D)


class FastTransformer(Transformer):
    """:class:`~minitrans.models.transformer.Transformer`, made fast: what :func:`make_fast` makes
    of one, or, built directly, the notes model built and then made fast."""

    def __init__(self, cfg, src_vocab_size: int, tgt_vocab_size: int, pad_id: int) -> None:
        super().__init__(cfg, src_vocab_size, tgt_vocab_size, pad_id)
        make_fast(self)

    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[State, AttentionMaps]:
        """The notes' encode, with "src_mask" None when no source sentence is padded (most
        length-bucketed batches: attention then skips masking), and the layers' position-wise
        work on real tokens only (packed_tokens.py) when some are."""
        src_mask = make_padding_mask(src, self.pad_id)  # (B, 1, 1, S)
        if not torch.compiler.is_compiling() and bool(src_mask.all()):  # compiled graphs keep the mask
            src_mask = None
        x = self._embed(self.src_embed, src)  # (B, S, D)
        packed = PackedTokens(src != self.pad_id) if PackedTokens.is_worth_it(src_mask, need_weights) else None
        if packed is not None:
            x = packed.pack(x)  # (N, D)
        maps = []
        for layer in self.encoder_layers:
            x, weights = layer(x, src_mask, need_weights, packed)
            maps.append(weights)
        memory = self.encoder_norm(x)
        enc = {"memory": memory if packed is None else packed.unpack(memory), "src_mask": src_mask}  # (B, S, D)
        return enc, ({"enc_self": maps} if need_weights else {})

    def reorder_cache(self, cache: State, rows: Tensor) -> State:
        """Self-attention keys and values follow ``rows``; the cross-attention keys and values
        stay one per sentence (a sentence's beams share them, FastMultiHeadAttention) and change
        only when sentences drop out. Every sentence has as many rows as the others (one before
        the beams open, then K each), so old row r is sentence r // (rows per sentence), and the
        groups of ``rows`` name the sentences that stay, in their order."""
        cross_rows, self_rows = cache[0]["cross"]["k"].shape[0], cache[0]["self"]["k"].shape[0]
        kept = (rows // (self_rows // cross_rows)).unique_consecutive()  # (n,) the old sentences kept
        return [
            {
                "self": select_batch(layer["self"], rows),  # (N, H, t, Dk|Dv)
                "cross": layer["cross"]
                if len(kept) == cross_rows
                else select_batch(layer["cross"], kept),  # (n, H, S, Dk|Dv)
            }
            for layer in cache
        ]


FAST_CLASSES: dict[type, type] = {
    nn.Dropout: Dropout,
    MultiHeadAttention: FastMultiHeadAttention,
    FeedForward: FastFeedForward,
    Residual: FastResidual,
    EncoderLayer: FastEncoderLayer,
    Transformer: FastTransformer,
}


def make_fast(model: nn.Module) -> nn.Module:
    """``model`` (a notes Transformer, or any module holding its parts) made fast in place, and
    returned: every module whose class has a fast form in :data:`FAST_CLASSES` takes it."""
    for module in model.modules():
        module.__class__ = FAST_CLASSES.get(type(module), type(module))
    return model


__all__ = [
    "FAST_CLASSES",
    "FastEncoderLayer",
    "FastFeedForward",
    "FastResidual",
    "FastTransformer",
    "make_fast",
]

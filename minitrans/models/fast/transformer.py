"""The Transformer made fast: the notes model (:mod:`minitrans.models.transformer`) with only its
speed changed.

Shape legend: B batch, S source length, T target length, D model width, H heads, Dk per-head
key width, Dv per-head value width, F feed-forward width, V vocabulary, N decoder rows (beams),
n sentences.

:class:`FastTransformer` is built by the notes model's ``__init__`` (the same parameters, names
and initialisation, drawn in the same order), then its modules take the fast classes below,
which add no state: each overrides only the method it speeds up.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from minitrans.core.config import TransformerConfig
from minitrans.models.attention import MultiHeadAttention, make_padding_mask
from minitrans.models.fast.attention import FastMultiHeadAttention
from minitrans.models.fast.dropout import Dropout, dropout_add, relu_dropout
from minitrans.models.fast.loss import token_loss
from minitrans.models.fast.packed_tokens import PackedTokens
from minitrans.models.interface import AttentionMaps, State
from minitrans.models.transformer import DecoderLayer, EncoderLayer, FeedForward, Residual, Transformer


class FastFeedForward(FeedForward):
    """ReLU and dropout as one autograd node (``relu_dropout``): its backward keeps no mask."""

    def forward(self, x: Tensor) -> Tensor:
        first, _, drop, second = self.net  # the Sequential names the parameters (net.0, net.3)
        return second(relu_dropout(first(x), drop.p if self.training else 0.0))  # (B, L, F) -> (B, L, D)


class FastResidual(Residual):
    """x + Dropout(out) in one pass (``dropout_add``)."""

    def forward(self, x: Tensor, sublayer) -> tuple[Tensor, Tensor | None]:
        out, weights = sublayer(self.norm(x) if self.norm_first else x)
        x = dropout_add(x, out, self.dropout.p if self.training else 0.0)
        return (x if self.norm_first else self.norm(x)), weights


class FastEncoderLayer(EncoderLayer):
    """The layer on packed real tokens (N, D) when the encoder packs them (``packed``)."""

    def forward(self, x: Tensor, src_mask: Tensor | None, need_weights: bool = False, packed=None):
        if packed is None:
            return super().forward(x, src_mask, need_weights)
        x, _ = self.attn_block(x, lambda h: (packed.self_attention(self.self_attn, h, src_mask), None))
        x, _ = self.ff_block(x, lambda h: (self.feed_forward(h), None))
        return x, None  # (N, D)


class FastDecoderLayer(DecoderLayer):
    """Cached steps that copy the past keys once per step (the spare slot) and let the K beams
    of a sentence share its cross-attention keys and values (see FastTransformer.reorder_cache)."""

    def cached_self_attention(self, h: Tensor, cache: dict, new_cache: dict, need_weights: bool):
        if not cache.get("spare"):
            return super().cached_self_attention(h, cache, new_cache, need_weights)
        q, k, v = self.self_attn.project_qkv(h)  # (B, H, 1, Dk|Dv)
        # reorder_cache left the last position free for this step
        new_cache["k"], new_cache["v"], new_cache["spare"] = cache["k"], cache["v"], False
        new_cache["k"][:, :, -1:] = k  # (B, H, t+1, Dk)
        new_cache["v"][:, :, -1:] = v  # (B, H, t+1, Dv)
        return self.self_attn.attend(q, new_cache["k"], new_cache["v"], need_weights=need_weights)

    def cached_cross_attention(self, h: Tensor, cache: dict, src_mask: Tensor | None, need_weights: bool):
        sentences = cache["cross_k"].shape[0]
        if sentences == h.shape[0]:
            return super().cached_cross_attention(h, cache, src_mask, need_weights)
        # Beam search: the K beams of a sentence share its keys and values (kept once per
        # sentence), so they attend as K queries of one row.
        q = self.cross_attn.project_q(h)  # (N, H, 1, Dk)
        rows, heads, _, width = q.shape
        beam = rows // sentences
        q = q.view(sentences, beam, heads, width).transpose(1, 2)  # (n, H, K, Dk)
        mask = None if src_mask is None else src_mask[::beam]  # (n, 1, 1, S)
        out, weights = self.cross_attn.attend(
            q, cache["cross_k"], cache["cross_v"], mask, need_weights=need_weights
        )  # (n, K, D), (n, H, K, S)
        if weights is not None:
            weights = weights.transpose(1, 2).reshape(rows, heads, 1, -1)  # (N, H, 1, S)
        return out.reshape(rows, 1, -1), weights  # (N, 1, D)


FAST_CLASSES: dict[type, type] = {
    nn.Dropout: Dropout,
    MultiHeadAttention: FastMultiHeadAttention,
    FeedForward: FastFeedForward,
    Residual: FastResidual,
    EncoderLayer: FastEncoderLayer,
    DecoderLayer: FastDecoderLayer,
}


class FastTransformer(Transformer):
    """:class:`~minitrans.models.transformer.Transformer`, made fast."""

    def __init__(self, cfg: TransformerConfig, src_vocab_size: int, tgt_vocab_size: int, pad_id: int) -> None:
        super().__init__(cfg, src_vocab_size, tgt_vocab_size, pad_id)
        for module in self.modules():
            module.__class__ = FAST_CLASSES.get(type(module), type(module))

    def token_loss(self, logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0, logits_spent: bool = False):
        return token_loss(logits, tgt_out, label_smoothing, overwrite_logits=logits_spent)

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

    def init_cache(self, enc: State) -> State:
        """The notes' cache, with the cross-attention keys and values laid out contiguously once
        per source (each head's (S, Dk) block in one piece), so a decoding step's products over
        them read in place instead of copying them every step."""
        return [
            layer | {"cross_k": layer["cross_k"].contiguous(), "cross_v": layer["cross_v"].contiguous()}
            for layer in super().init_cache(enc)
        ]

    def reorder_cache(self, cache: State, rows: Tensor, beam: int) -> State:
        """Self-attention keys and values follow ``rows``, with room left for the next step's
        (``spare``); the cross-attention keys and values stay one per sentence (a sentence's
        beams share them) and change only when sentences drop out: then the first row of each
        group names its sentence's old group."""
        sentences = len(rows) // beam
        kept = None if sentences == cache[0]["cross_k"].shape[0] else rows[::beam] // beam  # (n,)
        return [
            {
                "k": _select_with_spare(layer["k"], rows, layer.get("spare", False)),  # (N, H, t+1, Dk)
                "v": _select_with_spare(layer["v"], rows, layer.get("spare", False)),  # (N, H, t+1, Dv)
                "spare": True,
                "cross_k": layer["cross_k"]
                if kept is None
                else layer["cross_k"].index_select(0, kept),  # (n, H, S, Dk)
                "cross_v": layer["cross_v"]
                if kept is None
                else layer["cross_v"].index_select(0, kept),  # (n, H, S, Dv)
            }
            for layer in cache
        ]

    def decoded_length(self, cache: State) -> int:
        return cache[0]["k"].shape[2] - int(cache[0].get("spare", False))


def _select_with_spare(cached: Tensor, rows: Tensor, has_spare: bool) -> Tensor:
    """cached[rows] along dim 0, written into a tensor one position longer (dim 2) whose last
    position the next step fills in place: one copy of the past keys per step instead of two
    (a reorder, then a concatenation)."""
    past = cached[:, :, :-1] if has_spare else cached  # (B, H, t, Dk)
    if past.requires_grad:  # out= takes no autograd; the plain way (decoding runs without grad)
        return torch.cat([past.index_select(0, rows), past.new_zeros(len(rows), *past.shape[1:2], 1, past.shape[3])], 2)
    out = cached.new_empty(len(rows), past.shape[1], past.shape[2] + 1, past.shape[3])  # (N, H, t+1, Dk)
    torch.index_select(past, 0, rows, out=out[:, :, :-1])
    return out


__all__ = [
    "FastDecoderLayer",
    "FastEncoderLayer",
    "FastFeedForward",
    "FastResidual",
    "FastTransformer",
]

"""The encoder-decoder Transformer (Vaswani et al., 2017), built from minitrans' attention.

Shape legend: B batch, S source length, T target length, D model width (d_model),
H heads, Dk per-head key width, Dv per-head value width, F feed-forward width, V vocabulary.

Small blocks first (positions, feed-forward, the two layer kinds), the model last.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from minitrans.core.config import TransformerConfig
from minitrans.models.attention import MultiHeadAttention, make_padding_mask
from minitrans.models.interface import AttentionMaps, Seq2SeqModel, State


class SinusoidalPositions(nn.Module):
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D))."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)  # (L, 1)
        inv_freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (D/2,)
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(position * inv_freq)
        table[:, 1::2] = torch.cos(position * inv_freq)[:, : d_model // 2]
        self.register_buffer("table", table, persistent=False)  # (L, D)
        self.max_len = max_len

    def forward(self, length: int, offset: int = 0) -> Tensor:
        if offset + length > self.max_len:
            raise ValueError(f"sequence of {offset + length} positions exceeds max_len={self.max_len}")
        return self.table[offset : offset + length]  # (L, D)


class LearnedPositions(nn.Module):
    """A trained table, one vector per position (``model.positions=learned``, as BERT and GPT-2
    do); it starts at the sinusoidal table's scale (each entry of variance 1/2)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.5**0.5)  # (L, D)
        self.max_len = max_len

    forward = SinusoidalPositions.forward


class NoPositions(nn.Module):
    """``model.positions=none``: nothing tells the model where a token sits, so self-attention
    sees a set of tokens, not a sequence (docs/claims.md, claim 3)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.max_len = max_len

    def forward(self, length: int, offset: int = 0) -> Tensor:
        if offset + length > self.max_len:  # the same limit as the other two
            raise ValueError(f"sequence of {offset + length} positions exceeds max_len={self.max_len}")
        return torch.zeros(())  # added to (B, L, D): x unchanged


POSITIONS = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions, "none": NoPositions}


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)  # (B, L, D) -> (B, L, F) -> (B, L, D)


class Residual(nn.Module):
    """The residual connection around one sub-layer, with its LayerNorm and dropout:
    x + Dropout(sublayer(LN(x))) when pre-norm, LN(x + Dropout(sublayer(x))) when post-norm.
    A layer writes ``block(x, sublayer(block.sublayer_input(x)))``."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def sublayer_input(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.norm_first else x

    def forward(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        x = x + self.dropout(sublayer_out)
        return x if self.norm_first else self.norm(x)


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each in a residual block. ``scale``: the attention
    scores' factor (None: 1/√Dk). ``dropout`` acts on the sub-layers' outputs, and on the
    attention weights and inside the feed-forward unless ``attention_dropout`` / ``ff_dropout``
    give those their own rates."""

    def __init__(
        self,
        d_model,
        num_heads,
        d_k,
        d_v,
        d_ff,
        dropout,
        norm_first,
        scale=None,
        attention_dropout=None,
        ff_dropout=None,
    ) -> None:
        super().__init__()
        attention_dropout = dropout if attention_dropout is None else attention_dropout
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, attention_dropout, scale=scale)
        self.feed_forward = FeedForward(d_model, d_ff, dropout if ff_dropout is None else ff_dropout)
        self.attn_block = Residual(d_model, dropout, norm_first)
        self.ff_block = Residual(d_model, dropout, norm_first)

    def forward(self, x: Tensor, src_mask: Tensor | None, need_weights: bool = False):
        """x (B, S, D) -> (B, S, D), weights (B, H, S, S)."""
        h, weights = self.self_attn(self.attn_block.sublayer_input(x), mask=src_mask, need_weights=need_weights)
        x = self.attn_block(x, h)
        x = self.ff_block(x, self.feed_forward(self.ff_block.sublayer_input(x)))
        return x, weights  # (B, S, D), (B, H, S, S)


class DecoderLayer(nn.Module):
    """Masked self-attention -> cross-attention over the encoder memory -> feed-forward.

    ``is_causal``: a target position attends to itself and earlier positions only (False only
    for the teaching switch ``model.causal_mask=false``). ``scale`` and ``cross_scale``: the
    self- and cross-attention scores' factors (None: 1/√Dk). The dropouts as in :class:`EncoderLayer`."""

    def __init__(
        self,
        d_model,
        num_heads,
        d_k,
        d_v,
        d_ff,
        dropout,
        norm_first,
        scale=None,
        attention_dropout=None,
        ff_dropout=None,
        cross_scale=None,
        is_causal=True,
    ) -> None:
        super().__init__()
        self.is_causal = is_causal
        weights_p = dropout if attention_dropout is None else attention_dropout
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, weights_p, scale=scale)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, weights_p, is_cross=True, scale=cross_scale)
        self.feed_forward = FeedForward(d_model, d_ff, dropout if ff_dropout is None else ff_dropout)
        self.self_block = Residual(d_model, dropout, norm_first)
        self.cross_block = Residual(d_model, dropout, norm_first)
        self.ff_block = Residual(d_model, dropout, norm_first)

    def forward(self, y: Tensor, memory: Tensor | None, src_mask: Tensor | None, need_weights=False, cache=None):
        """Teacher forcing over the whole prefix, y (B, T, D) -> (B, T, D); or, with this layer's
        ``cache`` ({"self": {"k", "v"}, "cross": {"k", "v"}}, updated), one decoding step: y
        (B, 1, D) is the newest position, attending to the cached ones and the source's keys
        and values (projected once, :meth:`Transformer.init_cache`), and ``memory`` is unused."""
        is_causal = self.is_causal and cache is None  # one new position may see every cached one
        self_cache, cross_cache = (None, None) if cache is None else (cache["self"], cache["cross"])
        h, self_w = self.self_attn(
            self.self_block.sublayer_input(y), is_causal=is_causal, need_weights=need_weights, kv_cache=self_cache
        )
        y = self.self_block(y, h)
        h, cross_w = self.cross_attn(
            self.cross_block.sublayer_input(y), memory, src_mask, need_weights=need_weights, kv_cache=cross_cache
        )
        y = self.cross_block(y, h)
        y = self.ff_block(y, self.feed_forward(self.ff_block.sublayer_input(y)))
        return y, self_w, cross_w  # (B, T, D), (B, H, T, T), (B, H, T, S)


class Transformer(Seq2SeqModel):
    """Encoder-decoder Transformer implementing the shared :class:`Seq2SeqModel` interface."""

    def __init__(self, cfg: TransformerConfig, src_vocab_size: int, tgt_vocab_size: int, pad_id: int) -> None:
        """Every size comes from ``cfg`` (whose defaults are the project's only ones, and whose
        derived ``d_k`` / ``d_v`` are already filled in); the vocabularies from the tokenizer."""
        super().__init__()
        d_model, num_heads, d_k, d_v, d_ff = cfg.d_model, cfg.num_heads, cfg.d_k, cfg.d_v, cfg.d_ff
        dropout, norm_first, share_embeddings = cfg.dropout, cfg.norm_first, cfg.share_embeddings
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("share_embeddings needs one joint vocabulary for source and target")
        self.pad_id, self.d_model, self.norm_first = pad_id, d_model, norm_first
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=pad_id)
        self.tgt_embed = (
            self.src_embed if share_embeddings else nn.Embedding(tgt_vocab_size, d_model, padding_idx=pad_id)
        )
        self.positions = POSITIONS[cfg.positions](d_model, cfg.max_len)
        self.dropout = nn.Dropout(dropout)
        # The teaching switches (docs/claims.md) take a piece away; none draws a random number.
        scale = None if (divisor := cfg.scores_divisor()) is None else 1.0 / divisor
        # fixed_mean: scores of 0 for every key, so softmax gives each real source token the
        # weight 1/S and every target position, in every layer, receives the same mean of the
        # source's values: one context per sentence whatever the decoder asks for.
        cross_scale = 0.0 if cfg.cross_attention == "fixed_mean" else scale
        layer_args = (
            d_model,
            num_heads,
            d_k,
            d_v,
            d_ff,
            dropout,
            norm_first,
            scale,
            cfg.attention_dropout,
            cfg.ff_dropout,
        )
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(cfg.num_encoder_layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(*layer_args, cross_scale=cross_scale, is_causal=cfg.causal_mask)
            for _ in range(cfg.num_decoder_layers)
        )
        # Pre-norm stacks end un-normalised; post-norm layers already end in a LayerNorm.
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.output = nn.Linear(d_model, tgt_vocab_size)
        self._reset_parameters()
        if cfg.tie_output:
            self.output.weight = self.tgt_embed.weight

    def _reset_parameters(self) -> None:
        for name, param in self.named_parameters():
            if param.dim() > 1 and "embed" not in name and not name.startswith("positions."):
                nn.init.xavier_uniform_(param)
        for embed in dict.fromkeys([self.src_embed, self.tgt_embed]):  # ordered: seeds must replay
            nn.init.normal_(embed.weight, std=self.d_model**-0.5)
            nn.init.zeros_(embed.weight[self.pad_id])

    def _embed(self, embed: nn.Embedding, tokens: Tensor, offset: int = 0) -> Tensor:
        x = embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        return self.dropout(x + self.positions(tokens.shape[1], offset))

    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[State, AttentionMaps]:
        """src (B, S) -> {"memory": (B, S, D), "src_mask": (B, 1, 1, S)}."""
        src_mask = make_padding_mask(src, self.pad_id)  # (B, 1, 1, S)
        x = self._embed(self.src_embed, src)  # (B, S, D)
        maps = []
        for layer in self.encoder_layers:
            x, weights = layer(x, src_mask, need_weights)
            maps.append(weights)
        enc = {"memory": self.encoder_norm(x), "src_mask": src_mask}  # (B, S, D)
        return enc, ({"enc_self": maps} if need_weights else {})

    def decode(self, enc: State, tgt_in: Tensor, need_weights: bool = False) -> tuple[Tensor, AttentionMaps]:
        # Right padding plus the causal mask means real target positions never see padding.
        y = self._embed(self.tgt_embed, tgt_in)  # (B, T, D)
        self_maps, cross_maps = [], []
        for layer in self.decoder_layers:
            y, self_w, cross_w = layer(y, enc["memory"], enc["src_mask"], need_weights)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        logits = self.output(self.decoder_norm(y))  # (B, T, V)
        return logits, ({"dec_self": self_maps, "cross": cross_maps} if need_weights else {})

    def init_cache(self, enc: State) -> State:
        """Per decoder layer: the self-attention's keys and values so far (none yet) and the
        cross-attention's over the source, projected once per source sentence."""
        memory = enc["memory"]  # (B, S, D)
        batch, layers = memory.shape[0], []
        for layer in self.decoder_layers:
            attn = layer.self_attn
            cross_k, cross_v = layer.cross_attn.project_kv(memory)  # (B, H, S, Dk|Dv)
            empty_k = memory.new_zeros(batch, attn.num_heads, 0, attn.d_k)  # (B, H, 0, Dk)
            empty_v = memory.new_zeros(batch, attn.num_heads, 0, attn.d_v)  # (B, H, 0, Dv)
            layers.append({"self": {"k": empty_k, "v": empty_v}, "cross": {"k": cross_k, "v": cross_v}})
        return layers

    def step(self, enc: State, tokens: Tensor, cache: State, need_weights: bool = False):
        position = cache[0]["self"]["k"].shape[2]  # target positions decoded so far
        y = self._embed(self.tgt_embed, tokens[:, None], offset=position)  # (B, 1, D)
        new_cache, self_maps, cross_maps = [], [], []
        for layer, layer_cache in zip(self.decoder_layers, cache):
            layer_cache = {"self": dict(layer_cache["self"]), "cross": layer_cache["cross"]}  # the step's own
            y, self_w, cross_w = layer(y, None, enc["src_mask"], need_weights, cache=layer_cache)
            new_cache.append(layer_cache)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        logits = self.output(self.decoder_norm(y))[:, 0]  # (B, V)
        return logits, new_cache, ({"dec_self": self_maps, "cross": cross_maps} if need_weights else {})


__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "LearnedPositions",
    "NoPositions",
    "SinusoidalPositions",
    "Transformer",
]

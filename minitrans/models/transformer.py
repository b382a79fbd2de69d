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
    """x + Dropout(sublayer(LN(x))) when pre-norm, LN(x + Dropout(sublayer(x))) when post-norm."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer) -> tuple[Tensor, Tensor | None]:
        out, weights = sublayer(self.norm(x) if self.norm_first else x)
        x = x + self.dropout(out)
        return (x if self.norm_first else self.norm(x)), weights


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each in a residual block."""

    def __init__(self, d_model, num_heads, d_k, d_v, d_ff, dropout, norm_first) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.attn_block = Residual(d_model, dropout, norm_first)
        self.ff_block = Residual(d_model, dropout, norm_first)

    def forward(self, x: Tensor, src_mask: Tensor | None, need_weights: bool = False):
        """x (B, S, D) -> (B, S, D), weights (B, H, S, S)."""
        x, weights = self.attn_block(x, lambda h: self.self_attn(h, mask=src_mask, need_weights=need_weights))
        x, _ = self.ff_block(x, lambda h: (self.feed_forward(h), None))
        return x, weights  # (B, S, D), (B, H, S, S)


class DecoderLayer(nn.Module):
    """Masked self-attention -> cross-attention over the encoder memory -> feed-forward."""

    is_causal = True  # a target position attends to itself and earlier positions only

    def __init__(self, d_model, num_heads, d_k, d_v, d_ff, dropout, norm_first) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout, is_cross=True)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.self_block = Residual(d_model, dropout, norm_first)
        self.cross_block = Residual(d_model, dropout, norm_first)
        self.ff_block = Residual(d_model, dropout, norm_first)

    def forward(self, y, memory, src_mask, need_weights=False):
        """Teacher forcing over the whole prefix: y (B, T, D) -> (B, T, D)."""
        y, self_w = self.self_block(y, lambda h: self.self_attn(h, is_causal=self.is_causal, need_weights=need_weights))
        y, cross_w = self.cross_block(y, lambda h: self.cross_attn(h, memory, mask=src_mask, need_weights=need_weights))
        y, _ = self.ff_block(y, lambda h: (self.feed_forward(h), None))
        return y, self_w, cross_w

    def step(self, y, cache: dict, src_mask, need_weights=False):
        """One new position: y (B, 1, D); ``cache`` holds this layer's past self-attention keys
        and values and the cross-attention keys and values of the source."""
        new_cache = dict(cache)
        y, self_w = self.self_block(y, lambda h: self.cached_self_attention(h, cache, new_cache, need_weights))
        y, cross_w = self.cross_block(y, lambda h: self.cached_cross_attention(h, cache, src_mask, need_weights))
        y, _ = self.ff_block(y, lambda h: (self.feed_forward(h), None))
        return y, new_cache, self_w, cross_w

    def cached_self_attention(self, h: Tensor, cache: dict, new_cache: dict, need_weights: bool):
        """h (B, 1, D): its key and value join the cached ones in ``new_cache``."""
        q, k, v = self.self_attn.project_qkv(h)  # (B, H, 1, Dk|Dv)
        new_cache["k"] = torch.cat([cache["k"], k], dim=2)  # (B, H, t+1, Dk)
        new_cache["v"] = torch.cat([cache["v"], v], dim=2)  # (B, H, t+1, Dv)
        # The newest position may see every cached one: no mask needed.
        return self.self_attn.attend(q, new_cache["k"], new_cache["v"], need_weights=need_weights)

    def cached_cross_attention(self, h: Tensor, cache: dict, src_mask: Tensor | None, need_weights: bool):
        """h (B, 1, D) attends over the source's keys and values, projected once (init_cache)."""
        q = self.cross_attn.project_q(h)  # (B, H, 1, Dk)
        return self.cross_attn.attend(q, cache["cross_k"], cache["cross_v"], src_mask, need_weights=need_weights)


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
        layer_args = (d_model, num_heads, d_k, d_v, d_ff, dropout, norm_first)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(cfg.num_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(cfg.num_decoder_layers))
        # Pre-norm stacks end un-normalised; post-norm layers already end in a LayerNorm.
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.output = nn.Linear(d_model, tgt_vocab_size)
        self._reset_parameters()
        if cfg.tie_output:
            self.output.weight = self.tgt_embed.weight
        self._set_teaching_switches(cfg)

    def _set_teaching_switches(self, cfg: TransformerConfig) -> None:
        """The switches that take a piece away (docs/claims.md); none draws a random number."""
        for module in self.modules():
            if isinstance(module, MultiHeadAttention):
                module.scale = None if (divisor := cfg.scores_divisor()) is None else 1.0 / divisor
        for layer in self.decoder_layers:
            layer.is_causal = cfg.causal_mask
            if cfg.cross_attention == "fixed_mean":
                # Scores of 0 for every key: softmax gives each real source token the weight
                # 1/S, so each target position, in every layer, receives the same mean of the
                # source's values, one context per sentence whatever the decoder asks for.
                layer.cross_attn.scale = 0.0

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
        memory = enc["memory"]
        layers = []
        for layer in self.decoder_layers:
            attn = layer.self_attn
            cross_k, cross_v = layer.cross_attn.project_kv(memory)  # once per source sentence
            empty = memory.new_zeros(memory.shape[0], attn.num_heads, 0, attn.d_k)  # (B, H, 0, Dk)
            layers.append(
                {
                    "k": empty,
                    "v": memory.new_zeros(memory.shape[0], attn.num_heads, 0, attn.d_v),
                    "cross_k": cross_k,
                    "cross_v": cross_v,
                }
            )
        return layers

    def step(self, enc: State, tokens: Tensor, cache: State, need_weights: bool = False):
        position = self.decoded_length(cache)
        y = self._embed(self.tgt_embed, tokens[:, None], offset=position)  # (B, 1, D)
        new_cache, self_maps, cross_maps = [], [], []
        for layer, layer_cache in zip(self.decoder_layers, cache):
            y, layer_cache, self_w, cross_w = layer.step(y, layer_cache, enc["src_mask"], need_weights)
            new_cache.append(layer_cache)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        logits = self.output(self.decoder_norm(y))[:, 0]  # (B, V)
        return logits, new_cache, ({"dec_self": self_maps, "cross": cross_maps} if need_weights else {})

    def decoded_length(self, cache: State) -> int:
        """Target positions the cache holds (the next token's position)."""
        return cache[0]["k"].shape[2]


__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "LearnedPositions",
    "NoPositions",
    "SinusoidalPositions",
    "Transformer",
]

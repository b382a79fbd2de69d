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
from minitrans.models.fast_dropout import Dropout, dropout_add, relu_dropout
from minitrans.models.interface import AttentionMaps, Seq2SeqModel, State
from minitrans.models.packed_tokens import PackedTokens


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


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x: Tensor) -> Tensor:
        first, _, drop, second = self.net  # the Sequential names the parameters (net.0, net.3)
        return second(relu_dropout(first(x), drop.p if self.training else 0.0))  # (B, L, F) -> (B, L, D)


class Residual(nn.Module):
    """x + Dropout(sublayer(LN(x))) when pre-norm, LN(x + Dropout(sublayer(x))) when post-norm."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer) -> tuple[Tensor, Tensor | None]:
        out, weights = sublayer(self.norm(x) if self.norm_first else x)
        x = dropout_add(x, out, self.dropout.p if self.training else 0.0)  # x + Dropout(out), one pass
        return (x if self.norm_first else self.norm(x)), weights


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each in a residual block."""

    def __init__(self, d_model, num_heads, d_k, d_v, d_ff, dropout, norm_first) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.attn_block = Residual(d_model, dropout, norm_first)
        self.ff_block = Residual(d_model, dropout, norm_first)

    def forward(self, x: Tensor, src_mask: Tensor, need_weights: bool = False, packed: PackedTokens | None = None):
        """x (B, S, D), or (N, D) real tokens only when ``packed`` says where they sit (speed only)."""

        def self_attention(h):
            if packed is not None:
                return packed.self_attention(self.self_attn, h, src_mask), None
            return self.self_attn(h, mask=src_mask, need_weights=need_weights)

        x, weights = self.attn_block(x, self_attention)
        x, _ = self.ff_block(x, lambda h: (self.feed_forward(h), None))
        return x, weights  # (B, S, D), (B, H, S, S)


class DecoderLayer(nn.Module):
    """Masked self-attention -> cross-attention over the encoder memory -> feed-forward."""

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
        y, self_w = self.self_block(y, lambda h: self.self_attn(h, is_causal=True, need_weights=need_weights))
        y, cross_w = self.cross_block(y, lambda h: self.cross_attn(h, memory, mask=src_mask, need_weights=need_weights))
        y, _ = self.ff_block(y, lambda h: (self.feed_forward(h), None))
        return y, self_w, cross_w

    def step(self, y, cache: dict, src_mask, need_weights=False):
        """One new position: y (B, 1, D); ``cache`` holds this layer's past self-attention keys
        and values and the cross-attention keys and values of the source."""
        new_cache = dict(cache)

        def self_attention(h):
            q, k, v = self.self_attn.project_qkv(h)  # (B, H, 1, Dk)
            if cache.get("spare"):  # reorder_cache left the last position free for this step
                new_cache["k"], new_cache["v"], new_cache["spare"] = cache["k"], cache["v"], False
                new_cache["k"][:, :, -1:] = k  # (B, H, t+1, Dk)
                new_cache["v"][:, :, -1:] = v  # (B, H, t+1, Dv)
            else:
                new_cache["k"] = torch.cat([cache["k"], k], dim=2)  # (B, H, t+1, Dk)
                new_cache["v"] = torch.cat([cache["v"], v], dim=2)  # (B, H, t+1, Dv)
            # The newest position may see every cached one: no mask needed.
            return self.self_attn.attend(q, new_cache["k"], new_cache["v"], need_weights=need_weights)

        def cross_attention(h):
            q = self.cross_attn.project_q(h)  # (N, H, 1, Dk)
            sentences = cache["cross_k"].shape[0]
            if sentences == q.shape[0]:
                return self.cross_attn.attend(
                    q, cache["cross_k"], cache["cross_v"], src_mask, need_weights=need_weights
                )
            # Beam search: the K beams of a sentence share its keys and values (kept once per
            # sentence, see Transformer.reorder_cache), so they attend as K queries of one row.
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

        y, self_w = self.self_block(y, self_attention)
        y, cross_w = self.cross_block(y, cross_attention)
        y, _ = self.ff_block(y, lambda h: (self.feed_forward(h), None))
        return y, new_cache, self_w, cross_w


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
        self.positions = SinusoidalPositions(d_model, cfg.max_len)
        self.dropout = Dropout(dropout)
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

    def _reset_parameters(self) -> None:
        for name, param in self.named_parameters():
            if param.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(param)
        for embed in dict.fromkeys([self.src_embed, self.tgt_embed]):  # ordered: seeds must replay
            nn.init.normal_(embed.weight, std=self.d_model**-0.5)
            nn.init.zeros_(embed.weight[self.pad_id])

    def _embed(self, embed: nn.Embedding, tokens: Tensor, offset: int = 0) -> Tensor:
        x = embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        return self.dropout(x + self.positions(tokens.shape[1], offset))

    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[State, AttentionMaps]:
        """src (B, S) -> {"memory": (B, S, D), "src_mask": (B, 1, 1, S), or None when no source
        sentence is padded (most length-bucketed batches): attention then skips masking}."""
        src_mask = make_padding_mask(src, self.pad_id)  # (B, 1, 1, S)
        if not torch.compiler.is_compiling() and bool(src_mask.all()):  # compiled graphs keep the mask
            src_mask = None
        x = self._embed(self.src_embed, src)  # (B, S, D)
        # The layers' position-wise work on real tokens only (packed_tokens.py): the same function.
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

    def step(self, enc: State, tokens: Tensor, cache: State, need_weights: bool = False):
        position = cache[0]["k"].shape[2] - int(cache[0].get("spare", False))
        y = self._embed(self.tgt_embed, tokens[:, None], offset=position)  # (B, 1, D)
        new_cache, self_maps, cross_maps = [], [], []
        for layer, layer_cache in zip(self.decoder_layers, cache):
            y, layer_cache, self_w, cross_w = layer.step(y, layer_cache, enc["src_mask"], need_weights)
            new_cache.append(layer_cache)
            self_maps.append(self_w)
            cross_maps.append(cross_w)
        logits = self.output(self.decoder_norm(y))[:, 0]  # (B, V)
        return logits, new_cache, ({"dec_self": self_maps, "cross": cross_maps} if need_weights else {})


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


__all__ = ["DecoderLayer", "EncoderLayer", "FeedForward", "SinusoidalPositions", "Transformer"]

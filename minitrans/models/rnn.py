"""The RNN baselines: a fixed-context GRU encoder-decoder and the same network with attention.

``FixedContextRNN`` follows Cho et al. (2014): the encoder squeezes the whole source into one
vector C, and the decoder sees C — and nothing else from the encoder — at every step, in its
initial state, its GRU input and its output layer. ``AttentionRNN`` is the same network with
C replaced by an additive-attention context c_t (Bahdanau et al., 2015), recomputed per step.
Both share one encoder and one decoder; only the pluggable "context" module differs, so the
bottleneck study compares exactly that one thing.

Shape legend: B batch, S source length, T target length, V vocabulary, E embedding width,
Dh decoder hidden width (= per-direction encoder width), Dc encoder state / context width
(Dh times the number of directions), A attention width, L layers.

Embeddings: source and target share one vocabulary. By default the source and target
embeddings are separate tables and the output projection is its own matrix. With
``tie_embeddings`` one table serves all three (source embedding, target embedding and the
output projection, as in Press & Wolf 2017); the deep-output layer maps to width E so the
shapes always allow it.

Source masks follow the project convention: boolean (B, S), True at real tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from minitrans.core.config import RNNConfig
from minitrans.models.attention import make_padding_mask
from minitrans.models.interface import AttentionMaps, Seq2SeqModel, State


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last dim where ``mask`` is True; a row with nothing allowed gives zeros."""
    # A finite fill keeps a fully masked row finite; the multiply then zeroes it (no NaN).
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1) * mask


class GRUEncoder(nn.Module):
    """Embedding -> (bi)GRU over the real tokens only: per-position states and the final state."""

    def __init__(
        self, embed: nn.Embedding, d_hidden: int, num_layers: int, bidirectional: bool, dropout: float
    ) -> None:
        super().__init__()
        self.embed = embed
        self.dropout = nn.Dropout(dropout)
        self.num_layers, self.num_directions = num_layers, 2 if bidirectional else 1
        self.rnn = nn.GRU(
            embed.embedding_dim,
            d_hidden,
            num_layers=num_layers,
            bidirectional=bidirectional,
            dropout=dropout if num_layers > 1 else 0.0,
            batch_first=True,
        )
        self.d_context = d_hidden * self.num_directions

    def forward(self, src: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """src, src_mask (B, S) -> states (B, S, Dc) (zero at padding), final (B, Dc).

        Packing makes padding invisible: the forward half of ``final`` is the state after each
        sentence's last real token, the backward half the state after reading back to its first.
        An empty source is read as one pad token (packing needs a length of at least one).
        """
        batch, src_len = src.shape
        lengths = src_mask.sum(dim=1).clamp(min=1).cpu()  # (B,)
        x = self.dropout(self.embed(src))  # (B, S, E)
        real_steps = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)  # real tokens only
        out, h_n = self.rnn(real_steps)  # h_n: (L·dirs, B, Dh), in the original batch order
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=src_len)  # (B, S, Dc)
        top = h_n.view(self.num_layers, self.num_directions, batch, -1)[-1]  # (dirs, B, Dh)
        final = top.transpose(0, 1).reshape(batch, self.d_context)  # (B, Dc)
        return states, final


class FixedContext(nn.Module):
    """Cho et al. (2014): one vector C, the encoder's final state, reused at every step.

    ``prepare`` keeps only C, so the decoder cannot use anything else from the encoder.
    """

    def prepare(self, states: Tensor, final: Tensor, src_mask: Tensor) -> State:
        return {"context": final}  # C (B, Dc)

    def summary(self, enc: State) -> Tensor:
        return enc["context"]  # (B, Dc)

    def forward(self, enc: State, query: Tensor) -> tuple[Tensor, Tensor | None]:
        return enc["context"], None  # (B, Dc), no weights


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2015): e_tj = vᵀ tanh(W_s s_{t-1} + W_h h_j), alpha_t = softmax_j(e_t),
    c_t = Σ_j alpha_tj h_j. The keys W_h h_j are computed once per source in ``prepare``."""

    def __init__(self, d_context: int, d_query: int, d_attention: int) -> None:
        super().__init__()
        self.key_proj = nn.Linear(d_context, d_attention)  # W_h (its bias is the score's bias)
        self.query_proj = nn.Linear(d_query, d_attention, bias=False)  # W_s
        self.score_proj = nn.Linear(d_attention, 1, bias=False)  # v

    def prepare(self, states: Tensor, final: Tensor, src_mask: Tensor) -> State:
        keys = self.key_proj(states)  # (B, S, A)
        return {"states": states, "keys": keys, "src_mask": src_mask, "final": final}

    def summary(self, enc: State) -> Tensor:
        return enc["final"]  # (B, Dc)

    def forward(self, enc: State, query: Tensor) -> tuple[Tensor, Tensor | None]:
        """query s_{t-1} (B, Dh) -> context c_t (B, Dc), weights alpha_t (B, S)."""
        energy = torch.tanh(enc["keys"] + self.query_proj(query)[:, None, :])  # (B, S, A)
        scores = self.score_proj(energy).squeeze(-1)  # (B, S)
        weights = masked_softmax(scores, enc["src_mask"])  # (B, S)
        context = torch.bmm(weights[:, None, :], enc["states"]).squeeze(1)  # (B, Dc)
        return context, weights


class ContextGRUDecoder(nn.Module):
    """A GRU decoder fed a context vector at every step (Cho et al. 2014, Bahdanau et al. 2015).

    s_0 = tanh(W_init · summary); per step, with c_t from the pluggable ``context`` module:
    s_t = GRU(s_{t-1}, [emb(y_{t-1}); c_t]) and logits = W_out tanh(W_pre [s_t; emb(y_{t-1}); c_t]).
    Only the first layer receives [emb; c_t]; upper layers take the layer below.
    """

    def __init__(
        self,
        embed: nn.Embedding,
        context: nn.Module,
        d_context: int,
        d_hidden: int,
        num_layers: int,
        dropout: float,
        tie_output: bool,
    ) -> None:
        super().__init__()
        vocab_size, d_embed = embed.weight.shape
        self.embed, self.context = embed, context
        self.num_layers, self.d_hidden = num_layers, d_hidden
        self.dropout = nn.Dropout(dropout)
        self.init_proj = nn.Linear(d_context, num_layers * d_hidden)
        self.cells = nn.ModuleList(
            nn.GRUCell(d_embed + d_context if layer == 0 else d_hidden, d_hidden) for layer in range(num_layers)
        )
        self.pre_output = nn.Linear(d_hidden + d_embed + d_context, d_embed)
        self.output = nn.Linear(d_embed, vocab_size)
        if tie_output:
            self.output.weight = embed.weight

    def init_hidden(self, enc: State) -> Tensor:
        summary = self.context.summary(enc)  # (B, Dc)
        hidden = torch.tanh(self.init_proj(summary))  # (B, L·Dh)
        return hidden.view(-1, self.num_layers, self.d_hidden)  # (B, L, Dh)

    def forward(self, enc: State, tokens: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """One step: tokens (B,), hidden (B, L, Dh) -> logits (B, V), new hidden, weights (B, S) | None."""
        emb = self.dropout(self.embed(tokens))  # (B, E)
        context, weights = self.context(enc, hidden[:, -1])  # (B, Dc), query s_{t-1} of the top layer
        layer_input = torch.cat([emb, context], dim=-1)  # (B, E + Dc)
        new_hidden = []
        for layer, cell in enumerate(self.cells):
            state = cell(layer_input, hidden[:, layer])  # (B, Dh)
            new_hidden.append(state)
            layer_input = self.dropout(state)
        features = torch.cat([layer_input, emb, context], dim=-1)  # (B, Dh + E + Dc)
        logits = self.output(self.dropout(torch.tanh(self.pre_output(features))))  # (B, V)
        return logits, torch.stack(new_hidden, dim=1), weights  # (B, V), (B, L, Dh)


class _RNNSeq2Seq(Seq2SeqModel):
    """The shared encoder-decoder; subclasses choose only the context module."""

    def __init__(self, cfg: RNNConfig, vocab_size: int, pad_id: int, d_attention: int | None) -> None:
        """Sizes from ``cfg`` (the project's only defaults); ``d_attention`` None: fixed context."""
        super().__init__()
        self.pad_id = pad_id
        d_embed, d_hidden, num_layers, dropout = cfg.d_embed, cfg.d_hidden, cfg.num_layers, cfg.dropout
        bidirectional, tie_embeddings = cfg.bidirectional, cfg.tie_embeddings
        src_embed = nn.Embedding(vocab_size, d_embed, padding_idx=pad_id)
        tgt_embed = src_embed if tie_embeddings else nn.Embedding(vocab_size, d_embed, padding_idx=pad_id)
        self.encoder = GRUEncoder(src_embed, d_hidden, num_layers, bidirectional, dropout)
        d_context = self.encoder.d_context
        context = FixedContext() if d_attention is None else AdditiveAttention(d_context, d_hidden, d_attention)
        self.decoder = ContextGRUDecoder(
            tgt_embed, context, d_context, d_hidden, num_layers, dropout, tie_output=tie_embeddings
        )

    def encode(self, src: Tensor, need_weights: bool = False) -> tuple[State, AttentionMaps]:
        src_mask = make_padding_mask(src, self.pad_id)[:, 0, 0]  # (B, S)
        states, final = self.encoder(src, src_mask)  # (B, S, Dc), (B, Dc)
        return self.decoder.context.prepare(states, final, src_mask), {}

    def init_cache(self, enc: State) -> State:
        return {"hidden": self.decoder.init_hidden(enc)}  # (B, L, Dh)

    def step(
        self, enc: State, tokens: Tensor, cache: State, need_weights: bool = False
    ) -> tuple[Tensor, State, AttentionMaps]:
        logits, hidden, weights = self.decoder(enc, tokens, cache["hidden"])  # (B, V), (B, L, Dh)
        maps = {"cross": [weights[:, None, None, :]]} if need_weights and weights is not None else {}
        return logits, {"hidden": hidden}, maps  # maps: (B, 1, 1, S)

    def decode(self, enc: State, tgt_in: Tensor, need_weights: bool = False) -> tuple[Tensor, AttentionMaps]:
        """Teacher forcing as a loop over ``step``, so full and incremental decoding cannot differ."""
        cache = self.init_cache(enc)
        all_logits, all_weights = [], []
        for t in range(tgt_in.shape[1]):
            logits, cache, maps = self.step(enc, tgt_in[:, t], cache, need_weights)
            all_logits.append(logits)
            all_weights.extend(maps.get("cross", []))
        maps = {"cross": [torch.cat(all_weights, dim=2)]} if all_weights else {}  # (B, 1, T, S)
        return torch.stack(all_logits, dim=1), maps  # (B, T, V)


class FixedContextRNN(_RNNSeq2Seq):
    """Cho et al. (2014): the decoder sees one fixed vector C for every target word."""

    def __init__(self, cfg: RNNConfig, vocab_size: int, pad_id: int) -> None:
        super().__init__(cfg, vocab_size, pad_id, d_attention=None)


class AttentionRNN(_RNNSeq2Seq):
    """Bahdanau et al. (2015): the same network with an additive-attention context per step."""

    def __init__(self, cfg: RNNConfig, vocab_size: int, pad_id: int) -> None:
        if cfg.d_attention is None:  # RNNConfig fills it in for kind="rnn_attention"
            raise ValueError("AttentionRNN needs an RNNConfig of kind 'rnn_attention'")
        super().__init__(cfg, vocab_size, pad_id, d_attention=cfg.d_attention)


__all__ = [
    "AdditiveAttention",
    "AttentionRNN",
    "ContextGRUDecoder",
    "FixedContext",
    "FixedContextRNN",
    "GRUEncoder",
    "masked_softmax",
]

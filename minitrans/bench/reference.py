"""The training benchmark's reference: ``torch.nn.Transformer`` inside the same embeddings,
positions and tied output layer as the minitrans Transformer, and :func:`build` for either model
from one :class:`~minitrans.core.config.TransformerConfig` (so both get the same sizes)."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

from torch import Tensor, nn

from minitrans.core.config import TransformerConfig
from minitrans.data.tokenizer import PAD_ID
from minitrans.models.build import VocabSizes, build_model
from minitrans.models.transformer import SinusoidalPositions

MODEL_NAMES = ("minitrans", "minitrans-notes", "torch")  # the fast model, the notes model, the twin


class TorchTransformer(nn.Module):
    """``torch.nn.Transformer`` with minitrans' embeddings, positions and tied output layer."""

    def __init__(self, vocab_size: int, pad_id: int, size: TransformerConfig) -> None:
        super().__init__()
        self.pad_id, self.d_model = pad_id, size.d_model
        self.embed = nn.Embedding(vocab_size, size.d_model, padding_idx=pad_id)
        self.positions = SinusoidalPositions(size.d_model, size.max_len)
        self.dropout = nn.Dropout(size.dropout)
        with warnings.catch_warnings():  # the nested-tensor fast path is for inference only
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            self.core = nn.Transformer(
                size.d_model,
                size.num_heads,
                size.num_encoder_layers,
                size.num_decoder_layers,
                size.d_ff,
                size.dropout,
                batch_first=True,
                norm_first=size.norm_first,
            )
        self.output = nn.Linear(size.d_model, vocab_size)
        self.output.weight = self.embed.weight

    def _embed(self, tokens: Tensor) -> Tensor:
        return self.dropout(self.embed(tokens) * math.sqrt(self.d_model) + self.positions(tokens.shape[1]))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        src_padding = src == self.pad_id  # (B, S), torch: True = ignore
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)  # (T, T)
        out = self.core(
            self._embed(src),
            self._embed(tgt_in),
            tgt_mask=causal,
            src_key_padding_mask=src_padding,
            memory_key_padding_mask=src_padding,
            tgt_is_causal=True,
        )
        return self.output(out)  # (B, T, V)


def build(name: str, vocab_size: int, size: TransformerConfig) -> nn.Module:
    """The minitrans Transformer as the trainer builds it (one joint vocabulary: the fast model, or
    with ``minitrans-notes`` the notes model), or its twin."""
    if name == "torch":
        return TorchTransformer(vocab_size, PAD_ID, size)
    if name == "minitrans-notes":
        size = replace(size, implementation="notes")
    return build_model(size, VocabSizes(vocab_size, vocab_size, PAD_ID, is_joint=True))


__all__ = ["MODEL_NAMES", "TorchTransformer", "build"]

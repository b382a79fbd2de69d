"""Tiny untrained models, built as the trainer builds them (:func:`minitrans.models.build.build_model`
from a typed config) after seeding torch, so that every test file gets its model the same way and
states only the sizes and switches it depends on."""

from __future__ import annotations

import torch

from minitrans.core.config import RNNConfig, TransformerConfig
from minitrans.data.tokenizer import Tokenizer
from minitrans.models.build import VocabSizes, build_model
from minitrans.models.interface import Seq2SeqModel

# one layer a side, two heads, no dropout: seconds of CPU for any property test
TINY_TRANSFORMER = dict(d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0)
TINY_RNN = dict(d_embed=16, d_hidden=16, dropout=0.0)
KINDS = ("transformer", "rnn", "rnn_attention")


def tiny_model_config(kind: str = "transformer", **fields) -> TransformerConfig | RNNConfig:
    """The config of a tiny model of ``kind`` (transformer, rnn, rnn_attention): the tiny sizes
    above with ``fields`` over them; a Transformer is the notes model unless ``fields`` says
    ``implementation="fast"``."""
    if kind not in KINDS:
        raise ValueError(f"no model kind {kind!r}: one of {KINDS}")
    if kind == "transformer":
        return TransformerConfig(**(TINY_TRANSFORMER | {"implementation": "notes"} | fields))
    return RNNConfig(kind=kind, **(TINY_RNN | fields))


def tiny_model(
    kind: str = "transformer", vocab: int | Tokenizer | VocabSizes = 40, *, seed: int = 0, **fields
) -> Seq2SeqModel:
    """A tiny model of ``kind`` (:func:`tiny_model_config` with ``fields``) as ``torch.manual_seed(seed)``
    initialises it, in eval mode, for one joint vocabulary of ``vocab`` ids (or a tokenizer's
    vocabularies): the same seed and fields give the same weights."""
    torch.manual_seed(seed)
    sizes = VocabSizes(vocab, vocab) if isinstance(vocab, int) else vocab
    return build_model(tiny_model_config(kind, **fields), sizes).eval()


__all__ = ["KINDS", "TINY_RNN", "TINY_TRANSFORMER", "tiny_model", "tiny_model_config"]

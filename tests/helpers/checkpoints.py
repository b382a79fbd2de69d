"""Tiny untrained checkpoints, each saved with the payload the trainer writes
(:func:`minitrans.training.checkpoints.checkpoint_payload`), and the small corpora they are built from."""

from __future__ import annotations

import random
from pathlib import Path

import torch

from minitrans.core.checkpoint import save_checkpoint
from minitrans.core.config import DataConfig, RNNConfig, TrainConfig, TransformerConfig
from minitrans.data.tokenizer import EOS_ID, Tokenizer
from minitrans.models.build import build_model
from minitrans.training.checkpoints import checkpoint_payload

# the translation tests' corpus (test_translate, test_lines, test_serve, ...): three pairs, three times
SRC = ["ein mann fährt fahrrad .", "eine frau liest ein buch .", "zwei hunde spielen im park ."] * 3
TGT = ["a man rides a bike .", "a woman reads a book .", "two dogs play in the park ."] * 3

# the export tests' corpus (test_export, test_hf_export): the three pairs once, and 40 random
# sentences of their words (with two blank ones) to translate
EXPORT_SRC = SRC[:3]
EXPORT_TGT = TGT[:3]
WORDS = "ein mann frau hund zwei spielen park buch liest fährt fahrrad im eine .".split()
_draw = random.Random(0)
SENTENCES = [" ".join(_draw.choices(WORDS, k=_draw.randint(1, 9))) for _ in range(40)] + ["", "  "]

# Every shape the exporter maps differently; the EOS bias spreads output lengths from 0 to the limit.
VARIANTS = {
    "pre-norm, shared and tied embeddings": ({}, 2.0),
    "post-norm": ({"norm_first": False}, 2.0),
    "d_k != d_model / num_heads": ({"num_heads": 3, "d_k": 8}, 2.0),
    "separate vocabularies, nothing shared": ({"share_embeddings": False, "tie_output": False, "joint": False}, 0.5),
}

# a cased corpus with punctuation and an empty line (test_evaluate, test_heads)
DE = ["Ein Mann fährt Fahrrad.", "Eine Frau liest ein Buch.", "Zwei Hunde spielen im Park.", "", "Ein Kind lacht."]
EN = ["A man rides a bike.", "A woman reads a book.", "Two dogs play in the park.", "", "A child laughs."]


def save_untrained(
    path: Path,
    model_cfg: TransformerConfig | RNNConfig,
    tokenizer: Tokenizer,
    data: DataConfig,
    extra: dict | None = None,
    eos_bias: float = 0.0,
) -> Path:
    """The model of ``model_cfg`` as seed 0 initialises it, saved as the trainer saves best.pt
    (with ``extra`` keys added, e.g. the record of its training data); ``eos_bias`` is added to
    EOS's output bias so that untrained outputs end at varied lengths, not only at the limit."""
    torch.manual_seed(0)
    model = build_model(model_cfg, tokenizer)
    if eos_bias:
        with torch.no_grad():
            model.output.bias[EOS_ID] += eos_bias
    save_checkpoint(checkpoint_payload(TrainConfig(model=model_cfg, data=data), tokenizer, model) | (extra or {}), path)
    return path


def build_checkpoint(
    path: Path, kind: str = "transformer", max_len: int = 64, data: DataConfig | None = None, extra: dict | None = None
) -> Path:
    """A tiny untrained model with its tokenizer, saved as the trainer saves best.pt (without
    the record of its training data unless ``extra`` adds it: like an older checkpoint)."""
    tokenizer = Tokenizer.train(SRC, TGT, vocab_size=300)
    if kind == "transformer":
        model_cfg = TransformerConfig(
            d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=2, dropout=0.0, max_len=max_len
        )
    else:
        model_cfg = RNNConfig(kind=kind, d_embed=16, d_hidden=16, dropout=0.0, max_len=max_len)
    return save_untrained(
        path, model_cfg, tokenizer, data or DataConfig(name="multi30k", src_lang="de", tgt_lang="en"), extra
    )


def build_export_checkpoint(
    path: Path, eos_bias: float = 2.0, joint: bool = True, kind: str = "transformer", **model
) -> Path:
    """A small untrained model of two layers a side (``model`` overrides its sizes), as the
    exporter's tests build it, with an EOS bias (see :func:`save_untrained`)."""
    tokenizer = Tokenizer.train(EXPORT_SRC, EXPORT_TGT, vocab_size=300, joint=joint)
    if kind == "transformer":
        sizes = dict(d_model=16, num_heads=2, d_ff=32, num_encoder_layers=2, num_decoder_layers=2, max_len=64)
        model_cfg = TransformerConfig(**{**sizes, "dropout": 0.0, **model})
    else:
        model_cfg = RNNConfig(kind=kind, d_embed=16, d_hidden=16, dropout=0.0)
        eos_bias = 0.0
    data = DataConfig(name="multi30k", src_lang="de", tgt_lang="en", joint_vocab=joint)
    return save_untrained(path, model_cfg, tokenizer, data, eos_bias=eos_bias)


def build_cased_checkpoint(path: Path, data: DataConfig) -> Path:
    """A one-layer untrained Transformer (dropout as the schema's default) with a tokenizer of the
    cased corpus ``DE``/``EN``, for ``data``'s run."""
    tokenizer = Tokenizer.train(DE * 2, EN * 2, vocab_size=300)
    model_cfg = TransformerConfig(d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=1)
    return save_untrained(path, model_cfg, tokenizer, data)


__all__ = [
    "DE",
    "EN",
    "EXPORT_SRC",
    "EXPORT_TGT",
    "SENTENCES",
    "SRC",
    "TGT",
    "VARIANTS",
    "WORDS",
    "build_cased_checkpoint",
    "build_checkpoint",
    "build_export_checkpoint",
    "save_untrained",
]

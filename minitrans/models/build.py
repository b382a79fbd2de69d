"""Build any of the project's models from its typed config: the notes model, made fast from
here (``models/fast/``) unless ``model.implementation=notes``, and the loss it trains with."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from minitrans.core.config import RNNConfig, TransformerConfig
from minitrans.data.tokenizer import PAD_ID, Tokenizer
from minitrans.models.fast.loss import step_loss
from minitrans.models.fast.transformer import make_fast
from minitrans.models.interface import Seq2SeqModel
from minitrans.models.loss import token_loss
from minitrans.models.rnn import AttentionRNN, FixedContextRNN
from minitrans.models.transformer import Transformer


@dataclass(frozen=True)
class VocabSizes:
    """What a model needs to know of its vocabularies, for building one without a tokenizer
    (the training benchmark's random tokens); a :class:`Tokenizer` offers the same fields."""

    src_vocab_size: int
    tgt_vocab_size: int
    pad_id: int = PAD_ID
    is_joint: bool = True  # one vocabulary (one SentencePiece model) for both languages


def build_model(cfg: TransformerConfig | RNNConfig, tokenizer: Tokenizer | VocabSizes) -> Seq2SeqModel:
    """The model ``cfg`` describes, for the tokenizer's vocabularies: each model takes its config
    dataclass, so every size and its default is written once, in :mod:`minitrans.core.config`."""
    if isinstance(cfg, TransformerConfig):
        if cfg.share_embeddings and not tokenizer.is_joint:  # two vocabularies cannot share a table
            cfg = replace(cfg, share_embeddings=False)
        model = Transformer(cfg, tokenizer.src_vocab_size, tokenizer.tgt_vocab_size, tokenizer.pad_id)
        return model if cfg.implementation == "notes" else make_fast(model)
    if not tokenizer.is_joint:
        raise ValueError("the RNN models use one joint vocabulary: set data.joint_vocab=true")
    model_class = AttentionRNN if cfg.kind == "rnn_attention" else FixedContextRNN
    return model_class(cfg, tokenizer.src_vocab_size, tokenizer.pad_id)


def training_loss(cfg: TransformerConfig | RNNConfig) -> Callable[[Tensor, Tensor, float], Tensor]:
    """The loss the training step calls, ``loss(logits, tgt_out, label_smoothing)``: the notes'
    :func:`~minitrans.models.loss.token_loss` for ``model.implementation=notes``, else the same
    value in fewer passes, in the spent logits' memory (``models/fast/loss.py``; the RNN
    baselines, which have no implementation knob, train with it too)."""
    return token_loss if getattr(cfg, "implementation", "fast") == "notes" else step_loss


def model_bytes(cfg: TransformerConfig | RNNConfig, tokenizer: Tokenizer) -> tuple[dict[str, tuple], int]:
    """The shapes of the weights the config describes, and the bytes of every parameter and
    buffer, found by building the model on the meta device (nothing is allocated)."""
    with torch.device("meta"):
        skeleton = build_model(cfg, tokenizer)
    shapes = {key: tuple(value.shape) for key, value in skeleton.state_dict().items()}
    tensors = [*skeleton.parameters(), *skeleton.buffers()]
    return shapes, sum(t.numel() * t.element_size() for t in tensors)


def memory_bytes() -> int | None:
    """This machine's physical memory, where the platform says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


LOOSE_BYTES = 64 << 20  # what a model may build beyond twice its weights (buffers: positions, masks)


def build_model_for_weights(cfg: TransformerConfig | RNNConfig, tokenizer: Tokenizer, weights: dict) -> Seq2SeqModel:
    """The model a checkpoint's config describes, built only once its weights are known to have
    the shapes that config gives and the model fits in memory: a crafted or edited config
    cannot make the loader allocate what the file does not hold. Raises ValueError (one line)."""
    shapes, size = model_bytes(cfg, tokenizer)
    given = {key: tuple(value.shape) for key, value in weights.items() if isinstance(value, torch.Tensor)}
    if len(given) != len(weights):
        raise ValueError("the weights hold something other than tensors")
    missing, unexpected = sorted(shapes.keys() - given.keys()), sorted(given.keys() - shapes.keys())
    if missing or unexpected:
        raise ValueError(f"weights and config disagree: missing {missing[:3]}, unexpected {unexpected[:3]}")
    for key, shape in shapes.items():
        if given[key] != shape:
            raise ValueError(
                f"weights and config disagree: {key} is {list(given[key])}, the config gives {list(shape)}"
            )
    for key, value in weights.items():  # an int64 or NaN table would translate to "⁇ ⁇ ⁇" without a word
        if not value.is_floating_point():
            raise ValueError(f"the weights' {key} holds {value.dtype}, not floating-point numbers")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"the weights' {key} holds NaN or infinite values (a diverged or damaged model)")
    held = sum(value.numel() * value.element_size() for value in weights.values())
    if size > 2 * held + LOOSE_BYTES:  # buffers the file does not hold, e.g. a huge position table
        raise ValueError(
            f"the config asks for {size / 2**20:,.0f} MiB of parameters and buffers, the weights hold "
            f"{held / 2**20:,.0f} MiB (is model.max_len={getattr(cfg, 'max_len', '?')} what it was trained with?)"
        )
    memory = memory_bytes()
    if memory is not None and size > memory:
        raise ValueError(f"the model needs {size / 2**30:.1f} GiB, more than this machine's {memory / 2**30:.1f} GiB")
    return build_model(cfg, tokenizer)

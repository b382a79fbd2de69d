"""Validation loss and translation quality of a model on a tokenised split."""

from __future__ import annotations

from collections.abc import Sequence

import datasets
import torch

from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.metrics import bleu_by_length, bleu_settings, corpus_scores
from minitrans.core.utils import eval_mode
from minitrans.data.batching import TokenBatchSampler, collate
from minitrans.inference.translator import Translator
from minitrans.models.interface import Seq2SeqModel
from minitrans.models.loss import token_loss


@torch.no_grad()
def validation_losses(
    model: Seq2SeqModel, split: datasets.Dataset, batch_tokens: int, device: torch.device, label_smoothing: float = 0.0
) -> dict[str, float]:
    """Mean per-token losses under teacher forcing, from one pass: ``cross_entropy`` (no label
    smoothing) and ``label_smoothed`` (the training loss, with ``label_smoothing``), so a
    validation curve can be set beside the training curve it matches."""
    src_ids, tgt_ids = split["src_ids"], split["tgt_ids"]
    sampler = TokenBatchSampler(list(map(len, src_ids)), list(map(len, tgt_ids)), batch_tokens, shuffle=False)
    plain, smoothed, tokens = 0.0, 0.0, 0
    with eval_mode(model):
        for indices in sampler.batches():
            batch = collate([src_ids[i] for i in indices], [tgt_ids[i] for i in indices]).to(device)
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            plain += float(token_loss(logits, batch.tgt_out))
            smoothed += float(token_loss(logits, batch.tgt_out, label_smoothing)) if label_smoothing else 0.0
            tokens += batch.num_tgt_tokens
    tokens = max(tokens, 1)
    return {"cross_entropy": plain / tokens, "label_smoothed": (smoothed if label_smoothing else plain) / tokens}


def validation_loss(model: Seq2SeqModel, split: datasets.Dataset, batch_tokens: int, device: torch.device) -> float:
    """Mean per-token cross-entropy (no label smoothing) under teacher forcing."""
    return validation_losses(model, split, batch_tokens, device)["cross_entropy"]


def unseen_scores(
    hypotheses: Sequence[str],
    references: Sequence[str],
    seen: Sequence[bool],
    tgt_lang: str | None = None,
    tokenize: str | None = None,
) -> dict:
    """``seen_in_train`` (how many sources the model saw in training, with some translation)
    and ``unseen``: BLEU and chrF on the other sentences, which measure translation rather than
    recall; empty when no source was seen."""
    if not any(seen):
        return {}
    kept = [(h, r) for h, r, was_seen in zip(hypotheses, references, seen) if not was_seen]
    out: dict = {"seen_in_train": sum(map(bool, seen))}
    if kept:
        scores = corpus_scores([h for h, _ in kept], [r for _, r in kept], tgt_lang, tokenize)
        out["unseen"] = {"sentences": len(kept), "bleu": scores["bleu"], "chrf": scores["chrf"]}
    return out


def evaluate_split(
    translator: Translator,
    split: datasets.Dataset,
    options: DecodingOptions,
    limit: int | None = None,
    with_buckets: bool = False,
) -> tuple[dict, list[str]]:
    """Translate (the first ``limit`` sentences of) a split and score it with sacrebleu, BLEU
    tokenised for the run's target language (``data.tgt_lang``) unless ``trainer.bleu_tokenize``
    names a tokenizer."""
    rows = split if limit is None else split.select(range(min(limit, len(split))))
    hyp_ids = translator.translate_encoded(rows["src_ids"], options)
    hypotheses = [translator.tokenizer.decode_tgt(ids) for ids in hyp_ids]
    tgt_lang, tokenize = bleu_settings(translator.config)
    scores = corpus_scores(hypotheses, rows["tgt"], tgt_lang, tokenize)
    if "seen_in_train" in rows.column_names:
        scores |= unseen_scores(hypotheses, rows["tgt"], rows["seen_in_train"], tgt_lang, tokenize)
    if with_buckets:
        scores["by_length"] = bleu_by_length(rows["src"], hypotheses, rows["tgt"], tgt_lang=tgt_lang, tokenize=tokenize)
    scores["sentences"] = len(hypotheses)
    return scores, hypotheses

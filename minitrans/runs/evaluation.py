"""Validation loss and translation quality of a model on a tokenised split, by one process or
shared by several (:mod:`minitrans.core.sharing`)."""

from __future__ import annotations

from collections.abc import Sequence

import datasets
import torch

from minitrans.core.config import TrainConfig
from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.metrics import bleu_by_length, corpus_scores
from minitrans.core.sharing import ALONE, Share
from minitrans.core.utils import eval_mode
from minitrans.data.batching import TokenBatchSampler, collate
from minitrans.inference.base import BaseTranslator
from minitrans.inference.decoding import best_ids
from minitrans.inference.translator import Translator
from minitrans.models.interface import Seq2SeqModel
from minitrans.models.loss import token_loss


@torch.no_grad()
def bleu_settings(config: TrainConfig | None) -> tuple[str | None, str | None]:
    """The target language (``data.tgt_lang``) and named tokenizer (``trainer.bleu_tokenize``)
    of a run's configuration (a translator's ``run_config``); (None, None) when unknown."""
    if config is None:
        return None, None
    return config.data.tgt_lang, config.trainer.bleu_tokenize


def keeps_cjk_spaces(config: TrainConfig | None) -> bool:
    """``trainer.bleu_keep_spaces`` of a run's configuration (False when unknown): score a
    pre-segmented Japanese or Chinese target with its spaces."""
    return config is not None and config.trainer.bleu_keep_spaces


def scores_as_written(config: TrainConfig | None) -> bool:
    """``trainer.bleu_as_written`` of a run's configuration (False when unknown): score the
    references as written rather than both sides as the model writes text."""
    return config is not None and config.trainer.bleu_as_written


def validation_losses(
    model: Seq2SeqModel,
    split: datasets.Dataset,
    batch_tokens: int,
    device: torch.device,
    label_smoothing: float = 0.0,
    share: Share = ALONE,
) -> dict[str, float]:
    """Mean per-token losses under teacher forcing, from one pass: ``cross_entropy`` (no label
    smoothing) and ``label_smoothed`` (the training loss, with ``label_smoothing``), so a
    validation curve can be set beside the training curve it matches. Shared, each rank takes
    every ``size``-th batch and the sums are added in batch order: the same floats as alone."""
    src_ids, tgt_ids = split["src_ids"], split["tgt_ids"]
    sampler = TokenBatchSampler(list(map(len, src_ids)), list(map(len, tgt_ids)), batch_tokens, shuffle=False)
    batches = list(sampler.batches())
    sums = {}
    with eval_mode(model), torch.no_grad():  # a loss to read, not to learn from: no autograd graph
        for number in share.mine(range(len(batches))):
            indices = batches[number]
            batch = collate([src_ids[i] for i in indices], [tgt_ids[i] for i in indices]).to(device)
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            smoothed = float(token_loss(logits, batch.tgt_out, label_smoothing)) if label_smoothing else 0.0
            sums[number] = (float(token_loss(logits, batch.tgt_out)), smoothed, batch.num_tgt_tokens)
    sums = share.merge(sums)
    plain, smoothed, tokens = 0.0, 0.0, 0
    for number in range(len(batches)):
        plain += sums[number][0]
        smoothed += sums[number][1]
        tokens += sums[number][2]
    tokens = max(tokens, 1)
    return {"cross_entropy": plain / tokens, "label_smoothed": (smoothed if label_smoothing else plain) / tokens}


def validation_loss(model: Seq2SeqModel, split: datasets.Dataset, batch_tokens: int, device: torch.device) -> float:
    """Mean per-token cross-entropy (no label smoothing) under teacher forcing."""
    return validation_losses(model, split, batch_tokens, device)["cross_entropy"]


# Whole batches are dealt out when each rank gets at least this many (one batch of difference
# between the ranks is then a small part of the work); with fewer, each batch is split by rows.
WHOLE_BATCHES_PER_RANK = 2


def shared_batch_parts(batches: Sequence[list[int]], width: Sequence[int], share: Share) -> list[tuple[list[int], int]]:
    """This rank's part of one process's decoding ``batches`` (each with its padded ``width``),
    as (rows, width) pairs. With enough batches (the final test's), whole ones: each, costliest
    first (rows x width), to the rank with the least so far, rank 0 (which also logs) last on a
    tie; else every ``size``-th row of each batch at that batch's width (validation's one or
    two). Either way a sentence meets the padding it meets in one process."""
    if len(batches) < WHOLE_BATCHES_PER_RANK * share.size:
        return [
            (rows, width[n]) for n, all_rows in enumerate(batches) if (rows := share.mine(all_rows, main_last=True))
        ]
    load, mine = [0] * share.size, []
    for n in sorted(range(len(batches)), key=lambda n: -len(batches[n]) * width[n]):  # stable: ties in order
        rank = min(reversed(range(share.size)), key=load.__getitem__)
        load[rank] += len(batches[n]) * width[n]
        if rank == share.rank:
            mine.append(n)
    return [(batches[n], width[n]) for n in sorted(mine)]


def translate_in_batches_shared(
    translator: BaseTranslator, src_ids: Sequence[Sequence[int]], options: DecodingOptions, share: Share = ALONE
) -> list[list[int]]:
    """:meth:`Translator.translate_encoded` shared by the ranks without changing how any sentence
    is decoded: rank 0 fits the sources (so a cut sentence is warned about once, numbered as in
    the split) and sends them to all; every rank forms the batches one process forms and decodes
    its part of them (:func:`shared_batch_parts`); every rank gets every translation, in order.
    Decoding draws no random numbers, so the training stream is untouched on every rank."""
    if share.size == 1 or not isinstance(translator, Translator):
        return translator.translate_encoded(src_ids, options)
    fitted = share.all_gather(translator.fit_sources(src_ids) if share.is_main else None)[0]
    batches = translator.decoding_batches(fitted, options)
    widths = [max(len(fitted[i]) for i in rows) for rows in batches]
    found = {}
    for rows, width in shared_batch_parts(batches, widths, share):
        found |= dict(zip(rows, best_ids(translator.search_batch([fitted[i] for i in rows], options, width=width))))
    found = share.merge(found)
    return [found.get(i, []) for i in range(len(src_ids))]


def unseen_scores(
    hypotheses: Sequence[str],
    references: Sequence[str],
    seen: Sequence[bool],
    tgt_lang: str | None = None,
    tokenize: str | None = None,
    keep_spaces: bool = False,
    as_written: bool = False,
) -> dict:
    """``seen_in_train`` (how many sources the model saw in training, with some translation)
    and ``unseen``: BLEU and chrF on the other sentences, which measure translation rather than
    recall; empty when no source was seen."""
    if not any(seen):
        return {}
    kept = [(h, r) for h, r, was_seen in zip(hypotheses, references, seen) if not was_seen]
    out: dict = {"seen_in_train": sum(map(bool, seen))}
    if kept:
        scores = corpus_scores([h for h, _ in kept], [r for _, r in kept], tgt_lang, tokenize, keep_spaces, as_written)
        out["unseen"] = {"sentences": len(kept), "bleu": scores["bleu"], "chrf": scores["chrf"]}
    return out


def evaluate_split(
    translator: Translator,
    split: datasets.Dataset,
    options: DecodingOptions,
    limit: int | None = None,
    with_buckets: bool = False,
    share: Share = ALONE,
) -> tuple[dict, list[str]]:
    """Translate (the first ``limit`` sentences of) a split and score it with sacrebleu, BLEU
    tokenised for the run's target language (``data.tgt_lang``) unless ``trainer.bleu_tokenize``
    names a tokenizer, both sides as the model writes text unless ``trainer.bleu_as_written``.
    Shared, the ranks decode their parts (:func:`translate_in_batches_shared`); every rank gets
    the hypotheses, rank 0 the scores (the others an empty dict)."""
    rows = split if limit is None else split.select(range(min(limit, len(split))))
    hyp_ids = translate_in_batches_shared(translator, rows["src_ids"], options, share)
    hypotheses = [translator.tokenizer.decode_tgt(ids) for ids in hyp_ids]
    if not share.is_main:
        return {}, hypotheses
    (tgt_lang, tokenize), keep = bleu_settings(translator.run_config), keeps_cjk_spaces(translator.run_config)
    written = scores_as_written(translator.run_config)
    scores = corpus_scores(hypotheses, rows["tgt"], tgt_lang, tokenize, keep, written)
    if "seen_in_train" in rows.column_names:
        scores |= unseen_scores(hypotheses, rows["tgt"], rows["seen_in_train"], tgt_lang, tokenize, keep, written)
    if with_buckets:
        scores["by_length"] = bleu_by_length(
            rows["src"],
            hypotheses,
            rows["tgt"],
            tgt_lang=tgt_lang,
            tokenize=tokenize,
            keep_spaces=keep,
            as_written=written,
        )
    scores["sentences"] = len(hypotheses)
    return scores, hypotheses

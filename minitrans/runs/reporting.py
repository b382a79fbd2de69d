"""What a training run reports: validation during training (logged to TensorBoard as it goes)
and the final test evaluation with the hypotheses of every test split. The run's record,
``summary.json``, is :class:`minitrans.runs.summary.RunSummary`."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import datasets
from torch.utils.tensorboard import SummaryWriter

from minitrans.analysis.alignment import VALIDATION_SAMPLE, gold_for_pairs, split_alignment
from minitrans.core.config import DataConfig, TrainerConfig
from minitrans.core.sharing import ALONE, Share
from minitrans.core.utils import write_atomic
from minitrans.inference.translator import Translator
from minitrans.runs.evaluation import evaluate_split, validation_losses
from minitrans.runs.tb_gold import log_gold_overlays
from minitrans.runs.tblog import log_alignment, log_validation_samples


@contextlib.contextmanager
def cuts_told_at_the_start():
    """Without the translator's ``sentence N has ...`` warnings: a run says once, before it
    trains, which evaluated sources its positions cut (:func:`minitrans.training.run_data.cut_lines`),
    where the warnings would come at every validation in Python's format, numbered in the sample."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"sentence \d+ has")
        yield


@cuts_told_at_the_start()
def validate(
    translator: Translator,
    valid: datasets.Dataset,
    tcfg: TrainerConfig,
    writer: SummaryWriter | None,
    step: int,
    data: DataConfig | None = None,
    share: Share = ALONE,
    draw: bool | None = None,
) -> dict:
    """Validation loss, BLEU and chrF; sample translations and attention maps to TensorBoard,
    and, for a corpus with gold alignments (``data``), the AER of every cross-attention head and
    the best head's map of each sample sentence with its gold links outlined. Only reads the
    weights: training goes on exactly as without it.

    Shared by the training processes (``share``), every rank calls it with the same ``draw``
    (whether the TensorBoard part runs; default: when there is a ``writer``), only rank 0 has
    the ``writer``, and rank 0 gets the metrics (the others an empty dict)."""
    draw = writer is not None if draw is None else draw
    limit = translator.max_len  # the loss needs pairs the model has positions for
    fits = valid.filter(lambda row: len(row["src_ids"]) <= limit and len(row["tgt_ids"]) < limit, keep_in_memory=True)
    longest = max((len(s) + len(t) + 1 for s, t in zip(fits["src_ids"], fits["tgt_ids"])), default=1)
    losses = validation_losses(
        translator.model, fits, max(tcfg.batch_tokens, longest), translator.device, tcfg.label_smoothing, share
    )
    scores, hyps = evaluate_split(translator, valid, tcfg.valid_decoding(), limit=tcfg.eval_sentences, share=share)
    metrics = {}
    if share.is_main:
        metrics = {
            "loss": losses["cross_entropy"],
            "bleu": scores["bleu"],
            "chrf": scores["chrf"],
            "bleu_tokenize": scores["bleu_tokenize"],  # how BLEU was tokenised (the target language's choice)
            "bleu_signature": scores["bleu_signature"],
            "chrf_signature": scores["chrf_signature"],
            # BLEU and chrF are of the first trainer.eval_sentences of the split, the loss of all of it
            "sentences": scores["sentences"],
            "of": len(valid),
        }
    if writer is not None:  # "loss" in the summary is the plain cross-entropy: say so in the tag
        writer.add_scalar("valid/cross_entropy", losses["cross_entropy"], step)
        writer.add_scalar("valid/loss_label_smoothed", losses["label_smoothed"], step)
        writer.add_scalar("valid/bleu", scores["bleu"], step)
        writer.add_scalar("valid/chrf", scores["chrf"], step)
    if draw:
        count = min(tcfg.sample_sentences, len(hyps))
        log_validation_samples(writer, translator, valid.select(range(count)), hyps[:count], step, share)
        if data is not None:
            model, tokenizer, device = translator.model, translator.tokenizer, translator.device
            report = split_alignment(
                model, tokenizer, valid, data, translator.max_len, device, VALIDATION_SAMPLE, share
            )  # every rank gets the whole report
            if report is not None and report.sentences:
                if writer is not None:
                    log_alignment(writer, report, step)
                samples = valid.select(range(count))
                gold = gold_for_pairs(data, samples["src"], samples["tgt"]) or []
                log_gold_overlays(writer, translator, samples, gold, report, step, share)
    return metrics


def final_alignment(translator: Translator, split: datasets.Dataset, data: DataConfig, share: Share = ALONE) -> dict:
    """The ``aer_*`` entries of the summary: every cross-attention head's AER on a test split
    (empty for a corpus without gold alignments or a model without cross-attention)."""
    report = split_alignment(
        translator.model, translator.tokenizer, split, data, translator.max_len, translator.device, share=share
    )
    return report.summary() if report is not None and report.sentences else {}


@cuts_told_at_the_start()
def evaluate_tests(
    translator: Translator,
    splits: dict[str, datasets.Dataset],
    tcfg: TrainerConfig,
    out_dir: Path,
    share: Share = ALONE,
) -> dict[str, dict]:
    """Score every test split (with BLEU by source length) and keep its hypotheses under
    ``out_dir/translations``. Shared, every rank translates its part and rank 0 scores and
    writes (the others get an empty dict)."""
    results = {}
    for name, split in splits.items():
        scores, hyps = evaluate_split(translator, split, tcfg.test_decoding(), with_buckets=True, share=share)
        if not share.is_main:
            continue
        out = Path(out_dir) / "translations"
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / f"{name}.hyp.txt", "".join(h + "\n" for h in hyps))
        results[name] = scores  # TensorBoard gets them once, as HPARAMS metrics (tblog.log_hparams)
    return results

"""What a training run reads: corpus, tokenizer, tokenised splits and token-count batches.

The training split's ids are held compactly (:class:`~minitrans.data.token_ids.TokenIds`,
memory-mapped from the cache), so a corpus of millions of pairs fits in a few hundred MB.
Problems with the data (a missing folder, an empty split, a vocabulary SentencePiece cannot
build, no pair short enough) become a :class:`~minitrans.core.checks.ConfigError` naming the key
to change, so the training script reports them in one line.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

import datasets
import numpy as np

from minitrans.core.checks import ConfigError, first_line
from minitrans.core.config import DataConfig, TrainConfig
from minitrans.core.metrics import PRESEGMENTED, SEGMENTING, bleu_tokenizer, cjk_space_share
from minitrans.core.utils import write_atomic
from minitrans.data.batching import TokenBatchSampler
from minitrans.data.corpus import PreparedCorpus, describe, overlap_warnings, prepare_corpus, seen_in_training
from minitrans.data.subword_sampling import SubwordSampling
from minitrans.data.token_ids import TokenIds
from minitrans.data.tokenize import tokenize_corpus, tokenize_pairs
from minitrans.data.tokenizer import Tokenizer, model_text, model_texts
from minitrans.inference.coverage import RECORD_VERSION, TrainingRecord

log = logging.getLogger(__name__)
SEEN_COLUMN = "seen_in_train"  # a test split's column: its source sentence is a training source too


@dataclass
class TrainingData:
    tokenizer: Tokenizer
    splits: datasets.DatasetDict  # the validation and test splits, with src_ids / tgt_ids columns
    src_ids: TokenIds  # the training pairs that fit the model
    tgt_ids: TokenIds
    sampler: TokenBatchSampler  # global batches: the same for any number of processes
    record: TrainingRecord  # what the model will know: language pair, corpus, source word forms
    report: dict  # where the data came from, what was cleaned, held out and left out (summary.json)
    subword_sampling: SubwordSampling | None = None  # each epoch's ids drawn anew (trainer.subword_sampling)


def train_tokenizer(cfg: DataConfig, corpus: PreparedCorpus) -> Tokenizer:
    """SentencePiece on the training split, or on a seeded sample of ``data.spm_sample`` pairs."""
    train = corpus.splits[cfg.train_split]
    if len(train) > cfg.spm_sample:
        rows = np.sort(np.random.default_rng(cfg.corpus_seed).choice(len(train), cfg.spm_sample, replace=False))
        train = train.select(rows)
        log.info(
            "SentencePiece trains on %s of %s training pairs (data.spm_sample)",
            f"{len(rows):,}",
            f"{len(corpus.splits[cfg.train_split]):,}",
        )
    try:
        return Tokenizer.train(
            train["src"], train["tgt"], cfg.vocab_size, cfg.spm_model_type, cfg.joint_vocab, cfg.cache_dir
        )
    except RuntimeError as error:  # SentencePiece refuses some sizes for some corpora
        if "vocab" not in str(error).lower():
            raise
        raise ConfigError(f"data.vocab_size: {first_line(error).split('] ')[-1]}") from None


def training_record(cfg: DataConfig, corpus: PreparedCorpus) -> TrainingRecord:
    """The source word forms and characters of the training split, as the model reads them (a
    decomposed "ä" is the "ä" it learnt), for the translator's unseen-word warnings; counted once
    per prepared corpus and cached beside it: a million sentences take seconds."""
    name = f"{corpus.key}-{cfg.src_lang}-v{RECORD_VERSION}.json"  # a record of an older version is counted again
    path = Path(cfg.cache_dir).expanduser() / "records" / name
    digests = corpus.report["digests"]  # the pairs themselves: what evaluation and resuming check against
    try:
        return replace(TrainingRecord(**json.loads(path.read_text(encoding="utf-8"))), data_digests=digests)
    except (OSError, ValueError, TypeError):
        pass  # not there yet, or damaged: count again
    column = corpus.splits[cfg.train_split].data.table.column("src")
    sources = (
        text for start in range(0, len(column), 50000) for text in model_texts(column.slice(start, 50000)).to_pylist()
    )
    record = replace(TrainingRecord.from_sentences(sources, cfg.src_lang, cfg.tgt_lang, cfg.name), data_digests=digests)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(record.__dict__))
    except OSError:
        pass  # a read-only cache only costs the counting next time
    return record


def validation_sample(
    valid: datasets.Dataset, count: int, seed: int, is_random_order: bool
) -> tuple[datasets.Dataset, dict]:
    """The validation split in a random order, so that the first ``count`` pairs (the validation
    BLEU subset and the samples shown) are a fair sample, not the first of a file perhaps sorted
    by length; a split already in a random order (held out, or drawn) stays as it is. Returns
    the split and a description of the sample (the pairs, how drawn, mean source lengths)."""
    if not is_random_order:
        valid = valid.select(np.random.default_rng(seed).permutation(len(valid)))
    lengths = np.fromiter(map(len, valid["src_ids"]), dtype=np.int64, count=len(valid))
    pairs = min(count, len(valid))
    return valid, {
        "pairs": pairs,
        "of": len(valid),
        "drawn": "in the split's random order" if is_random_order else f"a seeded random sample (seed {seed})",
        "mean_src_subwords": round(float(lengths[:pairs].mean()), 2) if pairs else 0.0,
        "split_mean_src_subwords": round(float(lengths.mean()), 2) if len(valid) else 0.0,
    }


def segmentation_note(cfg: TrainConfig, corpus: PreparedCorpus, sample: int = 5000) -> tuple[float, str] | None:
    """For a Japanese or Chinese target that comes segmented into words with spaces: the share
    of its CJK gaps that are spaces, and the line that says how BLEU will treat them."""
    tokenize = bleu_tokenizer(cfg.data.tgt_lang, cfg.trainer.bleu_tokenize)
    if tokenize not in SEGMENTING:
        return None
    train = corpus.splits[cfg.data.train_split]
    share = cjk_space_share(train.select(range(min(sample, len(train))))["tgt"])
    if share < PRESEGMENTED:
        return None
    treated = (
        "kept, as trainer.bleu_keep_spaces asks: BLEU measures the corpus's own segmentation"
        if cfg.trainer.bleu_keep_spaces
        else f"removed before {tokenize} tokenises (trainer.bleu_keep_spaces=true keeps them)"
    )
    return round(share, 3), (
        f"data: the target side is pre-segmented ({share:.0%} of the gaps between CJK characters are spaces); "
        f"in BLEU and chrF those spaces are {treated}"
    )


def rewritten_note(cfg: TrainConfig, corpus: PreparedCorpus, shown: int = 6) -> tuple[dict, str] | None:
    """When the references (the validation and test targets) hold characters the model's
    normalisation rewrites (:func:`~minitrans.data.tokenizer.model_text`: U+037E becomes ``;``, a
    decomposed ``ä`` is composed, a no-break space a space), so that the model can never write
    them: how many lines, which characters, and the line that says how BLEU treats them."""
    names = [cfg.data.valid_split, *cfg.data.test_splits]
    lines, rewritten, characters = 0, 0, set()
    for name in dict.fromkeys(names):
        for text in corpus.splits[name]["tgt"]:
            lines += 1
            if (written := model_text(text)) != text:
                rewritten += 1
                characters |= set(text) - set(written)
    if not rewritten:
        return None
    found = sorted(characters)
    named = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in found[:shown])
    named += f" and {len(found) - shown:,} more" if len(found) > shown else ""
    treated = (
        "scored as written, as trainer.bleu_as_written asks: the model cannot write them"
        if cfg.trainer.bleu_as_written
        else "BLEU and chrF score both sides as the model writes them (norm:nfc; "
        "trainer.bleu_as_written=true scores them as written)"
    )
    report = {"lines": rewritten, "of": lines, "characters": [f"U+{ord(c):04X}" for c in found]}
    return report, (
        f"data: {rewritten:,} of {lines:,} reference lines ({', '.join(dict.fromkeys(names))}) hold characters "
        f"the model's normalisation rewrites ({named or 'spacing'}); {treated}"
    )


def check_same_data(recorded: dict | None, corpus: PreparedCorpus) -> None:
    """Refuse (ConfigError) to resume on pairs other than those the checkpoint's training-data
    record (``recorded``, its state) names: the files were replaced or edited since."""
    then = (recorded or {}).get("data_digests") or {}
    changed = [name for name, digest in corpus.report["digests"].items() if then.get(name, digest) != digest]
    if changed:
        pairs = corpus.report["splits"]
        raise ConfigError(
            f"data: the corpus changed since the checkpoint was written (split {', '.join(changed)}: "
            f"other pairs; {pairs[changed[0]]['pairs']:,} now); resuming would go on training on other data "
            "with the old tokenizer. Restore the files, use a new run folder, or set trainer.resume=false"
        )


def left_out_line(cfg: TrainConfig, left_out: int, total: int, max_tokens: int) -> tuple[int, str]:
    """(log level, line) for the training pairs too long for ``max_tokens``, naming the key that
    set the limit; a warning when most of the corpus is gone, since the run still trains."""
    key = "model.max_len" if cfg.model.max_len - 1 < cfg.data.max_tokens else "data.max_tokens"
    line = f"{left_out:,} training pairs longer than {max_tokens} subwords left out ({key})"
    if 2 * left_out <= total:
        return logging.INFO, line
    return logging.WARNING, f"{line}: the model trains on {total - left_out:,} of {total:,} pairs; raise {key}"


def cut_lines(splits: dict[str, datasets.Dataset], rows: dict[str, int | None], max_len: int) -> list[str]:
    """One line for each split whose translated sources (the first ``rows[name]``, or all) the
    model's positions cannot hold: the same sentences are cut at every validation."""
    lines = []
    for name, limit in rows.items():
        lengths = [len(ids) for ids in splits[name]["src_ids"][:limit]]
        if longer := [n for n in lengths if n > max_len]:
            lines.append(
                f"{name}: {len(longer):,} of the {len(lengths):,} sources translated have more than "
                f"model.max_len={max_len} subwords (up to {max(longer):,}); each is translated from its first {max_len - 1}"
            )
    return lines


def prepare_training_data(
    cfg: TrainConfig, tokenizer_state: dict | None = None, recorded: dict | None = None
) -> TrainingData:
    """Load and tokenise the configured corpus; ``tokenizer_state`` (from a checkpoint) is used
    as is, else a tokenizer is trained on the training split (or found in the cache).
    ``recorded`` (a resumed checkpoint's training-data record) must name the same pairs."""
    dcfg = cfg.data
    corpus = prepare_corpus(dcfg)
    for line in describe(corpus.report):
        log.info(line)
    for line in overlap_warnings(corpus.report):
        log.warning(line)
    if (note := segmentation_note(cfg, corpus)) is not None:
        corpus.report["target_presegmented"], line = note
        log.warning(line)
    if (note := rewritten_note(cfg, corpus)) is not None:
        corpus.report["references_rewritten"], line = note
        log.warning(line)
    check_same_data(recorded, corpus)
    for name in [dcfg.valid_split, *dcfg.test_splits]:
        if len(corpus.splits[name]) == 0:
            raise ConfigError(f"data: split {name!r} of corpus {dcfg.name!r} is empty")
    tokenizer = Tokenizer.from_state(tokenizer_state) if tokenizer_state is not None else train_tokenizer(dcfg, corpus)
    evaluated = datasets.DatasetDict({n: s for n, s in corpus.splits.items() if n != dcfg.train_split})
    splits = tokenize_corpus(evaluated, tokenizer, dcfg.cache_dir)
    for name in dcfg.test_splits:  # which test sources the model saw in training: BLEU on the rest too
        if corpus.report["splits"][name].get("sources_in_train"):
            seen = seen_in_training(corpus.splits[dcfg.train_split], corpus.splits[name])
            splits[name] = splits[name].add_column(SEEN_COLUMN, seen.tolist())
    splits[dcfg.valid_split], sample = validation_sample(
        splits[dcfg.valid_split],
        cfg.trainer.eval_sentences,
        dcfg.corpus_seed,
        dcfg.valid_split in corpus.report.get("in_random_order", []),
    )
    log.info(
        "validation BLEU on %s of %s pairs, %s: mean source length %.1f subwords (the split's: %.1f)",
        f"{sample['pairs']:,}",
        f"{sample['of']:,}",
        sample["drawn"],
        sample["mean_src_subwords"],
        sample["split_mean_src_subwords"],
    )
    evaluated_rows = {dcfg.valid_split: cfg.trainer.eval_sentences} | {name: None for name in dcfg.test_splits}
    for line in cut_lines(splits, evaluated_rows, cfg.model.max_len):
        log.warning(line)
    src_ids, tgt_ids = tokenize_pairs(corpus.splits[dcfg.train_split], tokenizer, dcfg.cache_dir, corpus.key)
    max_tokens = min(dcfg.max_tokens, cfg.model.max_len - 1)
    fits = (src_ids.lengths <= max_tokens) & (tgt_ids.lengths < max_tokens)
    report = corpus.report | {"max_tokens": max_tokens, "too_many_subwords": int((~fits).sum())}
    report["validation_sample"] = sample
    if not fits.any():
        raise ConfigError(f"data.max_tokens: no training pair fits in {max_tokens} subwords")
    if not fits.all():
        log.log(*left_out_line(cfg, int((~fits).sum()), len(fits), max_tokens))
        src_ids, tgt_ids = src_ids.select(fits), tgt_ids.select(fits)
    try:
        sampler = TokenBatchSampler(src_ids.lengths, tgt_ids.lengths, cfg.trainer.batch_tokens, seed=cfg.seed)
    except ValueError as error:
        raise ConfigError(f"trainer.batch_tokens: {error}") from None
    record = training_record(dcfg, corpus)
    sampling = None
    if cfg.trainer.subword_sampling is not None:
        sampling = SubwordSampling(
            tokenizer, src_ids, tgt_ids, cfg.trainer.subword_sampling, cfg.seed, max_tokens, cfg.trainer.batch_tokens
        )
        drawn = sampling.epoch(0)
        log.info(
            "subword sampling: each epoch splits the pieces anew, each with chance %s (trainer.subword_sampling): "
            "%.1f pieces a pair instead of %.1f in epoch 0",
            cfg.trainer.subword_sampling,
            float(np.mean(drawn[0].lengths + drawn[1].lengths)),
            float(np.mean(src_ids.lengths + tgt_ids.lengths)),
        )
    return TrainingData(tokenizer, splits, src_ids, tgt_ids, sampler, record, report, sampling)

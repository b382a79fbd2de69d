"""What a training run reads: corpus, tokenizer, tokenised splits and token-count batches.

Problems with the data (a missing Multi30k folder, an empty split, a vocabulary SentencePiece
cannot build, no pair short enough) become a :class:`~minitrans.config.ConfigError` naming the
key to change, so the training script reports them in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

import datasets

from minitrans.config import ConfigError, TrainConfig, first_line
from minitrans.coverage import TrainingRecord
from minitrans.data import TokenBatchSampler, load_corpus, tokenize_corpus
from minitrans.tokenizer import Tokenizer


@dataclass
class TrainingData:
    tokenizer: Tokenizer
    splits: datasets.DatasetDict  # every split, with src_ids / tgt_ids columns
    src_ids: list[list[int]]  # the training pairs that fit the model
    tgt_ids: list[list[int]]
    sampler: TokenBatchSampler  # global batches: the same for any number of processes
    record: TrainingRecord  # what the model will know: language pair, corpus, source word forms


def prepare_training_data(cfg: TrainConfig, tokenizer_state: dict | None = None) -> TrainingData:
    """Load and tokenise the configured corpus; ``tokenizer_state`` (from a checkpoint) is used
    as is, else a tokenizer is trained on the training split (or found in the cache)."""
    try:
        corpus = load_corpus(cfg.data)
    except (FileNotFoundError, ValueError) as error:
        key = "data.root" if isinstance(error, FileNotFoundError) else "data"
        raise ConfigError(f"{key}: {first_line(error)}") from None
    if tokenizer_state is not None:
        tokenizer = Tokenizer.from_state(tokenizer_state)
    else:
        train_split = corpus[cfg.data.train_split]
        try:
            tokenizer = Tokenizer.train(
                train_split["src"],
                train_split["tgt"],
                cfg.data.vocab_size,
                cfg.data.spm_model_type,
                cfg.data.joint_vocab,
                cfg.data.cache_dir,
            )
        except RuntimeError as error:  # SentencePiece refuses some sizes for some corpora
            if "vocab" not in str(error).lower():
                raise
            raise ConfigError(f"data.vocab_size: {first_line(error).split('] ')[-1]}") from None
    splits = tokenize_corpus(corpus, tokenizer, cfg.data.cache_dir)
    max_tokens = min(cfg.data.max_tokens, cfg.model.max_len - 1)
    train_set = splits[cfg.data.train_split].filter(
        lambda row: len(row["src_ids"]) <= max_tokens and len(row["tgt_ids"]) < max_tokens,
        keep_in_memory=True,  # an index list: no cache file to go stale or be damaged
    )
    if len(train_set) == 0:
        raise ConfigError(f"data.max_tokens: no training pair fits in {max_tokens} subwords")
    # plain lists: the loop reads them per sentence, and each lookup in a datasets Column costs
    # ~60 µs (three per sentence per step, ~8% of a default training step)
    src_ids, tgt_ids = train_set["src_ids"][:], train_set["tgt_ids"][:]
    try:
        sampler = TokenBatchSampler(
            [len(ids) for ids in src_ids], [len(ids) for ids in tgt_ids], cfg.trainer.batch_tokens, seed=cfg.seed
        )
    except ValueError as error:
        raise ConfigError(f"trainer.batch_tokens: {error}") from None
    sources = corpus[cfg.data.train_split]["src"][:]
    record = TrainingRecord.from_sentences(sources, cfg.data.src_lang, cfg.data.tgt_lang, cfg.data.name)
    return TrainingData(tokenizer, splits, src_ids, tgt_ids, sampler, record)

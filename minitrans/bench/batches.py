"""The training benchmark's batches: Multi30k's training split (or random tokens with its
lengths), cut by the trainer's own :class:`~minitrans.data.batching.TokenBatchSampler`, and the
padding figures of a whole epoch."""

from __future__ import annotations

import numpy as np

from minitrans.data.batching import TokenBatchSampler, collate, padding_fraction
from minitrans.data.tokenizer import Tokenizer


def multi30k_ids(vocab_size: int, cache_dir: str | None) -> tuple[list, list, str, int]:
    from minitrans.data.multi30k import load_multi30k

    train = load_multi30k(splits="train")["train"]
    tokenizer = Tokenizer.train(train["src"], train["tgt"], vocab_size, cache_dir=cache_dir)
    src, tgt = tokenizer.encode_src(train["src"]), tokenizer.encode_tgt(train["tgt"])
    description = f"Multi30k train de→en ({len(src)} pairs), SentencePiece unigram, joint vocabulary"
    return src, tgt, description, tokenizer.src_vocab_size


def synthetic_ids(vocab_size: int, num_pairs: int = 29000, seed: int = 0) -> tuple[list, list, str, int]:
    """Random tokens with Multi30k-like lengths (source ≈ 16 ± 6 subwords, target ≈ 0.9×)."""
    rng = np.random.default_rng(seed)
    src_len = np.clip(rng.normal(16, 6, num_pairs).round(), 3, 60).astype(int)
    tgt_len = np.clip((src_len * rng.normal(0.9, 0.15, num_pairs)).round(), 2, 60).astype(int)
    src = [rng.integers(4, vocab_size, n).tolist() for n in src_len]
    tgt = [rng.integers(4, vocab_size, n).tolist() for n in tgt_len]
    return src, tgt, f"synthetic random tokens ({num_pairs} pairs, Multi30k-like lengths)", vocab_size


def one_side_padding(batches: list[list[int]], lengths) -> float:
    """Share of padded positions on one side (source or target) of these batches."""
    lengths = np.asarray(lengths)
    real = sum(int(lengths[b].sum()) for b in batches)
    return 1.0 - real / max(sum(len(b) * int(lengths[b].max()) for b in batches), 1)


def load_batches(data: str, vocab_size: int, batch_tokens: int, count: int, cache_dir: str | None, seed: int = 0):
    """``count`` batches of one shuffled epoch, and the figures of that whole epoch."""
    if data == "auto":
        from minitrans.data.multi30k import DEFAULT_ROOT

        data = (
            "multi30k"
            if (DEFAULT_ROOT / "train.de.gz").exists() or (DEFAULT_ROOT / "train.de").exists()
            else "synthetic"
        )
    if data == "multi30k":
        src, tgt, description, vocab_size = multi30k_ids(vocab_size, cache_dir)
    else:
        src, tgt, description, vocab_size = synthetic_ids(vocab_size, seed=seed)
    src_lengths, tgt_lengths = [len(s) for s in src], [len(t) for t in tgt]
    epoch = TokenBatchSampler(src_lengths, tgt_lengths, batch_tokens, seed=seed).batches(0)
    chosen = epoch[:count]
    batches = [collate([src[i] for i in b], [tgt[i] for i in b]) for b in chosen]
    info = {
        "source": data,
        "description": description,
        "vocab_size": vocab_size,
        "batch_tokens": batch_tokens,
        "batches_per_epoch": len(epoch),
        "padding_fraction": padding_fraction(epoch, src_lengths, tgt_lengths),
        "source_padding_fraction": one_side_padding(epoch, src_lengths),
        "target_padding_fraction": one_side_padding(epoch, np.asarray(tgt_lengths) + 1),  # + BOS / EOS
        "mean_sentences_per_batch": float(np.mean([len(b) for b in epoch])),
        "mean_target_tokens_per_batch": float(np.mean([sum(tgt_lengths[i] + 1 for i in b) for b in epoch])),
    }
    return batches, info


__all__ = ["load_batches", "multi30k_ids", "one_side_padding", "synthetic_ids"]

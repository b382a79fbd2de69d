"""Token-count batching: budgets, coverage, determinism, low padding."""

import random

import pytest

from minitrans.data.batching import TokenBatchSampler, collate, padding_fraction
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID


def lengths(n=2000, seed=0):
    rng = random.Random(seed)
    src = [rng.randint(3, 60) for _ in range(n)]
    return src, [max(1, s + rng.randint(-4, 6)) for s in src]


def test_batches_cover_every_example_once_within_budget():
    src, tgt = lengths()
    sampler = TokenBatchSampler(src, tgt, batch_tokens=1024, seed=1)
    batches = sampler.batches(epoch=0)
    flat = sorted(i for batch in batches for i in batch)
    assert flat == list(range(len(src)))
    for batch in batches:
        assert len(batch) * (max(src[i] for i in batch) + max(tgt[i] + 1 for i in batch)) <= 1024


def test_deterministic_per_epoch_and_shuffled_across_epochs():
    src, tgt = lengths()
    a, b = TokenBatchSampler(src, tgt, 1024, seed=1), TokenBatchSampler(src, tgt, 1024, seed=1)
    assert a.batches(3) == b.batches(3)
    assert a.batches(3) != a.batches(4)
    assert TokenBatchSampler(src, tgt, 1024, seed=2).batches(3) != a.batches(3)


def test_padding_stays_small():
    src, tgt = lengths(5000)
    sampler = TokenBatchSampler(src, tgt, 4096, seed=0)
    assert padding_fraction(sampler.batches(0), src, tgt) < 0.10
    # a random grouping of the same sizes pads far more
    rng = random.Random(0)
    order = list(range(len(src)))
    rng.shuffle(order)
    random_batches = [order[i : i + 50] for i in range(0, len(order), 50)]
    assert padding_fraction(random_batches, src, tgt) > 0.3


def test_batches_are_cut_from_the_target_length_order():
    """Target length is the first key: batches cover disjoint target-length ranges (sharing at
    most an end point), so target padding, the dearer kind, is the smaller one."""
    src, tgt = lengths(5000)
    batches = TokenBatchSampler(src, tgt, 2048, seed=3).batches(0)
    ranges = sorted((min(tgt[i] for i in b), max(tgt[i] for i in b)) for b in batches)
    assert all(high <= next_low for (_, high), (next_low, _) in zip(ranges, ranges[1:]))
    target_padding = sum(len(b) * max(tgt[i] for i in b) - sum(tgt[i] for i in b) for b in batches)
    source_padding = sum(len(b) * max(src[i] for i in b) - sum(src[i] for i in b) for b in batches)
    assert target_padding < source_padding


def test_too_small_budget_is_refused():
    with pytest.raises(ValueError, match="batch_tokens"):
        TokenBatchSampler([50], [50], batch_tokens=64)


def test_collate_adds_bos_and_eos_and_pads():
    batch = collate([[7, 8, EOS_ID], [9, EOS_ID]], [[4, 5, 6], [4]])
    assert batch.src.tolist() == [[7, 8, EOS_ID], [9, EOS_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 4, 5, 6], [BOS_ID, 4, PAD_ID, PAD_ID]]
    assert batch.tgt_out.tolist() == [[4, 5, 6, EOS_ID], [4, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.num_tgt_tokens == 6

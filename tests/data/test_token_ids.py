"""Compact token ids: the flat-array form holds exactly what lists would, and batches built
from it are the batches built from lists."""

from __future__ import annotations

import numpy as np
import torch

from minitrans.data.batching import collate
from minitrans.data.token_ids import TokenIds
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID

LISTS = [[5, 6, 7], [8], [], [9, 10, 11, 12], [13, 14]]


def test_rows_lengths_and_selection_match_the_lists(tmp_path):
    ids = TokenIds.from_lists(LISTS)
    assert len(ids) == len(LISTS)
    assert [row.tolist() for row in ids] == LISTS
    assert ids.lengths.tolist() == [len(x) for x in LISTS]
    assert ids.flat.dtype == np.int32  # 4 bytes a token, not a Python object
    chosen = ids.select(np.array([3, 0, 4]))
    assert [row.tolist() for row in chosen] == [LISTS[3], LISTS[0], LISTS[4]]
    masked = ids.select(np.array([True, False, True, False, True]))
    assert [row.tolist() for row in masked] == [LISTS[0], LISTS[2], LISTS[4]]
    ids.save(tmp_path, "x")
    loaded = TokenIds.load(tmp_path, "x")
    assert isinstance(loaded.flat, np.memmap)
    assert [row.tolist() for row in loaded] == LISTS


def test_encoding_in_chunks_concatenates_in_order():
    chunks = [["ab", "c"], ["def"], ["gh"]]
    ids = TokenIds.encode(iter(chunks), lambda texts: [[ord(ch) for ch in text] for text in texts])
    assert [bytes(row.tolist()).decode() for row in ids] == ["ab", "c", "def", "gh"]


def test_a_batch_from_arrays_equals_the_batch_from_lists():
    src, tgt = [[4, 5, EOS_ID], [6, EOS_ID]], [[7, 8, 9], [10]]
    from_lists = collate(src, tgt)
    src_ids, tgt_ids = TokenIds.from_lists(src), TokenIds.from_lists(tgt)
    from_arrays = collate([src_ids[0], src_ids[1]], [tgt_ids[0], tgt_ids[1]])
    for name in ("src", "tgt_in", "tgt_out"):
        assert torch.equal(getattr(from_lists, name), getattr(from_arrays, name))
        assert getattr(from_arrays, name).dtype == torch.long
    assert from_lists.num_tgt_tokens == from_arrays.num_tgt_tokens == 6
    assert from_lists.tgt_in.tolist() == [[BOS_ID, 7, 8, 9], [BOS_ID, 10, PAD_ID, PAD_ID]]
    assert from_lists.tgt_out.tolist() == [[7, 8, 9, EOS_ID], [10, EOS_ID, PAD_ID, PAD_ID]]

"""Tests for the head-role scores (minitrans/analysis/head_roles.py) on hand-built attention maps."""

from __future__ import annotations

import pytest
import torch
from helpers.models import tiny_model

from minitrans.analysis.head_roles import (
    ROLE_THRESHOLDS,
    linked_share,
    measure_self_attention_roles,
    name_roles,
    next_token_share,
    previous_token_share,
)

L = 6


def shifted(offset: int) -> torch.Tensor:
    """(1, 1, L, L): each row puts all its weight on position i + offset (clamped at the edges)."""
    rows = torch.arange(L)
    maps = torch.zeros(1, 1, L, L)
    maps[0, 0, rows, (rows + offset).clamp(0, L - 1)] = 1.0
    return maps


def uniform() -> torch.Tensor:
    return torch.full((1, 1, L, L), 1.0 / L)


def test_a_pure_previous_token_map_scores_one_and_a_next_token_map_zero():
    assert previous_token_share(shifted(-1)).tolist() == [1.0]
    assert next_token_share(shifted(-1)).tolist() == [0.0]
    assert next_token_share(shifted(+1)).tolist() == [1.0]
    assert previous_token_share(shifted(0)).tolist() == [0.0]


def test_a_uniform_map_scores_one_over_its_length():
    assert previous_token_share(uniform()).item() == pytest.approx(1 / L)
    assert next_token_share(uniform()).item() == pytest.approx(1 / L)


def test_padding_rows_and_keys_do_not_count():
    """A sentence of 3 real positions in a batch padded to L: only its rows 1..2 (previous) count."""
    maps = torch.cat([shifted(-1), uniform()], dim=0)  # (2, 1, L, L)
    maps[1, :, :, 3:] = 0.0
    maps[1, :, :3, :3] = 1.0 / 3
    share = previous_token_share(maps, lengths=[L, 3])
    # L - 1 rows at weight 1 in sentence 0, 2 rows at weight 1/3 in sentence 1.
    assert share.item() == pytest.approx((L - 1 + 2 / 3) / (L - 1 + 2))


def test_heads_are_scored_separately():
    maps = torch.cat([shifted(-1), shifted(+1), uniform()], dim=1)  # (1, 3, L, L)
    assert previous_token_share(maps).tolist() == pytest.approx([1.0, 0.0, 1 / L])


def test_linked_share_on_a_verb_looking_at_its_subject():
    maps = uniform().repeat(1, 2, 1, 1)  # head 0 uniform, head 1 on position 1 from row 4
    maps[0, 1, 4] = 0.0
    maps[0, 1, 4, 1] = 1.0
    share = linked_share(maps, [(0, [4], [1])])  # verb at 4, subject noun at 1
    assert share.tolist() == pytest.approx([1 / L, 1.0])
    assert linked_share(maps, [(0, [4], [0, 1])]).tolist() == pytest.approx([2 / L, 1.0])


def test_a_role_is_named_at_its_stated_threshold():
    assert name_roles({"previous": ROLE_THRESHOLDS["previous"], "next": 0.1}) == ["previous"]
    assert name_roles({"previous": 0.2, "next": 0.2}, aer=0.1) == ["alignment"]
    assert name_roles({"previous": 0.49}, aer=0.9) == []


def test_roles_of_a_real_model_are_shares_and_batching_does_not_change_them():
    model = tiny_model(vocab=30, num_heads=4, num_encoder_layers=2)
    src_ids = [[5, 6, 7, 8, 3], [9, 10, 3], [11, 12, 13, 3]]
    tgt_ids = [[11, 12, 13], [14, 15], [16]]
    roles = measure_self_attention_roles(model, src_ids, tgt_ids)
    assert len(roles["enc_self"]) == 2 and len(roles["enc_self"][0]) == 4 and len(roles["dec_self"]) == 1
    for layers in roles.values():
        for layer in layers:
            for scores in layer:
                assert 0.0 <= scores["previous"] <= 1.0 and 0.0 <= scores["next"] <= 1.0
    # The decoder's causal self-attention cannot look ahead.
    assert all(scores["next"] == 0.0 for scores in roles["dec_self"][0])
    one_by_one = measure_self_attention_roles(model, src_ids, tgt_ids, batch_size=1)
    for kind, layers in roles.items():
        for layer, again in zip(layers, one_by_one[kind]):
            for scores, other in zip(layer, again):
                assert scores == pytest.approx(other, abs=1e-6)


def test_map_roles_names_a_head_from_its_own_map_and_a_cross_head_from_its_aer():
    from minitrans.analysis.head_roles import map_roles

    self_maps = torch.cat([shifted(-1), uniform(), shifted(+1)], dim=1)[0]  # (3, L, L)
    cross = uniform()[0].repeat(2, 1, 1)  # (2, L, L)
    roles = map_roles({"enc_self": [self_maps], "cross": [cross]}, aer_by_head=[[0.1, 0.9]])
    assert roles == {"enc_self": [["previous-token", "", "next-token"]], "cross": [["alignment", ""]]}
    assert map_roles({"cross": [cross]}) == {"cross": [["", ""]]}  # no gold: no alignment named

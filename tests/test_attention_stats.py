"""The per-layer numbers the claims are read by (minitrans/runs/attention_stats.py): row
entropy, each layer's mean, and the decoder's share of weight on later positions."""

from __future__ import annotations

import math

import pytest
import torch

from minitrans.models.attention import make_causal_mask
from minitrans.runs.attention_stats import attention_entropy, future_share, row_entropy


def test_a_uniform_row_has_log_l_nats_and_a_one_hot_row_none():
    uniform, one_hot = torch.full((1, 5), 0.2), torch.eye(5)[:1]
    assert float(row_entropy(uniform)) == pytest.approx(math.log(5))
    assert float(row_entropy(one_hot)) == 0.0  # 0 log 0 = 0, not NaN


def test_layer_entropy_averages_heads_and_rows_and_skips_rows_with_nothing_to_attend_to():
    weights = torch.stack([torch.full((3, 4), 0.25), torch.eye(4)[:3]])  # (H=2, Lq=3, Lk=4)
    weights[:, 2] = 0.0  # a row with no key
    found = attention_entropy({"cross": [weights], "enc_self": [torch.eye(3)[None]]})
    assert found == pytest.approx({"cross_layer1": math.log(4) / 2, "enc_self_layer1": 0.0})


def test_the_future_share_is_0_under_the_causal_mask_and_known_when_uniform():
    length = 4
    causal = make_causal_mask(length)[0].float()  # (1, T, T)
    assert future_share(causal / causal.sum(-1, keepdim=True)) == 0.0
    uniform = torch.full((2, length, length), 1 / length)
    assert future_share(uniform) == pytest.approx(sum((length - 1 - t) / length for t in range(length)) / length)

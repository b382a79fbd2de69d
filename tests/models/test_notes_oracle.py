"""The notes as an oracle (issue 38, items 0 and 6): their worked example and their three small
PyTorch classes, recomputed here in our own code, give what minitrans' attention gives.

The notes (../shared/notes/, in Chinese) work one self-attention example by hand and show a
single-head self-attention, a cross-attention and a multi-head self-attention class. The
classes below follow the notes' description, not their text: three biased ``Linear(d, d)``
projections and a batched product divided by √d with no output projection for the single-head
pair; q, k, v and out projections with a split into heads and √head_dim for the multi-head one.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from minitrans.models.attention import MultiHeadAttention, scaled_dot_product_attention

# --------------------------------------------------------------- item 0: the worked example
# Five tokens of width 2; W^Q = W^K = W^V = I, so Q = K = V = X.
NOTES_X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 1.0]]

# The figures the notes print, two decimals: the scaled scores A, the weights N and N·V.
NOTES_A = [
    [0.71, 0.00, 0.71, 0.71, 0.35],
    [0.00, 0.71, 0.71, 0.71, 0.71],
    [0.71, 0.71, 1.42, 1.42, 1.06],
    [0.71, 0.71, 1.42, 1.42, 1.06],
    [0.35, 0.71, 1.06, 1.06, 0.89],
]
NOTES_N = [
    [0.25, 0.15, 0.25, 0.25, 0.10],
    [0.17, 0.23, 0.23, 0.23, 0.23],
    [0.15, 0.15, 0.30, 0.30, 0.10],
    [0.15, 0.15, 0.30, 0.30, 0.10],
    [0.14, 0.23, 0.28, 0.28, 0.07],
]
NOTES_OUT = [[0.73, 0.68], [0.57, 0.87], [0.68, 0.81], [0.68, 0.81], [0.63, 0.84]]

# The exact figures, three decimals (checked against the float64 computation below).
EXACT_N = [
    [0.238, 0.118, 0.238, 0.238, 0.167],
    [0.110, 0.223, 0.223, 0.223, 0.223],
    [0.134, 0.134, 0.271, 0.271, 0.190],
    [0.134, 0.134, 0.271, 0.271, 0.190],
    [0.122, 0.174, 0.248, 0.248, 0.208],
]
EXACT_OUT = [[0.799, 0.762], [0.666, 0.890], [0.771, 0.866], [0.771, 0.866], [0.722, 0.878]]

ROUNDING = 0.005 + 1e-9  # a correctly rounded two-decimal figure is at most this far off


def exact_example() -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    """A = X Xᵀ / √2, N = row softmax of A, N·X, in plain float64 arithmetic (no torch)."""
    scores = [[sum(a * b for a, b in zip(q, k)) / math.sqrt(2) for k in NOTES_X] for q in NOTES_X]
    weights = []
    for row in scores:
        exps = [math.exp(s) for s in row]
        weights.append([e / sum(exps) for e in exps])
    out = [[sum(w * x[d] for w, x in zip(row, NOTES_X)) for d in range(2)] for row in weights]
    return scores, weights, out


def wrong_entries(printed: list[list[float]], exact: list[list[float]]) -> dict[tuple[int, int], float]:
    """(row, column) -> printed minus exact, for every printed figure that rounding cannot explain."""
    return {
        (i, j): round(p - e, 3)
        for i, (p_row, e_row) in enumerate(zip(printed, exact))
        for j, (p, e) in enumerate(zip(p_row, e_row))
        if abs(p - e) > ROUNDING
    }


def test_notes_worked_example_through_minitrans_attention():
    scores, weights, out = exact_example()
    x = torch.tensor(NOTES_X, dtype=torch.float64)[None, None]  # (1, 1, 5, 2)
    got_out, got_weights = scaled_dot_product_attention(x, x, x, need_weights=True)
    torch.testing.assert_close(got_weights[0, 0], torch.tensor(weights, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(got_out[0, 0], torch.tensor(out, dtype=torch.float64), rtol=0, atol=1e-12)
    # The figures quoted in issue 38 and on docs/claims.md are the exact ones, rounded.
    assert [[round(w, 3) for w in row] for row in weights] == EXACT_N
    assert [[round(v, 3) for v in row] for row in out] == EXACT_OUT
    assert [[round(s, 4) for s in row] for row in scores][2] == [0.7071, 0.7071, 1.4142, 1.4142, 1.0607]


def test_which_of_the_notes_printed_figures_are_wrong():
    """The notes' Q Kᵀ is right; two distinct scores of A are misrounded; every weight and every output is off."""
    scores, weights, out = exact_example()
    # A: 2/√2 = 1.414 is printed 1.42 and 1.25/√2 = 0.884 is printed 0.89 (0.006 off each).
    assert wrong_entries(NOTES_A, scores) == {(2, 2): 0.006, (2, 3): 0.006, (3, 2): 0.006, (3, 3): 0.006, (4, 4): 0.006}
    # N: all 25 weights are off by more than rounding (0.007 to 0.138). The largest errors are
    # the last token's weights, printed too small in every row but the second (0.10 for 0.167,
    # 0.10 for 0.190, 0.07 for 0.208); row 2's first weight is 0.17 for 0.110, so that row sums to 1.09.
    wrong_n = wrong_entries(NOTES_N, weights)
    assert len(wrong_n) == 25
    assert min(map(abs, wrong_n.values())) == 0.007 and max(map(abs, wrong_n.values())) == 0.138
    assert [wrong_n[(row, 4)] for row in (0, 2, 3, 4)] == [-0.067, -0.09, -0.09, -0.138]
    assert wrong_n[(1, 0)] == 0.06
    assert round(sum(NOTES_N[1]), 2) == 1.09
    # N·V: all ten figures are too small, by 0.020 to 0.096.
    wrong_out = wrong_entries(NOTES_OUT, out)
    assert len(wrong_out) == 10 and all(delta < 0 for delta in wrong_out.values())
    assert min(wrong_out.values()) == -0.096 and max(wrong_out.values()) == -0.02
    # Nor do the printed outputs follow from the printed weights: row 1 of N·X would be [0.80, 0.75].
    printed_n_times_x = [sum(w * x[d] for w, x in zip(NOTES_N[0], NOTES_X)) for d in range(2)]
    assert [round(v, 2) for v in printed_n_times_x] == [0.8, 0.75] != NOTES_OUT[0]


# ------------------------------------------------------------ item 6: the notes' classes
class NotesSelfAttention(nn.Module):
    """One head over the full width d: biased Q, K, V maps, scores Q Kᵀ / √d, no output map."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.d = d

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.query(x), self.key(x), self.value(x)  # (B, L, d)
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d), dim=-1)  # (B, L, L)
        return torch.bmm(weights, v)  # (B, L, d)


class NotesCrossAttention(nn.Module):
    """The same shape, queries from the decoder's input, keys and values from the encoder's;
    divided by √embed_dim whatever the number of heads (the notes' class has one)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.d = d

    def forward(self, x_dec: Tensor, x_enc: Tensor) -> Tensor:
        q, k, v = self.query(x_dec), self.key(x_enc), self.value(x_enc)  # (B, T, d), (B, S, d)
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d), dim=-1)  # (B, T, S)
        return torch.bmm(weights, v)  # (B, T, d)


class NotesMultiHeadSelfAttention(nn.Module):
    """q, k, v maps, a split of the width into h heads of d/h, √(d/h), concatenation, out map."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        assert d % heads == 0
        self.heads, self.head_dim = heads, d // heads
        self.query, self.key, self.value, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.shape

        def split(t: Tensor) -> Tensor:
            return t.view(batch, length, self.heads, self.head_dim).transpose(1, 2)  # (B, h, L, d/h)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)  # (B, h, L, L)
        heads = (weights @ v).transpose(1, 2).reshape(batch, length, width)  # (B, L, d)
        return self.out(heads)


def copy_linear(target: nn.Linear, weight: Tensor, bias: Tensor) -> None:
    with torch.no_grad():
        target.weight.copy_(weight)
        target.bias.copy_(bias)


def identity_out_proj(module: MultiHeadAttention) -> None:
    """The notes' single-head classes have no output map: make minitrans' one the identity."""
    with torch.no_grad():
        module.out_proj.weight.copy_(torch.eye(module.out_proj.weight.shape[0], dtype=module.out_proj.weight.dtype))
        module.out_proj.bias.zero_()


D, HEADS = 16, 4


@pytest.fixture
def inputs() -> tuple[Tensor, Tensor]:
    torch.manual_seed(0)
    return torch.randn(3, 7, D, dtype=torch.float64), torch.randn(3, 5, D, dtype=torch.float64)  # decoder, encoder


def test_notes_self_attention_equals_minitrans_one_head(inputs):
    x, _ = inputs
    ours = MultiHeadAttention(D, num_heads=1, d_k=D).double().eval()
    identity_out_proj(ours)
    notes = NotesSelfAttention(D).double()
    # minitrans fuses the three maps into qkv_proj: rows [Q; K; V].
    for linear, weight, bias in zip(
        (notes.query, notes.key, notes.value), ours.qkv_proj.weight.split(D), ours.qkv_proj.bias.split(D)
    ):
        copy_linear(linear, weight, bias)
    expected, _ = ours(x)
    torch.testing.assert_close(notes(x), expected, rtol=0, atol=1e-12)


def make_cross_pair(heads: int) -> tuple[MultiHeadAttention, NotesCrossAttention]:
    ours = MultiHeadAttention(D, num_heads=heads, d_k=D // heads, is_cross=True).double().eval()
    identity_out_proj(ours)
    notes = NotesCrossAttention(D).double()
    copy_linear(notes.query, ours.q_proj.weight, ours.q_proj.bias)
    # Cross-attention computes K and V from the memory in one kv_proj: rows [K; V].
    (k_weight, v_weight), (k_bias, v_bias) = ours.kv_proj.weight.split(D), ours.kv_proj.bias.split(D)
    copy_linear(notes.key, k_weight, k_bias)
    copy_linear(notes.value, v_weight, v_bias)
    return ours, notes


def test_notes_cross_attention_equals_minitrans_one_head(inputs):
    x_dec, x_enc = inputs
    ours, notes = make_cross_pair(heads=1)
    expected, _ = ours(x_dec, x_enc)
    torch.testing.assert_close(notes(x_dec, x_enc), expected, rtol=0, atol=1e-12)


def test_notes_cross_attention_scale_is_d_k_only_for_one_head(inputs):
    """A difference on purpose: the notes divide by √embed_dim, minitrans by √d_k of a head.
    With one head they coincide (above); with four heads of d/4 they do not, and the notes'
    rule used per head would scale the scores by √4 = 2 too much."""
    x_dec, x_enc = inputs
    ours, notes = make_cross_pair(heads=HEADS)
    expected, _ = ours(x_dec, x_enc)
    assert not torch.allclose(notes(x_dec, x_enc), expected, atol=1e-6)
    # Per head, minitrans' weights are the softmax of q·k / √(d/4), not of q·k / √d.
    q, k = notes.query(x_dec), notes.key(x_enc)
    q_heads = q.view(3, 7, HEADS, D // HEADS).transpose(1, 2)  # (B, H, T, Dk)
    k_heads = k.view(3, 5, HEADS, D // HEADS).transpose(1, 2)  # (B, H, S, Dk)
    _, weights = ours(x_dec, x_enc, need_weights=True)
    raw = q_heads @ k_heads.transpose(-2, -1)  # (B, H, T, S)
    torch.testing.assert_close(weights, torch.softmax(raw / math.sqrt(D // HEADS), -1), rtol=0, atol=1e-12)
    assert not torch.allclose(weights, torch.softmax(raw / math.sqrt(D), -1), atol=1e-3)


def test_notes_multi_head_self_attention_equals_minitrans(inputs):
    x, _ = inputs
    ours = MultiHeadAttention(D, num_heads=HEADS, d_k=D // HEADS).double().eval()
    notes = NotesMultiHeadSelfAttention(D, HEADS).double()
    for linear, weight, bias in zip(
        (notes.query, notes.key, notes.value), ours.qkv_proj.weight.split(D), ours.qkv_proj.bias.split(D)
    ):
        copy_linear(linear, weight, bias)
    copy_linear(notes.out, ours.out_proj.weight, ours.out_proj.bias)
    expected, _ = ours(x)
    torch.testing.assert_close(notes(x), expected, rtol=0, atol=1e-12)

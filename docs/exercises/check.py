"""Check an exercise against the notes model: write the function of a template in a file of your
own, then run

    python docs/exercises/check.py --list                     # the exercises and their templates
    python docs/exercises/check.py attention my_attention.py  # PASS, or a hint

Each check feeds your function random inputs and compares what it returns with what minitrans'
own modules compute (minitrans/models/attention.py, transformer.py, inference/decoding.py). When
they differ, it computes the usual wrong versions too (softmax over the wrong axis, no scale, the
mask inverted, ...) and, if your output equals one of them, names that mistake. The hint comes from
what your function returns, never from reading its source. Exit status: 0 PASS, 1 not yet, 2 a
bad command line.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor, nn

from minitrans.core.config import TransformerConfig
from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from minitrans.inference.decoding import search
from minitrans.inference.top_k import top_k
from minitrans.models.attention import (
    MultiHeadAttention,
    make_causal_mask,
    make_padding_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from minitrans.models.transformer import Residual, SinusoidalPositions, Transformer

HERE = Path(__file__).resolve().parent


class Hint(Exception):
    """A check that failed: ``key`` names the mistake (the tests look for it), the message tells
    the learner what to change."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key, self.message = key, message


@dataclass(frozen=True)
class Exercise:
    number: int
    name: str
    title: str
    functions: tuple[str, ...]
    check: Callable[[object], None]

    @property
    def template(self) -> Path:
        return HERE / f"{self.name}.py"


EXERCISES: dict[str, Exercise] = {}


def exercise(number: int, name: str, title: str, *functions: str):
    def register(check: Callable[[object], None]) -> Callable[[object], None]:
        EXERCISES[name] = Exercise(number, name, title, functions, check)
        return check

    return register


# --- what every check uses -------------------------------------------------------------------------


def call(solution, function: str, *args, error_hints: tuple[tuple[str, str, str], ...] = ()):
    """The learner's ``function(*args)``; an exception becomes a hint that says where it was raised.
    ``error_hints``: (text of the error, key, message) for errors that name a known mistake."""
    fn = getattr(solution, function, None)
    if not callable(fn):
        raise Hint("missing", f"your file defines no function {function}(); copy its signature from the template")
    try:
        return fn(*args)
    except Hint:
        raise
    except NotImplementedError:
        raise Hint("not_written", f"{function}() still raises NotImplementedError: write its body") from None
    except Exception as error:
        for text, key, message in error_hints:
            if text in str(error):
                raise Hint(key, message) from None
        raise Hint("error", f"{function}() raised {type(error).__name__}: {error}{_where(error)}") from None


def _where(error: Exception) -> str:
    """Where the learner's file raised ``error`` (the deepest of its lines the error passed through),
    as " (line N of FILE)"; empty when the error came from elsewhere."""
    frames = traceback.extract_tb(error.__traceback__)
    while frames and Path(frames[0].filename).resolve() == Path(__file__).resolve():
        frames = frames[1:]  # the checker's own frames, down to the call of the learner's function
    mine = [frame for frame in frames if frames and frame.filename == frames[0].filename]
    return f" (line {mine[-1].lineno} of {mine[-1].filename})" if mine else ""


def tensor(value, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise Hint("not_a_tensor", f"{what} should be a tensor, got {type(value).__name__}")
    return value


def shape(got: Tensor, expected: tuple[int, ...], what: str, known: dict[tuple[int, ...], tuple[str, str]]) -> None:
    """Refuse a wrong shape, naming the mistake when ``known`` maps that shape to one."""
    if tuple(got.shape) != tuple(expected):
        key, message = known.get(tuple(got.shape), ("shape", f"expected shape {tuple(expected)}"))
        raise Hint(key, f"{what} has shape {tuple(got.shape)}: {message}")


def same(a: Tensor, b: Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == torch.bool or b.dtype == torch.bool:
        return a.dtype == b.dtype and torch.equal(a, b)
    return torch.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-4)


def compare(
    got: Tensor,
    expected: Tensor,
    what: str,
    mistakes: list[tuple[str, str, Tensor]] = (),
    properties: list[tuple[str, str, Callable[[Tensor], bool]]] = (),
) -> None:
    """Pass when ``got`` equals the notes model's ``expected``; else name the first mistake whose
    output (a wrong version computed from the same inputs) it equals, or failing that the first
    property the notes model's output has and ``got`` lacks."""
    if same(got, expected):
        return
    for key, message, wrong in mistakes:
        if same(got, wrong):
            raise Hint(key, message)
    for key, message, holds in properties:
        if got.shape == expected.shape and not holds(got):
            raise Hint(key, message)
    if got.is_floating_point() and bool(got.isnan().any()):
        raise Hint("nan", f"{what} holds NaN at {int(got.isnan().sum())} places")
    if got.shape != expected.shape:
        raise Hint("shape", f"{what} has shape {tuple(got.shape)}: expected {tuple(expected.shape)}")
    gap = (got.double() - expected.double()).abs()
    at = tuple(int(i) for i in torch.unravel_index(gap.argmax(), gap.shape))
    raise Hint(
        "differs",
        f"{what} differs from the notes model's by up to {float(gap.max()):.3g} (at index {at}), "
        "and matches none of the usual mistakes: compare your steps with the template's docstring",
    )


# --- 1. attention ----------------------------------------------------------------------------------


def _attention(q, k, v, mask=None, scale=None, dim=-1, fill=-math.inf, mask_after=False):
    """Scaled dot-product attention with a knob for each usual mistake (the wrong versions)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None and not mask_after:
        scores = scores.masked_fill(~mask, fill)
    weights = scores.softmax(dim=dim)
    if mask is not None and mask_after:
        weights = weights * mask
    return weights @ v, weights


def _pair(value, function: str) -> tuple[Tensor, Tensor]:
    if not (isinstance(value, tuple | list) and len(value) == 2):
        raise Hint("returns", f"{function}() should return two tensors, (out, weights)")
    return tensor(value[0], "out"), tensor(value[1], "weights")


@exercise(1, "attention", "Scaled dot-product attention", "attention")
def check_attention(solution) -> None:
    torch.manual_seed(1)
    b, h, lq, lk, dk, dv = 2, 3, 4, 6, 8, 5
    q, k, v = torch.randn(b, h, lq, dk), torch.randn(b, h, lk, dk), torch.randn(b, h, lk, dv)
    out, weights = _pair(call(solution, "attention", q, k, v, None), "attention")
    shape(weights, (b, h, lq, lk), "weights", {(b, h, lk, lq): ("weights", "one row per query: Q Kᵀ is (Lq, Lk)")})
    shape(out, (b, h, lq, dv), "out", {})
    expected_out, expected = scaled_dot_product_attention(q, k, v, need_weights=True)
    compare(
        weights,
        expected,
        "weights",
        [
            ("softmax_axis", "your weights sum to 1 down each column (over the queries): take the softmax over "
             "the keys, dim=-1, so each query's row sums to 1", _attention(q, k, v, dim=-2)[1]),
            ("no_scale", "your scores are not scaled: divide Q Kᵀ by √d_k", _attention(q, k, v, scale=1.0)[1]),
            ("scale_dk", "you divide the scores by d_k: divide by √d_k (d_k ** 0.5)",
             _attention(q, k, v, scale=1 / dk)[1]),
            ("scale_inverted", "you multiply the scores by √d_k: divide by it",
             _attention(q, k, v, scale=dk**0.5)[1]),
        ],
        [("rows_not_normalised", "each query's weights should sum to 1 over the keys: a softmax over dim=-1",
          lambda w: same(w.sum(dim=-1), torch.ones(b, h, lq)))],
    )  # fmt: skip
    compare(out, expected_out, "out")

    mask = torch.rand(b, 1, lq, lk) < 0.6  # (B, 1, Lq, Lk), broadcast over the heads
    mask[..., 0], mask[..., 1] = True, False  # every row has a key it may attend to, and one it may not
    out, weights = _pair(call(solution, "attention", q, k, v, mask), "attention")
    expected_out, expected = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    compare(
        weights,
        expected,
        "weights (with a mask)",
        [
            ("mask_ignored", "the mask changes nothing in your weights: fill the scores where mask is False "
             "with -inf before the softmax", _attention(q, k, v)[1]),
            ("mask_inverted", "your mask is inverted: True means 'may attend', so hide the scores where the "
             "mask is False (scores.masked_fill(~mask, -inf))", _attention(q, k, v, ~mask)[1]),
            ("mask_zero_fill", "you set the masked scores to 0, and e⁰ = 1 still gives them weight: fill them "
             "with -inf", _attention(q, k, v, mask, fill=0.0)[1]),
            ("mask_after_softmax", "you mask the weights after the softmax, so rows no longer sum to 1: mask the "
             "scores before it", _attention(q, k, v, mask, mask_after=True)[1]),
        ],
    )  # fmt: skip
    compare(out, expected_out, "out (with a mask)")

    mask[0, 0, 0] = False  # the first query of the first sentence may attend to nothing
    out, weights = _pair(call(solution, "attention", q, k, v, mask), "attention")
    expected_out, expected = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    if bool(weights[0, :, 0].isnan().any() or out[0, :, 0].isnan().any()):
        raise Hint(
            "empty_row_nan",
            "a query that may attend to no key gets NaN (softmax of a row of -inf): give such rows zero weights "
            "and a zero output, e.g. weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0)",
        )
    if same(weights[0, :, 0], torch.full((h, lk), 1 / lk)):
        raise Hint(
            "empty_row_uniform",
            "a query that may attend to no key gets uniform weights: the project's convention gives such rows "
            "zero weights and a zero output (weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0))",
        )
    compare(weights, expected, "weights (a query with no key)")
    compare(out, expected_out, "out (a query with no key)")


# --- 2. and 3. masks -------------------------------------------------------------------------------


def _bool_mask(got: Tensor, what: str) -> None:
    if got.dtype == torch.bool:
        return
    if got.is_floating_point() and bool(got.isinf().any()):
        raise Hint(
            "additive_mask",
            f"{what} is an additive float mask (0 and -inf): minitrans' masks are boolean, True = may attend",
        )
    raise Hint("not_bool", f"{what} has dtype {got.dtype}: return a boolean tensor, True = may attend")


@exercise(2, "causal_mask", "The causal mask", "causal_mask")
def check_causal_mask(solution) -> None:
    for length in (5, 1, 8):
        got = tensor(call(solution, "causal_mask", length), "the mask")
        _bool_mask(got, "the mask")
        shape(got, (1, 1, length, length), "the mask", {
            (length, length): ("no_broadcast_dims", "add the batch and head axes, (1, 1, L, L), so it broadcasts "
                               "against the scores (B, H, L, L): mask[None, None]"),
        })  # fmt: skip
        expected = make_causal_mask(length)
        square = torch.ones(length, length, dtype=torch.bool)
        compare(
            got,
            expected,
            f"the mask of length {length}",
            [
                ("causal_inverted", "your mask is True where j > i, the future: True means 'may attend', so "
                 "position i may see j <= i (tril)", square.triu(1)[None, None]),
                ("causal_transposed", "your mask lets query i see keys j >= i: rows are queries and columns keys, "
                 "so keep the lower triangle (tril)", square.triu()[None, None]),
                ("diagonal_excluded", "your mask hides the diagonal: position i may attend to itself (j <= i, "
                 "not j < i)", square.tril(-1)[None, None]),
                ("one_ahead", "your mask lets position i see i + 1: only j <= i", square.tril(1)[None, None]),
            ],
        )  # fmt: skip


@exercise(3, "padding_mask", "The padding mask", "padding_mask")
def check_padding_mask(solution) -> None:
    torch.manual_seed(3)
    for pad_id in (0, 5):
        tokens = torch.randint(6, 20, (3, 7))
        tokens[1, 5:], tokens[2, 2:] = pad_id, pad_id  # right padding, as the batches have it
        got = tensor(call(solution, "padding_mask", tokens, pad_id), "the mask")
        _bool_mask(got, "the mask")
        shape(got, (3, 1, 1, 7), "the mask", {
            (3, 7): ("no_broadcast_dims", "add the head and query axes, (B, 1, 1, S), so one row of keys serves "
                     "every head and every query"),
            (3, 1, 7, 1): ("mask_on_queries", "the mask hides keys, the last axis of the scores (B, H, Lq, Lk): "
                           "(B, 1, 1, S), not (B, 1, S, 1)"),
        })  # fmt: skip
        expected = make_padding_mask(tokens, pad_id)
        compare(
            got,
            expected,
            f"the mask (pad_id={pad_id})",
            [
                ("padding_inverted", "your mask is True at the padding (as nn.MultiheadAttention's "
                 "key_padding_mask): in minitrans True means 'may attend', so True at the real tokens", ~expected),
                ("pad_id_ignored", "use the pad_id argument, not a fixed id", (tokens != 0)[:, None, None, :]),
            ],
        )  # fmt: skip


# --- 4. heads --------------------------------------------------------------------------------------


@exercise(4, "heads", "Split and merge heads", "split_heads", "merge_heads")
def check_heads(solution) -> None:
    torch.manual_seed(4)
    b, length, heads, width = 2, 5, 3, 4
    x = torch.randn(b, length, heads * width)  # (B, L, H·W)
    not_contiguous = (
        ("view size is not compatible", "view_after_transpose", "after a transpose the tensor is not contiguous, "
         "so .view fails: use .reshape (or .contiguous().view)"),
    )  # fmt: skip
    got = tensor(call(solution, "split_heads", x, heads, error_hints=not_contiguous), "split_heads(x)")
    shape(got, (b, heads, length, width), "split_heads(x)", {
        (b, length, heads, width): ("split_no_transpose", "move the heads before the positions: transpose(1, 2) "
                                    "after the view, (B, L, H, W) -> (B, H, L, W)"),
    })  # fmt: skip
    compare(
        got,
        split_heads(x, heads),
        "split_heads(x)",
        [
            ("split_reshape", "reshaping (B, L, H·W) straight to (B, H, L, W) mixes positions into the heads: "
             "view it as (B, L, H, W), then transpose(1, 2)", x.reshape(b, heads, length, width)),
            ("split_interleaved", "head h takes the contiguous slice h·W:(h+1)·W of the features, not every H-th "
             "one: view as (B, L, H, W), not (B, L, W, H)", x.view(b, length, width, heads).permute(0, 3, 1, 2)),
        ],
    )  # fmt: skip

    y = torch.randn(b, heads, length, width)  # (B, H, L, W), contiguous as attention's output is
    got = tensor(call(solution, "merge_heads", y, error_hints=not_contiguous), "merge_heads(y)")
    shape(got, (b, length, heads * width), "merge_heads(y)", {})
    compare(
        got,
        merge_heads(y),
        "merge_heads(y)",
        [
            ("merge_no_transpose", "transpose (B, H, L, W) to (B, L, H, W) before the reshape, or the heads' "
             "positions get mixed", y.reshape(b, length, heads * width)),
            ("merge_interleaved", "heads merged in the wrong order: head 0's W features come first, then head 1's "
             "(transpose to (B, L, H, W), not (B, L, W, H))", y.permute(0, 2, 3, 1).reshape(b, length, -1)),
        ],
    )  # fmt: skip
    back = tensor(call(solution, "merge_heads", call(solution, "split_heads", x, heads)), "merge(split(x))")
    compare(back, x, "merge_heads(split_heads(x))")


# --- 5. positions ----------------------------------------------------------------------------------


def _positions(length, d_model, start=0, exponent=2, own_frequency=False, swap=False, halves=False):
    pos = torch.arange(start, start + length, dtype=torch.float)[:, None]  # (L, 1)
    pair = torch.arange(d_model // 2, dtype=torch.float)  # i
    freq = 10000.0 ** (-exponent * pair / d_model)  # (D/2,)
    odd_freq = 10000.0 ** (-(2 * pair + 1) / d_model) if own_frequency else freq
    even, odd = torch.sin(pos * freq), torch.cos(pos * odd_freq)
    if swap:
        even, odd = torch.cos(pos * freq), torch.sin(pos * odd_freq)
    if halves:
        return torch.cat([even, odd], dim=1)
    return torch.stack([even, odd], dim=2).view(length, d_model)  # columns sin, cos, sin, cos, ...


@exercise(5, "positions", "Sinusoidal positions", "sinusoidal_positions")
def check_positions(solution) -> None:
    for length, d_model in ((10, 8), (3, 16)):
        got = tensor(call(solution, "sinusoidal_positions", length, d_model), "the table")
        shape(got, (length, d_model), "the table", {
            (d_model, length): ("positions_transposed", "rows are positions and columns features, (L, D): "
                                "your table is (D, L)"),
        })  # fmt: skip
        compare(
            got,
            SinusoidalPositions(d_model, length).table,
            f"the table ({length} positions, d_model {d_model})",
            [
                ("sin_cos_swapped", "sin and cos are swapped: sin in the even columns 2i, cos in the odd ones 2i+1",
                 _positions(length, d_model, swap=True)),
                ("halves", "the notes interleave: sin in columns 0, 2, 4, ..., cos in 1, 3, 5, ...; yours puts the "
                 "sines in the first half and the cosines in the second", _positions(length, d_model, halves=True)),
                ("odd_own_frequency", "column 2i+1 shares the frequency of column 2i, 1/10000^(2i/d): yours "
                 "gives it 10000^((2i+1)/d)", _positions(length, d_model, own_frequency=True)),
                ("exponent_without_two", "the exponent is 2i/d, i counting the sin/cos pairs: yours uses i/d",
                 _positions(length, d_model, exponent=1)),
                ("positions_from_one", "positions count from 0: row 0 is sin(0) = 0, cos(0) = 1",
                 _positions(length, d_model, start=1)),
            ],
        )  # fmt: skip


# --- 6. residual -----------------------------------------------------------------------------------


@exercise(6, "residual", "A residual pre-norm block", "residual_block")
@torch.no_grad()
def check_residual(solution) -> None:
    torch.manual_seed(6)
    d_model = 8
    x = torch.randn(2, 5, d_model) * 3 + 1  # far from normalised, so LN(x) and x differ
    norm = nn.LayerNorm(d_model)
    nn.init.normal_(norm.weight, 1.0, 0.3), nn.init.normal_(norm.bias, 0.0, 0.3)
    sublayer = nn.Sequential(nn.Linear(d_model, 16), nn.ReLU(), nn.Linear(16, d_model))
    got = tensor(call(solution, "residual_block", x, sublayer, norm), "the block's output")
    shape(got, tuple(x.shape), "the block's output", {})
    block = Residual(d_model, 0.0, norm_first=True)
    block.norm.load_state_dict(norm.state_dict())
    compare(
        got,
        block(x, sublayer(block.sublayer_input(x))),
        "the block's output",
        [
            ("no_residual", "you forgot the residual: add x back, x + sublayer(LN(x))", sublayer(norm(x))),
            ("post_norm", "that is post-norm, LN(x + sublayer(x)) (the 2017 paper's): pre-norm normalises the "
             "sub-layer's input, x + sublayer(LN(x))", norm(x + sublayer(x))),
            ("norm_output", "normalise the sub-layer's input, not its output: x + sublayer(LN(x))",
             x + norm(sublayer(x))),
            ("normalised_residual", "the residual adds the un-normalised x: x + sublayer(LN(x)), not "
             "LN(x) + sublayer(LN(x))", norm(x) + sublayer(norm(x))),
            ("norm_twice", "a pre-norm block does not normalise its sum: x + sublayer(LN(x)), no LN around it "
             "(the stack's final LayerNorm does that once)", norm(x + sublayer(norm(x)))),
            ("no_norm", "the LayerNorm is missing: x + sublayer(LN(x))", x + sublayer(x)),
        ],
    )  # fmt: skip


# --- 7. cross-attention ----------------------------------------------------------------------------


def _cross(y, memory, mask, w_q, w_k, w_v, w_o, heads, scale=None, merge=merge_heads):
    q, k, v = (split_heads(t, heads) for t in (y @ w_q, memory @ w_k, memory @ w_v))
    out, _ = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    return merge(out) @ w_o


@exercise(7, "cross_attention", "Cross-attention", "cross_attention")
@torch.no_grad()
def check_cross_attention(solution) -> None:
    torch.manual_seed(7)
    b, t, s, d_model, heads, d_k, d_v = 2, 4, 6, 12, 2, 4, 3
    y, memory = torch.randn(b, t, d_model), torch.randn(b, s, d_model)
    src = torch.randint(4, 20, (b, s))
    src[1, 4:] = PAD_ID
    src_mask = make_padding_mask(src, PAD_ID)  # (B, 1, 1, S)
    w_q, w_k = torch.randn(d_model, heads * d_k), torch.randn(d_model, heads * d_k)
    w_v, w_o = torch.randn(d_model, heads * d_v) / 2, torch.randn(heads * d_v, d_model) / 2
    args = (y, memory, src_mask, w_q, w_k, w_v, w_o, heads)
    misfit = (
        ("must match the size of tensor", "scores_shape", "a tensor did not fit (the mask is (B, 1, 1, S)): the "
         "scores should be (B, H, T, S), the queries from y and the keys and values from memory"),
    )  # fmt: skip
    got = tensor(call(solution, "cross_attention", *args, error_hints=misfit), "the output")
    shape(got, (b, t, d_model), "the output", {
        (b, s, d_model): ("sources_swapped", "one row per source word: the queries come from the decoder (y), "
                          "the keys and values from the encoder's memory"),
        (b, t, heads * d_v): ("no_output_projection", "the heads' concatenation still needs W^O: merged @ w_o"),
    })  # fmt: skip
    attn = MultiHeadAttention(d_model, heads, d_k, d_v, is_cross=True)
    for linear, weight in ((attn.q_proj, w_q), (attn.kv_proj, torch.cat([w_k, w_v], dim=1)), (attn.out_proj, w_o)):
        linear.weight.copy_(weight.T)
        linear.bias.zero_()
    expected, _ = attn(y, memory, src_mask)
    crossed = torch.ones(t, s, dtype=torch.bool).tril()
    compare(
        got,
        expected,
        "the output",
        [
            ("src_mask_ignored", "the source's padding gets weight: pass src_mask to the attention",
             _cross(y, memory, None, *args[3:])),
            ("cross_causal", "cross-attention is not causal: every target position may see the whole source",
             _cross(y, memory, src_mask & crossed, *args[3:])),
            ("no_scale", "your scores are not scaled: divide Q Kᵀ by √d_k", _cross(*args, scale=1.0)),
            ("scale_dk", "you divide the scores by d_k: divide by √d_k", _cross(*args, scale=1 / d_k)),
            ("merge_interleaved", "heads merged in the wrong order: head 0's features first, then head 1's "
             "(exercise 4)", _cross(*args, merge=lambda o: o.permute(0, 2, 3, 1).reshape(b, t, -1))),
        ],
    )  # fmt: skip


# --- 8. greedy decoding ----------------------------------------------------------------------------


def _tiny_model(seed: int) -> Transformer:
    """A random Transformer whose greedy output wanders (an untied output layer, so the next word
    is not simply the current one), and never favours PAD or BOS, which no search generates."""
    torch.manual_seed(seed)
    cfg = TransformerConfig(
        d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=1, max_len=64, tie_output=False
    )
    model = Transformer(cfg, 16, 16, PAD_ID).eval()
    with torch.no_grad():
        model.output.bias.zero_()
        model.output.bias[[PAD_ID, BOS_ID]] = -1e4
    return model


def _set_eos_bias(model: Transformer, value: float) -> None:
    with torch.no_grad():
        model.output.bias[EOS_ID] = value


def _eos_bias_stopping_midway(model: Transformer, src: Tensor, max_len: int) -> float:
    """An EOS bias that makes EOS the best word for the first time at some step of 3 or more: with
    EOS out of the way, step t's best word leads EOS by gap[t]; a bias between the first gap
    smaller than all before it and their minimum lets every earlier word stand."""
    _set_eos_bias(model, -1e4)
    enc, _ = model.encode(src)
    ys, gaps = [BOS_ID], []
    for _ in range(max_len):
        logits = model.decode(enc, torch.tensor([ys]))[0][0, -1]
        ys.append(int(logits.argmax()))
        gaps.append(float(logits.max() - logits[EOS_ID]) - 1e4)
    for step in range(3, max_len - 2):
        if gaps[step] < min(gaps[:step]) - 0.1:
            return (gaps[step] + min(gaps[:step])) / 2
    raise RuntimeError("the checker's model never comes near EOS: it needs another seed")


class _Counted:
    """The model, refusing to run more decoder steps than any correct greedy search needs."""

    def __init__(self, model: Transformer, most_steps: int) -> None:
        self.model, self.most_steps, self.steps = model, most_steps, 0

    def _count(self) -> None:
        self.steps += 1
        if self.steps > self.most_steps:
            raise Hint(
                "no_limit",
                f"your loop ran past {self.most_steps} decoder steps: stop at EOS, and after max_len tokens at most",
            )

    def decode(self, *args, **kwargs):
        self._count()
        return self.model.decode(*args, **kwargs)

    def step(self, *args, **kwargs):
        self._count()
        return self.model.step(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        self._count()
        return self.model(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.model, name)


def _greedy_from_first_position(model, src, max_len) -> list[int]:
    enc, _ = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len):
        token = int(model.decode(enc, torch.tensor([ys]))[0][0, 0].argmax())
        if token == EOS_ID:
            break
        ys.append(token)
    return ys[1:]


def _ids(value, what: str) -> list[int]:
    if isinstance(value, Tensor):
        value = value.flatten().tolist()
    if not isinstance(value, list | tuple):
        raise Hint("not_a_list", f"{what} should return a list of ids, got {type(value).__name__}")
    try:
        return [int(token) for token in value]
    except (TypeError, ValueError):
        raise Hint("not_a_list", f"{what} should return a list of ids (ints)") from None


@exercise(8, "greedy", "Greedy decoding", "greedy_decode")
@torch.no_grad()
def check_greedy(solution) -> None:
    max_len = 12
    model = _tiny_model(16)
    src = torch.tensor([[5, 9, 7, 11, 6]])

    def reference() -> tuple[list[int], bool]:
        (best,), *_ = search(model, src, DecodingOptions(max_output_ratio=100.0, max_output_len=max_len))
        return best.ids, best.is_finished

    # One case that ends with EOS midway, one that never meets it and ends at max_len.
    _set_eos_bias(model, _eos_bias_stopping_midway(model, src, max_len))
    ids, finished = reference()
    assert finished and 3 <= len(ids) < max_len, "the checker's own model should stop midway"
    for case in ("stops", "runs"):
        if case == "runs":
            _set_eos_bias(model, -1e4)
            ids, finished = reference()
        counted = _Counted(model, 2 * max_len)
        got = _ids(call(solution, "greedy_decode", counted, src, max_len), "greedy_decode()")
        if got == ids:
            continue
        if got == [BOS_ID, *ids] or got == [BOS_ID, *ids, EOS_ID]:
            raise Hint("bos_included", "leave BOS out of the returned ids: it is the decoder's first input, not output")
        if case == "stops" and got == [*ids, EOS_ID]:
            raise Hint("eos_included", "stop at EOS but leave it out of the returned ids")
        if case == "stops" and got[: len(ids) + 1] == [*ids, EOS_ID]:
            raise Hint(
                "no_stop_at_eos",
                f"your decoding goes on after EOS ({len(got)} ids): stop as soon as EOS is the best word",
            )
        if case == "runs" and got[: len(ids)] == ids[: len(got)] and abs(len(got) - max_len) == 1:
            raise Hint(
                "max_len_off_by_one",
                f"with no EOS you return {len(got)} ids: generate at most max_len={max_len} tokens (EOS included), "
                f"so {max_len} ids when EOS never comes",
            )
        if got == _greedy_from_first_position(model, src, max_len):
            raise Hint(
                "first_position",
                "each step must take the logits of the last position of the prefix, logits[0, -1]; yours reads "
                "position 0, which only ever sees BOS",
            )
        raise Hint("differs", f"greedy_decode() gave {got}; the notes model's greedy search gives {ids}")


# --- 9. one beam-search step -----------------------------------------------------------------------


@exercise(9, "beam_step", "One beam-search step", "beam_step")
def check_beam_step(solution) -> None:
    torch.manual_seed(9)
    beams, vocab = 3, 10
    log_probs = torch.randn(beams, vocab).mul(2).log_softmax(dim=-1)  # (K, V)
    for scores in (torch.tensor([-1.0, -1.6, -2.5]), torch.tensor([0.0, -math.inf, -math.inf])):
        value = call(solution, "beam_step", log_probs, scores)
        if not (isinstance(value, tuple | list) and len(value) == 3):
            raise Hint("returns", "beam_step() should return three tensors, (new_scores, rows, tokens)")
        got_scores, rows, tokens = (tensor(part, name) for part, name in zip(value, ("new_scores", "rows", "tokens")))
        for part, name in ((got_scores, "new_scores"), (rows, "rows"), (tokens, "tokens")):
            shape(part, (beams,), name, {})
        rows, tokens = rows.long(), tokens.long()
        # The notes model's beam search ranks all K·V extensions of a sentence in one top-k (decoding.py).
        top_scores, top_index = top_k((log_probs + scores[:, None]).view(1, -1), beams)
        expected = (top_scores[0], top_index[0] // vocab, top_index[0] % vocab)
        if same(got_scores, expected[0]) and torch.equal(rows, expected[1]) and torch.equal(tokens, expected[2]):
            continue
        if same(got_scores, expected[0]):
            if torch.equal(rows, top_index[0] % beams) and torch.equal(tokens, top_index[0] // beams):
                raise Hint("flat_index", "the flat index i of the (K, V) table of extensions is beam i // V and "
                           "token i % V: yours divides by K")  # fmt: skip
            raise Hint("differs", f"your scores are right but rows {rows.tolist()}, tokens {tokens.tolist()} "
                       f"are not: expected {expected[1].tolist()}, {expected[2].tolist()}")  # fmt: skip
        if same(got_scores, log_probs.reshape(-1).topk(beams).values):
            raise Hint("no_scores", "rank the extensions by the beam's score plus the word's log-probability, "
                       "scores[:, None] + log_probs, not by the word's alone")  # fmt: skip
        if same(got_scores, (log_probs + scores[:, None]).max(dim=1).values.sort(descending=True).values):
            raise Hint("per_beam", "take the K best of all K·V extensions together, not the best word of each beam "
                       "(at the first step every extension comes from beam 0)")  # fmt: skip
        if same(got_scores.sort(descending=True).values, expected[0]):
            raise Hint("not_sorted", "return the K extensions best first")
        compare(got_scores, expected[0], "new_scores")


# --- the command -----------------------------------------------------------------------------------


def load(path: Path) -> ModuleType:
    """The learner's file as a module; a file that does not run becomes a hint."""
    spec = importlib.util.spec_from_file_location(f"exercise_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise Hint("does_not_load", f"{path} does not run: {type(error).__name__}: {error}") from None
    return module


def check(name: str, solution) -> tuple[bool, str, str]:
    """(passed, mistake key, one line for the learner) for ``solution`` (a module, or any object
    with the exercise's functions as attributes)."""
    ex = EXERCISES[name]
    try:
        ex.check(solution)
    except Hint as hint:
        return False, hint.key, f"{name}: not yet. Hint: {hint.message}"
    names = " and ".join(f"{f}()" for f in ex.functions)
    verb = "compute" if len(ex.functions) > 1 else "computes"
    return True, "pass", f"{name}: PASS. Your {names} {verb} what the notes model computes."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python docs/exercises/check.py",
        description="Check an exercise's solution against the notes model: PASS, or a hint.",
    )
    parser.add_argument(
        "exercise", nargs="?", choices=list(EXERCISES), metavar="EXERCISE", help=f"one of {', '.join(EXERCISES)}"
    )
    parser.add_argument(
        "solution", nargs="?", type=Path, metavar="FILE", help="your file, written from the exercise's template"
    )
    parser.add_argument("--list", action="store_true", help="list the exercises and their templates")
    args = parser.parse_args(argv)
    if args.list:
        root = HERE.parents[1]
        for ex in EXERCISES.values():
            print(f"{ex.number}. {ex.name:<16} {ex.title:<30} {ex.template.relative_to(root)}")
        return 0
    if args.exercise is None or args.solution is None:
        parser.error("name an exercise and your file (python docs/exercises/check.py attention my_attention.py)")
    if not args.solution.is_file():
        parser.error(f"no such file: {args.solution}")
    try:
        solution = load(args.solution)
    except Hint as hint:
        print(f"{args.exercise}: not yet. Hint: {hint.message}")
        return 1
    passed, _, line = check(args.exercise, solution)
    print(line)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

"""Exercise 1 solved, and the usual wrong versions (``WRONG``: mistake -> the functions that make it)."""

import math

import torch


def attention(q, k, v, mask=None, scale=None, dim=-1, fill=-math.inf, mask_after=False, zero_empty=True):
    scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if mask is not None and not mask_after:
        scores = scores.masked_fill(~mask, fill)
    weights = scores.softmax(dim=dim)
    if mask is not None and mask_after:
        weights = weights * mask
    if mask is not None and zero_empty:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


def wrong(**how):
    return {"attention": lambda q, k, v, mask=None: attention(q, k, v, mask, **how)}


WRONG = {
    "softmax_axis": wrong(dim=-2),
    "rows_not_normalised": wrong(dim=1),
    "no_scale": wrong(scale=1.0),
    "scale_dk": {"attention": lambda q, k, v, mask=None: attention(q, k, v, mask, scale=1 / q.shape[-1])},
    "scale_inverted": {"attention": lambda q, k, v, mask=None: attention(q, k, v, mask, scale=q.shape[-1] ** 0.5)},
    "mask_ignored": {"attention": lambda q, k, v, mask=None: attention(q, k, v)},
    "mask_inverted": {"attention": lambda q, k, v, mask=None: attention(q, k, v, None if mask is None else ~mask)},
    "mask_zero_fill": wrong(fill=0.0),
    "mask_after_softmax": wrong(mask_after=True),
    "empty_row_nan": wrong(zero_empty=False),
    "empty_row_uniform": wrong(fill=torch.finfo(torch.float32).min, zero_empty=False),
    "returns": {"attention": lambda q, k, v, mask=None: attention(q, k, v, mask)[0]},
}

"""Inverted dropout with cheap random bits on the CPU: ``dropout``, ``dropout_add``, ``relu_dropout``.

Dropout zeroes each element with probability ``p`` and scales the rest by 1 / (1 - p). On the
CPU, PyTorch draws one Mersenne-Twister number per element (two for ``bernoulli_``, behind
``F.dropout``), one element at a time, and those draws were the largest cost of a training step
after the matrix products (docs/performance.md). Here one 64-bit draw gives four independent
16-bit uniform fields, one per element: a quarter of the draws, half the generator's 32-bit
outputs, and no float conversion.

Quantisation of ``p``: a field u is uniform on {0, …, 65535}; an element is kept when
u >= k, k = round(p · 65536). The keep probability is exactly 1 - k / 65536 and the scale is
65536 / (65536 - k), its exact inverse, so the output's expectation is the input (up to the
rounding of the scale to the tensor's dtype). ``p`` is thus rounded to the nearest multiple of
1/65536: 0.1 becomes 0.10000610 (0.006 % more). Rates that round to 0 or 1 (p < 1/131072 or
p > 1 - 1/131072), devices other than the CPU and graphs being compiled use ``F.dropout``
(exact ``p``, PyTorch's fused kernels).

Fused forms, for the two places a Transformer layer drops most elements (the feed-forward's
hidden units and the residual branches), each one autograd node that keeps only what its
backward needs:
- ``dropout_add(residual, x, p)`` = residual + dropout(x, p): one pass (``addcmul``) forward,
  one multiply backward;
- ``relu_dropout(x, p)`` = dropout(relu(x), p): its backward needs only its output (which the
  next linear layer keeps anyway), not a separate mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

FIELD_BITS = 16
FIELD_VALUES = 1 << FIELD_BITS  # 65536 values of one uniform field
FIELDS_PER_DRAW = 64 // FIELD_BITS  # fields cut from one 64-bit random number


def drop_count(p: float) -> int:
    """k of the quantised rate k / 65536 that the CPU path drops with (see the module docstring)."""
    return round(p * FIELD_VALUES)


def _uses_packed_bits(x: Tensor, p: float) -> bool:
    return x.device.type == "cpu" and 0 < drop_count(p) < FIELD_VALUES and not torch.compiler.is_compiling()


def keep_mask(shape: torch.Size, p: float, device: torch.device | str = "cpu") -> Tensor:
    """Boolean ``shape`` tensor, each element True with probability exactly 1 - drop_count(p) / 65536,
    independently: 16-bit fields of full-range 64-bit random integers from the default generator."""
    numel = shape.numel()
    draws = torch.empty((numel + FIELDS_PER_DRAW - 1) // FIELDS_PER_DRAW, dtype=torch.int64, device=device)
    draws.random_(-(2**63), None)  # every bit uniform (the full int64 range)
    fields = draws.view(torch.int16)[:numel].view(shape)  # uniform on [-32768, 32767]
    return fields >= drop_count(p) - FIELD_VALUES // 2  # 65536 - k of the 65536 values


def _scale(x: Tensor, p: float) -> Tensor:
    """1 / (1 - p') as a 0-d tensor of x's dtype (p' the quantised rate)."""
    return x.new_full((), FIELD_VALUES / (FIELD_VALUES - drop_count(p)))


def dropout_mask(x: Tensor, p: float) -> Tensor:
    """x's shape and dtype: 1 / (1 - p') where kept, 0 where dropped (p' the quantised rate)."""
    return torch.where(keep_mask(x.shape, p, x.device), _scale(x, p), x.new_zeros(()))


class _DropoutAdd(torch.autograd.Function):
    """residual + x · mask in one pass; backward: (grad, grad · mask)."""

    @staticmethod
    def forward(ctx, residual: Tensor, x: Tensor, mask: Tensor) -> Tensor:
        ctx.save_for_backward(mask)
        return torch.addcmul(residual, x, mask)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (mask,) = ctx.saved_tensors
        return grad, grad * mask, None


class _ReluDropout(torch.autograd.Function):
    """relu(x) · mask, with mask in {0, scale}; backward: grad · scale where the output is positive."""

    @staticmethod
    def forward(ctx, x: Tensor, mask: Tensor, scale: float) -> Tensor:
        out = torch.mul(x, mask).relu_()  # = relu(x) · mask, since mask >= 0
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (out,) = ctx.saved_tensors  # out > 0 exactly where x > 0 and the element was kept
        return torch.ops.aten.threshold_backward(grad, out, 0).mul_(ctx.scale), None, None


def dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout (training mode): zero each element with probability ``p``, scale the rest
    by 1 / (1 - p); the same distribution as ``F.dropout`` (on the CPU, ``p`` in steps of 1/65536)."""
    if p == 0.0:
        return x
    if not _uses_packed_bits(x, p):
        return F.dropout(x, p, training=True)
    return x * dropout_mask(x, p)


def dropout_add(residual: Tensor, x: Tensor, p: float) -> Tensor:
    """residual + dropout(x, p), the residual connection's form."""
    if p == 0.0:
        return residual + x
    if not _uses_packed_bits(x, p) or residual.shape != x.shape or residual.dtype != x.dtype:
        return residual + dropout(x, p)  # e.g. under autocast: a float32 residual, a bfloat16 branch
    return _DropoutAdd.apply(residual, x, dropout_mask(x, p))


def relu_dropout(x: Tensor, p: float) -> Tensor:
    """dropout(relu(x), p), the feed-forward's hidden layer."""
    if p == 0.0:
        return F.relu(x)
    if not _uses_packed_bits(x, p):
        return F.dropout(F.relu(x), p, training=True)
    return _ReluDropout.apply(x, dropout_mask(x, p), _scale(x, p).item())


class Dropout(nn.Dropout):
    """``nn.Dropout`` through :func:`dropout` (same parameters, state and repr)."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p) if self.training else x


__all__ = ["Dropout", "drop_count", "dropout", "dropout_add", "dropout_mask", "keep_mask", "relu_dropout"]

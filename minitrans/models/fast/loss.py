"""The training loss made fast: :func:`minitrans.models.loss.token_loss` in fewer passes.

The training step's loss for the fast Transformer and the RNN baselines
(:func:`minitrans.models.build.training_loss` chooses it; :func:`step_loss` is its form). It is
``F.cross_entropy(logits, target, ignore_index=PAD_ID, label_smoothing=ε, reduction="sum")``
(tests hold them equal, values and gradients) computed with fewer passes over the (N, V)
scores: the forward keeps one (N, V) buffer, the log-probabilities, and the backward turns it
in place into the gradient ``softmax − ((1 − ε)·onehot + ε / V)``. PyTorch's own pair of
kernels writes and reads the (N, V) array several times more (log-softmax, the smoothing
term's fill and add, log-softmax's backward, copies); docs/performance.md measures the gain.

Under bfloat16 autocast on the CPU the training step's logits are bfloat16 and the loss is
float32, so it needs a float32 (N, V) array of its own. A fresh one every step is expensive on
the CPU (an allocation that large is new memory the kernel faults in page by page, which costs
more than the conversion itself), so the spent bfloat16 logits are copied into a
:class:`Workspace` kept from step to step, and their own buffer later receives the gradient.
"""

from __future__ import annotations

import weakref

import torch
from torch import Tensor

from minitrans.data.tokenizer import PAD_ID


class Workspace:
    """One float32 buffer the loss lends itself from step to step: the log-probabilities, then
    the gradient, of a training step whose logits are not float32. Lent to one loss at a time,
    from its forward to the end of its backward (or until its graph is dropped unused; to the
    end of the forward when no gradient is wanted). A loss that finds it lent allocates its own
    array, as before: slower, never wrong."""

    def __init__(self) -> None:
        self.buffer: Tensor | None = None
        self.borrower: weakref.ref | None = None  # the autograd context holding it, while it does

    @property
    def lent(self) -> bool:
        return self.borrower is not None and self.borrower() is not None

    def take(self, rows: int, cols: int, device: torch.device, borrower) -> Tensor | None:
        if self.lent:
            return None
        if self.buffer is None or self.buffer.device != device or self.buffer.numel() < rows * cols:
            self.buffer = None  # the old one goes before the larger one comes
            self.buffer = torch.empty(rows * cols, device=device)
        self.borrower = weakref.ref(borrower)
        return self.buffer[: rows * cols].view(rows, cols)

    def give_back(self) -> None:
        self.borrower = None


WORKSPACE = Workspace()  # the CPU training step's; CUDA's caching allocator needs none


class _SmoothedCrossEntropy(torch.autograd.Function):
    """logits (N, V), target (N,) -> the summed loss (); backward: (softmax − q) · grad."""

    @staticmethod
    def forward(
        ctx, logits: Tensor, target: Tensor, label_smoothing: float, ignore_index: int, overwrite: bool
    ) -> Tensor:
        vocab = logits.shape[-1]
        owner = logits if logits._base is None else logits._base  # the tensor whose buffer this view shares
        overwrite = overwrite and not owner.is_leaf and logits.is_contiguous()
        lent = None
        if overwrite and logits.dtype != torch.float32 and logits.device.type == "cpu":
            lent = WORKSPACE.take(*logits.shape, logits.device, borrower=ctx)  # None while another loss holds it
        if overwrite and logits.dtype == torch.float32:
            log_probs = torch.log_softmax(logits, dim=-1, out=logits)  # (N, V), in the logits' own buffer
        elif lent is not None:
            log_probs = torch.log_softmax(lent.copy_(logits), dim=-1, out=lent)  # (N, V) float32, the workspace's
        else:
            log_probs = torch.log_softmax(logits.float(), dim=-1)  # (N, V), float32 whatever the logits' dtype
        ignored = (target == ignore_index).nonzero().squeeze(1)  # (P,) rows that are padding
        safe_target = target.index_fill(0, ignored, 0)  # (N,) a valid index on ignored rows
        per_token = log_probs.gather(1, safe_target[:, None]).squeeze(1) * -(1.0 - label_smoothing)  # (N,)
        if label_smoothing:
            per_token = per_token - log_probs.sum(dim=-1) * (label_smoothing / vocab)
        loss = per_token.index_fill(0, ignored, 0.0).sum()
        if ctx.needs_input_grad[0]:
            # the spent low-precision logits will hold the gradient; saved, so that autograd's version
            # check catches a layer that kept them for its own backward
            spent = logits if lent is not None else logits.new_empty(0)
            ctx.save_for_backward(log_probs, safe_target, ignored, spent)
            ctx.label_smoothing, ctx.logits_dtype, ctx.used = label_smoothing, logits.dtype, False
            ctx.borrowed = lent is not None
        elif lent is not None:
            WORKSPACE.give_back()
        return loss

    @staticmethod
    def backward(ctx, grad: Tensor):
        if ctx.used:  # the saved log-probabilities became the gradient in place
            raise RuntimeError("token_loss: backward through the same loss twice (retain_graph) is not supported")
        ctx.used = True
        log_probs, target, ignored, spent = ctx.saved_tensors
        vocab, smoothing = log_probs.shape[-1], ctx.label_smoothing
        scores = log_probs.exp_()  # (N, V) softmax, in the log-probabilities' buffer
        scores.scatter_add_(1, target[:, None], scores.new_full((target.shape[0], 1), smoothing - 1.0))
        if smoothing:
            scores.sub_(smoothing / vocab)
        scores.index_fill_(0, ignored, 0.0).mul_(grad)
        if not ctx.borrowed:
            return scores.to(ctx.logits_dtype), None, None, None, None
        gradient = spent.copy_(scores)  # (N, V) in the logits' dtype and buffer
        WORKSPACE.give_back()
        return gradient, None, None, None, None


def token_loss(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0, overwrite_logits: bool = False) -> Tensor:
    """Summed (label-smoothed) cross-entropy over real target tokens: logits (B, T, V),
    tgt_out (B, T) -> (). Computed in float32 whatever the logits' dtype (e.g. bfloat16 under
    autocast); its gradient comes back in the logits' dtype.

    ``overwrite_logits``: the caller is done with ``logits`` (the training step): float32
    contiguous logits then hold the log-probabilities and later the gradient, so the whole
    step allocates one (N, V) array instead of two, and does not fault a fresh one into memory.
    Lower-precision logits on the CPU (bfloat16 autocast) are copied into the :data:`WORKSPACE`
    and receive the gradient in their own buffer; their values are kept until the backward.
    Afterwards ``logits`` no longer holds the scores; a leaf tensor is never overwritten. (Were
    they saved for the backward of the layer that made them, autograd would refuse the modified
    tensor rather than go wrong.)"""
    vocab = logits.shape[-1]
    return _SmoothedCrossEntropy.apply(
        logits.reshape(-1, vocab), tgt_out.reshape(-1), float(label_smoothing), PAD_ID, overwrite_logits
    )


def step_loss(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """:func:`token_loss` as the training step calls it: nothing reads the logits after the loss,
    so they hold the log-probabilities and then the gradient."""
    return token_loss(logits, tgt_out, label_smoothing, overwrite_logits=True)


__all__ = ["step_loss", "token_loss"]

"""The training loss made fast: :func:`minitrans.models.loss.token_loss` in fewer passes.

The fast model's loss (``FastTransformer.token_loss``; the RNN baselines use it too). It is
``F.cross_entropy(logits, target, ignore_index=PAD_ID, label_smoothing=ε, reduction="sum")``
(tests hold them equal, values and gradients) computed with fewer passes over the (N, V)
scores: the forward keeps one (N, V) buffer, the log-probabilities, and the backward turns it
in place into the gradient ``softmax − ((1 − ε)·onehot + ε / V)``. PyTorch's own pair of
kernels writes and reads the (N, V) array about three times more (log-softmax, the smoothing
term's fill and add, log-softmax's backward, copies); on the CPU it was about a sixth of a
training step of the small benchmark model (docs/performance.md).
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.data.tokenizer import PAD_ID


class _SmoothedCrossEntropy(torch.autograd.Function):
    """logits (N, V), target (N,) -> the summed loss (); backward: (softmax − q) · grad."""

    @staticmethod
    def forward(
        ctx, logits: Tensor, target: Tensor, label_smoothing: float, ignore_index: int, overwrite: bool
    ) -> Tensor:
        vocab = logits.shape[-1]
        owner = logits if logits._base is None else logits._base  # the tensor whose buffer this view shares
        if overwrite and not owner.is_leaf and logits.dtype == torch.float32 and logits.is_contiguous():
            log_probs = torch.log_softmax(logits, dim=-1, out=logits)  # (N, V), in the logits' own buffer
        else:
            log_probs = torch.log_softmax(logits.float(), dim=-1)  # (N, V), float32 whatever the logits' dtype
        ignored = (target == ignore_index).nonzero().squeeze(1)  # (P,) rows that are padding
        safe_target = target.index_fill(0, ignored, 0)  # (N,) a valid index on ignored rows
        per_token = log_probs.gather(1, safe_target[:, None]).squeeze(1) * -(1.0 - label_smoothing)  # (N,)
        if label_smoothing:
            per_token = per_token - log_probs.sum(dim=-1) * (label_smoothing / vocab)
        loss = per_token.index_fill(0, ignored, 0.0).sum()
        if ctx.needs_input_grad[0]:
            ctx.save_for_backward(log_probs, safe_target, ignored)
            ctx.label_smoothing, ctx.logits_dtype, ctx.used = label_smoothing, logits.dtype, False
        return loss

    @staticmethod
    def backward(ctx, grad: Tensor):
        if ctx.used:  # the saved log-probabilities became the gradient in place
            raise RuntimeError("token_loss: backward through the same loss twice (retain_graph) is not supported")
        ctx.used = True
        log_probs, target, ignored = ctx.saved_tensors
        vocab, smoothing = log_probs.shape[-1], ctx.label_smoothing
        scores = log_probs.exp_()  # (N, V) softmax, in the log-probabilities' buffer
        scores.scatter_add_(1, target[:, None], scores.new_full((target.shape[0], 1), smoothing - 1.0))
        if smoothing:
            scores.sub_(smoothing / vocab)
        scores.index_fill_(0, ignored, 0.0).mul_(grad)
        return scores.to(ctx.logits_dtype), None, None, None, None


def token_loss(logits: Tensor, tgt_out: Tensor, label_smoothing: float = 0.0, overwrite_logits: bool = False) -> Tensor:
    """Summed (label-smoothed) cross-entropy over real target tokens: logits (B, T, V),
    tgt_out (B, T) -> (). Computed in float32 whatever the logits' dtype (e.g. bfloat16 under
    autocast); its gradient comes back in the logits' dtype.

    ``overwrite_logits``: the caller is done with ``logits`` (the training step): float32
    contiguous logits then hold the log-probabilities and later the gradient, so the whole
    step allocates one (N, V) array instead of two, and does not fault a fresh one into memory.
    Afterwards ``logits`` no longer holds the scores; a leaf tensor is never overwritten. (Were
    they saved for the backward of the layer that made them, autograd would refuse the modified
    tensor rather than go wrong.)"""
    vocab = logits.shape[-1]
    return _SmoothedCrossEntropy.apply(
        logits.reshape(-1, vocab), tgt_out.reshape(-1), float(label_smoothing), PAD_ID, overwrite_logits
    )


__all__ = ["token_loss"]

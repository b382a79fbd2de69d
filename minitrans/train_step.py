"""The one training step: forward, loss, backward, gradient clipping, optimizer update.

``Trainer`` and the training benchmark both call :func:`train_step`, so a speed-up measured by
the benchmark is one the trainer gets. Mixed precision lives here only, as ``autocast_dtype``:
None (the default, and what the trainer uses unless told otherwise) runs in float32 with no
autocast at all; ``torch.bfloat16`` runs the forward pass under ``torch.autocast`` (the loss is
still computed in float32, see :func:`minitrans.loss.token_loss`). bfloat16 has float32's
range, so no gradient scaler is needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor, nn

from minitrans.data.batching import Batch
from minitrans.loss import token_loss


def make_optimizer(
    parameters: Iterable[nn.Parameter], lr: float, betas: Sequence[float], weight_decay: float = 0.0
) -> torch.optim.Optimizer:
    """Adam with the given peak learning rate (the schedule, if any, scales it)."""
    return torch.optim.Adam(parameters, lr=lr, betas=tuple(betas), weight_decay=weight_decay)


def _no_reduction(loss: Tensor) -> Tensor:
    return loss


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    loss_scale: float,
    label_smoothing: float,
    clip_grad_norm: float,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    autocast_dtype: torch.dtype | None = None,
    reduce_loss: Callable[[Tensor], Tensor] = _no_reduction,
) -> Tensor | None:
    """One update of the optimizer's parameters from ``batch`` (already on the model's device).

    ``model`` is what runs forward (it may be wrapped by DistributedDataParallel or
    torch.compile); the gradients clipped and applied are those of the optimizer's parameters.
    The summed token loss is multiplied by ``loss_scale`` (1 / the target tokens of the batch,
    or of the global batch when ``batch`` is one rank's share) before ``backward``.
    ``reduce_loss`` turns this process's scaled loss into the batch's mean (e.g. a sum over
    ranks). Returns that mean, a 0-d float tensor, or None when it or the gradient norm was not
    finite: then nothing is updated and the gradients are cleared.
    """
    model.train()
    precision = (
        contextlib.nullcontext()
        if autocast_dtype is None
        else torch.autocast(batch.src.device.type, dtype=autocast_dtype)
    )
    with precision:
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = token_loss(logits, batch.tgt_out, label_smoothing) * loss_scale
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad_norm)
    mean_loss = reduce_loss(loss.detach().float())
    if not (torch.isfinite(mean_loss) and torch.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        return None
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return mean_loss


__all__ = ["make_optimizer", "train_step"]

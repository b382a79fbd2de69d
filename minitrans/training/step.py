"""The one training step: forward, loss, backward, gradient clipping, optimizer update.

``Trainer`` and the training benchmark both call :func:`train_step`, so a speed-up measured by
the benchmark is one the trainer gets. Mixed precision lives here only, as ``autocast_dtype``:
None runs in float32 with no autocast at all; ``torch.bfloat16`` runs the forward pass under
``torch.autocast`` (the loss is still computed in float32, see :func:`minitrans.models.loss.token_loss`).
The loss is the caller's (:func:`minitrans.models.build.training_loss`: the fast one overwrites the
spent logits in place, the notes one is ``F.cross_entropy``).
:func:`autocast_dtype_for` turns ``trainer.precision`` into that choice.

Policy: bfloat16 only, never float16, and no loss scale. bfloat16 keeps float32's exponent
range, so small gradients do not underflow and nothing needs scaling; float16 would need a
dynamic ``GradScaler``, whose deliberately skipped overflow steps would blur with the trainer's
own guard against non-finite steps. The master weights, their gradients and Adam's state stay
float32 (autocast casts a bfloat16 copy of a weight for each matrix product), and so do the
loss, layer norms and softmaxes (autocast's float32 list).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor, nn

from minitrans.core.config import PRECISIONS
from minitrans.data.batching import Batch
from minitrans.data.tokenizer import PAD_ID
from minitrans.models.loss import token_loss

FUSED_ADAM_DEVICES = ("cpu", "cuda")  # where torch.optim.Adam(fused=True) has a kernel


def autocast_dtype_for(precision: str, device: torch.device) -> torch.dtype | None:
    """``trainer.precision`` on ``device``: None (float32 throughout) or ``torch.bfloat16``.

    ``auto`` is bfloat16 on CUDA GPUs that support it and float32 elsewhere. ``native`` is
    bfloat16 wherever the hardware computes it natively: such a CUDA GPU, or a CPU with
    AVX512-BF16 or AMX; float32 elsewhere, where bfloat16 is emulated slowly. On the CPU it pays
    for models large enough for the matrix products to dominate (the Multi30k model's), not for
    the default model's, where the casts cost more than they save (docs/performance.md, mixed
    precision), so ``auto`` leaves the CPU in float32."""
    if precision == "fp32":
        return None
    if precision == "bf16":
        return torch.bfloat16
    if precision not in ("auto", "native"):
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    if precision == "native" and device.type == "cpu" and cpu_has_native_bf16():
        return torch.bfloat16
    return None


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (AVX512-BF16 or AMX tiles)."""
    probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(probe() for probe in probes if probe is not None)


def enable_tf32(device: torch.device) -> None:
    """Let float32 matrix products on CUDA use TF32 tensor cores (those left outside autocast:
    validation, decoding). Process-wide; nothing on the CPU."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.fp32_precision = "tf32"


def make_optimizer(
    parameters: Iterable[nn.Parameter], lr: float, betas: Sequence[float], weight_decay: float = 0.0
) -> torch.optim.Optimizer:
    """Adam with the given peak learning rate (the schedule, if any, scales it); its fused
    kernel where the parameters' device has one (faster than the default per-tensor loop;
    docs/performance.md), else PyTorch's default."""
    parameters = list(parameters)
    fused = bool(parameters) and all(p.device.type in FUSED_ADAM_DEVICES for p in parameters)
    return torch.optim.Adam(
        parameters, lr=lr, betas=tuple(betas), weight_decay=weight_decay, fused=True if fused else None
    )


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """``optimizer.load_state_dict(state)`` keeping this optimizer's own kernel choice: the saved
    groups carry their writer's ``fused`` / ``foreach`` flags (an older checkpoint's, or another
    device's), and the state is placed for the kernel that will run."""
    kernels = [{key: group.get(key) for key in ("fused", "foreach")} for group in optimizer.param_groups]
    groups = state.get("param_groups", [])
    if len(groups) == len(kernels):
        state = {**state, "param_groups": [{**saved, **kept} for saved, kept in zip(groups, kernels)]}
    optimizer.load_state_dict(state)


def _no_reduction(loss: Tensor) -> Tensor:
    return loss


def agreement_loss(logits: Tensor, tgt_out: Tensor) -> Tensor:
    """R-Drop's term (Liang et al. 2021) for a batch run twice: logits (2B, T, V), the two copies
    one after the other, each with its own dropout masks; tgt_out (B, T) -> (). The symmetric KL
    divergence between the two copies' predicted distributions, KL(p1 || p2) + KL(p2 || p1) =
    sum over words of (p1 - p2)(log p1 - log p2), summed over the real target tokens, in float32."""
    first, second = logits.float().log_softmax(dim=-1).chunk(2)  # (B, T, V) each
    both_ways = (first.exp() - second.exp()) * (first - second)  # (B, T, V)
    return both_ways.sum(dim=-1).masked_fill(tgt_out == PAD_ID, 0.0).sum()  # (B, T) -> ()


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    loss_scale: float,
    label_smoothing: float,
    clip_grad_norm: float,
    autocast_dtype: torch.dtype | None = None,
    reduce_loss: Callable[[Tensor], Tensor] = _no_reduction,
    loss_fn: Callable[[Tensor, Tensor, float], Tensor] = token_loss,
    r_drop: float = 0.0,
) -> Tensor | None:
    """One update of the optimizer's parameters from ``batch`` (already on the model's device).

    ``model`` is what runs forward (it may be wrapped by DistributedDataParallel or
    torch.compile); the gradients clipped and applied are those of the optimizer's parameters.
    The summed token loss is multiplied by ``loss_scale`` (1 / the target tokens of the batch,
    or of the global batch when ``batch`` is one rank's share) before ``backward``.
    ``reduce_loss`` turns this process's scaled loss into the batch's mean (e.g. a sum over
    ranks). ``loss_fn(logits, tgt_out, label_smoothing)`` is the summed token loss
    (:func:`minitrans.models.build.training_loss` gives the model's). Returns that mean, a 0-d float tensor, or None when it or the gradient norm was not
    finite: then nothing is updated and the gradients are cleared. The learning-rate schedule is
    the caller's to step (the trainer steps it once its ranks agree on the training time).

    ``r_drop`` > 0 runs the batch twice in one forward pass (the copies stacked, so each draws
    its own dropout masks) and minimises the mean of the two copies' token losses plus
    ``r_drop / 4`` times their :func:`agreement_loss`: R-Drop's loss with weight ``r_drop``,
    halved. What it returns is still the token loss alone, comparable with a run without it.
    """
    model.train()
    precision = (
        contextlib.nullcontext()
        if autocast_dtype is None
        else torch.autocast(batch.src.device.type, dtype=autocast_dtype)
    )
    with precision:
        if r_drop > 0:
            src, tgt_in, tgt_out = (torch.cat([part, part]) for part in (batch.src, batch.tgt_in, batch.tgt_out))
            logits = model(src, tgt_in)  # (2B, T, V)
            agreement = agreement_loss(logits, batch.tgt_out)  # before the loss, which may reuse the logits
            loss = loss_fn(logits, tgt_out, label_smoothing) * (loss_scale / 2)  # the copies' mean
            objective = loss + agreement * (r_drop / 4 * loss_scale)
        else:
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            # nothing reads the logits after the loss, which may reuse their buffer (the fast loss does)
            loss = objective = loss_fn(logits, batch.tgt_out, label_smoothing) * loss_scale
    optimizer.zero_grad(set_to_none=True)
    objective.backward()
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    grad_norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad_norm)
    mean_loss = reduce_loss(loss.detach().float())
    if not (torch.isfinite(mean_loss) and torch.isfinite(grad_norm)):
        optimizer.zero_grad(set_to_none=True)
        return None
    optimizer.step()
    return mean_loss


__all__ = [
    "agreement_loss",
    "autocast_dtype_for",
    "enable_tf32",
    "load_optimizer_state",
    "make_optimizer",
    "train_step",
]

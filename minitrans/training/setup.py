"""What a run trains on and with: the device, the model, checked to fit before it is built (or built to a checkpoint's
weights), and the form the training step runs it in (DistributedDataParallel across processes,
``torch.compile`` when asked)."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.checks import ConfigError
from minitrans.core.config import RNNConfig, TransformerConfig
from minitrans.core.utils import pick_device
from minitrans.data.tokenizer import Tokenizer
from minitrans.models.build import build_model, build_model_for_weights, memory_bytes, model_bytes
from minitrans.training.distributed import DistInfo

log = logging.getLogger(__name__)


def training_device(name: str) -> torch.device:
    """``trainer.device`` as a torch device; one this machine lacks is a ConfigError naming the key."""
    try:
        return pick_device(name)
    except ValueError as error:
        raise ConfigError(f"trainer.device: {error}") from None


def model_to_train(
    cfg: TransformerConfig | RNNConfig,
    tokenizer: Tokenizer,
    payload: dict | None,
    path: Path | None,
    is_main: bool = True,
) -> nn.Module:
    """The configured model, once it is known to fit: in memory with its gradients and
    optimizer state, and (when resuming from ``payload``, read from ``path``) to its weights.
    A teaching switch that makes the model cheat is warned of once, by the main process."""
    if is_main and not getattr(cfg, "causal_mask", True):
        log.warning(
            "model.causal_mask=false: the decoder sees the target's future words while training, so it will "
            "learn to copy them (a teaching switch; its translations, made word by word, will be poor)"
        )
    if payload is not None:
        try:
            return build_model_for_weights(cfg, tokenizer, payload.get("model", {}))
        except (ValueError, TypeError, AttributeError) as error:
            raise CheckpointError(f"{path} does not hold a usable model: {error}") from None
    _, size = model_bytes(cfg, tokenizer)
    memory = memory_bytes()
    if memory is not None and 4 * size > memory:  # weights, gradients, Adam's two moments
        raise ConfigError(
            f"model: {size / 2**30:.1f} GiB of weights need about {4 * size / 2**30:.1f} GiB to train, "
            f"more than this machine's {memory / 2**30:.1f} GiB; choose a smaller model"
        )
    return build_model(cfg, tokenizer)


def wrap_for_training(model: nn.Module, dist: DistInfo, device: torch.device, compile: bool) -> nn.Module:
    """The module the training step calls: DDP around ``model`` when several processes train
    (rank 0's initial weights are broadcast to every rank here), compiled when asked."""
    wrapped = model
    if dist.enabled:
        ids = [device.index] if device.type == "cuda" else None
        # buffers (positional tables) are the same on every rank: no broadcast before each forward
        # (torch >= 2.13 names this forward_sync_buffers and deprecates broadcast_buffers)
        names = inspect.signature(DistributedDataParallel.__init__).parameters
        no_sync = {"forward_sync_buffers": False} if "forward_sync_buffers" in names else {"broadcast_buffers": False}
        wrapped = DistributedDataParallel(model, device_ids=ids, **no_sync)
    return torch.compile(wrapped) if compile else wrapped


__all__ = ["model_to_train", "training_device", "wrap_for_training"]

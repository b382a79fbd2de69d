"""The two training steps the benchmark times side by side, and their peak memory.

minitrans trains with the trainer's own step (:func:`minitrans.training.step.train_step`);
``torch.nn.Transformer`` with the update PyTorch's defaults write (``F.cross_entropy``,
``torch.optim.Adam``'s default kernel), with the same learning rate, clipping and smoothing. The
peak memory of a step is measured on CUDA by the allocator, on the CPU in a fresh subprocess per
model (the growth of its peak resident set over the timed steps).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from minitrans.bench.measure import peak_rss_mib, reset_peak_rss
from minitrans.bench.reference import build
from minitrans.core.config import TransformerConfig
from minitrans.data.batching import Batch
from minitrans.data.tokenizer import PAD_ID
from minitrans.models.build import training_loss
from minitrans.models.loss import token_loss
from minitrans.training.step import autocast_dtype_for, make_optimizer, train_step

LR, BETAS, LABEL_SMOOTHING, CLIP_GRAD_NORM = 1e-4, (0.9, 0.98), 0.1, 1.0  # a fixed rate: no schedule to time


# -- one training step: the trainer's own (minitrans.training.step), and PyTorch's -------------
def make_step(model: nn.Module, device: torch.device, precision: str = "auto", loss_fn=token_loss):
    """The trainer's step at a fixed learning rate: forward, ``loss_fn``, backward, clip, Adam,
    under ``trainer.precision``'s autocast. The returned function takes a :class:`~minitrans.data.Batch`."""
    optimizer = make_optimizer(model.parameters(), LR, BETAS)
    autocast_dtype = autocast_dtype_for(precision, device)

    def step(batch) -> None:
        train_step(
            model,
            optimizer,
            batch,
            loss_scale=1.0 / batch.num_tgt_tokens,
            label_smoothing=LABEL_SMOOTHING,
            clip_grad_norm=CLIP_GRAD_NORM,
            autocast_dtype=autocast_dtype,
            loss_fn=loss_fn,
        )

    return step


def loss_for(name: str):
    """The loss the trainer gives the benchmark's model ``name`` (``minitrans-notes``: the notes')."""
    return training_loss(TransformerConfig(implementation="notes" if name == "minitrans-notes" else "fast"))


def make_reference_step(model: nn.Module, device: torch.device, precision: str = "auto"):
    """The same update as PyTorch's defaults write it, for ``torch.nn.Transformer``:
    ``F.cross_entropy`` over every position (padding ignored), ``torch.optim.Adam`` with its
    default kernel, the same clipping, the same autocast."""
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS)
    autocast_dtype = autocast_dtype_for(precision, device)

    def step(batch) -> None:
        model.train()
        with torch.autocast(device.type, dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None):
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),  # (B·T, V)
                batch.tgt_out.reshape(-1),
                ignore_index=PAD_ID,
                label_smoothing=LABEL_SMOOTHING,
                reduction="sum",
            )
        optimizer.zero_grad(set_to_none=True)
        (loss / batch.num_tgt_tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_GRAD_NORM)
        optimizer.step()

    return step


def step_for(name: str, model: nn.Module, device: torch.device, precision: str = "auto"):
    """minitrans (and its compiled twin) train with the trainer's step; ``torch`` with PyTorch's."""
    if name == "torch":
        return make_reference_step(model, device, precision)
    return make_step(model, device, precision, loss_for(name))


# -- peak memory -------------------------------------------------------------------------------
def _memory_probe(spec_path: str) -> None:
    """Subprocess body: build one model, then report the peak RSS before and after training steps."""
    spec = torch.load(spec_path, weights_only=True)  # plain values and tensors only
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    batches = [Batch(s, i, o, n) for s, i, o, n in spec["batches"]]
    model = build(spec["name"], spec["vocab_size"], TransformerConfig(**spec["size"]))
    step = step_for(spec["name"], model, torch.device("cpu"), spec["precision"])
    reset_peak_rss()
    before = peak_rss_mib()
    for batch in batches:
        step(batch)
    print(json.dumps({"before_mib": before, "peak_mib": peak_rss_mib()}))


def peak_memory_mib(name: str, size: TransformerConfig, vocab_size: int, batches, device, precision="auto") -> dict:
    if device.type == "cuda":
        torch.manual_seed(0)
        model = build(name, vocab_size, size).to(device)
        step = step_for(name, model, device, precision)
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        for batch in batches:
            step(batch.to(device))
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device)
        del model, step
        torch.cuda.empty_cache()
        return {"before_mib": before / 2**20, "peak_mib": peak / 2**20, "training_mib": (peak - before) / 2**20}
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = str(Path(tmp) / "spec.pt")
        fields = [(b.src, b.tgt_in, b.tgt_out, b.num_tgt_tokens) for b in batches]
        spec = {"name": name, "size": asdict(size), "vocab_size": vocab_size}
        spec |= {"threads": torch.get_num_threads(), "batches": fields, "precision": precision}
        torch.save(spec, spec_path)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path]))
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from minitrans.bench.steps import _memory_probe; _memory_probe(sys.argv[1])",
                spec_path,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["training_mib"] = figures["peak_mib"] - figures["before_mib"]
    return figures

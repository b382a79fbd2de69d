"""What each speed measure of the fast model earns, on the workload it serves, side by side.

``python -m minitrans.bench.speed_measures [--checkpoint RUN] [--repeats N]`` times, in one
process and one thread, the fast model with every measure on against the same model with one
measure turned off, the two taking turns repeat by repeat (so the drift of a shared machine
hits both alike), and prints each measure's gain — the time without it over the time with it —
as the median and the range over the repeats, from process CPU time. Workloads:

- ``default step``: one rank's training step of the default run (d_model 128, float32, dropout 0,
  a half of the default 2,048-token batch, the default corpus's sentence lengths);
- ``multi30k step``: one rank's step of the Multi30k recipe (d_model 256, 3+3 layers, dropout
  0.2, bfloat16 autocast where the CPU computes it natively, else float32);
- ``beam 5``: translating the test split of ``--checkpoint`` (a trained run) with beam 5 and the
  run's length penalty; the outputs of both sides are compared, and must be equal.

The measures are those ``models/fast/__init__.py`` lists; a measure turned off falls back to the
notes model's own computation for that piece. Each workload's first line turns nothing off: both
sides run the same code, so its ratio is the harness's own bias and spread on this machine, the
yardstick the measures below it are read against (a measure counts only beyond it). This module
is, with ``models/build.py``, the one place outside ``models/fast/`` that names the fast room's
pieces (to turn them off one by one).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn

import minitrans.models.fast.attention as fast_attention
from minitrans.core.checkpoint import CheckpointError
from minitrans.core.config import TransformerConfig
from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.batching import TokenBatchSampler, collate
from minitrans.data.corpus import load_run_split
from minitrans.export.loading import load_torch_translator
from minitrans.inference import decoding
from minitrans.inference.translator import Translator
from minitrans.models.build import VocabSizes, build_model, training_loss
from minitrans.models.fast.dropout import Dropout
from minitrans.models.fast.loss import WORKSPACE
from minitrans.models.fast.packed_tokens import PackedTokens
from minitrans.models.fast.transformer import FastFeedForward, FastResidual, FastTransformer
from minitrans.models.interface import Seq2SeqModel
from minitrans.models.loss import token_loss
from minitrans.models.transformer import FeedForward, Residual, Transformer
from minitrans.training.step import autocast_dtype_for, make_optimizer, train_step

AA = "nothing turned off (both sides the same: the harness itself)"
DEFAULT_SIZE = TransformerConfig()
MULTI30K_SIZE = TransformerConfig(
    d_model=256, num_heads=8, d_ff=1024, num_encoder_layers=3, num_decoder_layers=3
).with_dropout(0.2)


@contextlib.contextmanager
def patched(owner, name: str, value) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


@contextlib.contextmanager
def classes_reverted(model: nn.Module, fast_to_notes: dict[type, type]) -> Iterator[None]:
    """The modules of ``model`` whose class is a key take the notes class, for the block."""
    changed = [(module, type(module)) for module in model.modules() if type(module) in fast_to_notes]
    for module, fast in changed:
        module.__class__ = fast_to_notes[fast]
    try:
        yield
    finally:
        for module, fast in changed:
            module.__class__ = fast


@contextlib.contextmanager
def fused_off(model: nn.Module) -> Iterator[None]:
    # the fast class says use_fused = True; a module's own attribute, set here, overrides it
    attentions = [(m, vars(m).get("use_fused")) for m in model.modules() if hasattr(m, "use_fused")]
    for module, _ in attentions:
        module.use_fused = False
    try:
        yield
    finally:
        for module, own in attentions:
            if own is None:
                del module.use_fused
            else:
                module.use_fused = own


def _torch_topk(x, k):
    return x.topk(k, dim=1)


def step_measures(model: nn.Module) -> dict[str, Callable[[], contextlib.AbstractContextManager]]:
    """Each training-step measure: a context manager that turns it off (the loss is chosen by
    the step itself, ``loss`` below)."""
    return {
        AA: contextlib.nullcontext,
        "fused attention kernel": lambda: fused_off(model),
        "dropout from packed bits, fused with ReLU and the residual add": lambda: classes_reverted(
            model, {Dropout: nn.Dropout, FastFeedForward: FeedForward, FastResidual: Residual}
        ),
        "encoder on real tokens only (packed_tokens)": lambda: patched(
            PackedTokens, "is_worth_it", staticmethod(lambda *a: False)
        ),
        "no source mask when nothing is padded, and packing": lambda: patched(
            FastTransformer, "encode", Transformer.encode
        ),
        "the loss's float32 workspace under bfloat16": lambda: patched(WORKSPACE, "take", lambda *a, **k: None),
    }


def decoding_measures(model: nn.Module) -> dict[str, Callable[[], contextlib.AbstractContextManager]]:
    return {
        AA: contextlib.nullcontext,
        "fused attention kernel": lambda: fused_off(model),
        "written-out attention for a step's few queries": lambda: patched(fast_attention, "FEW_QUERIES", 0),
        "beams sharing the source's keys and values": lambda: patched(
            FastTransformer, "reorder_cache", Seq2SeqModel.reorder_cache
        ),
        "grouped top-k": lambda: patched(decoding, "top_k", _torch_topk),
    }


def synthetic_batches(vocab: int, mean: float, spread: float, batch_tokens: int, count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    src_len = np.clip(rng.normal(mean, spread, 20000).round(), 3, 90).astype(int)
    tgt_len = np.clip((src_len * rng.normal(1.0, 0.15, len(src_len))).round(), 2, 90).astype(int)
    src = [rng.integers(4, vocab, n).tolist() for n in src_len]
    tgt = [rng.integers(4, vocab, n).tolist() for n in tgt_len]
    epoch = TokenBatchSampler([len(s) for s in src], [len(t) for t in tgt], batch_tokens, seed=seed).batches(0)
    return [collate([src[i] for i in b], [tgt[i] for i in b]) for b in epoch[:count]]


def time_pair(run: Callable[[], object], off: Callable[[], contextlib.AbstractContextManager], repeats: int):
    """Gains (time off / time on, process CPU seconds) over ``repeats`` alternating turns."""
    gains = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        on = time.process_time() - start
        with off():
            start = time.process_time()
            run()
            without = time.process_time() - start
        gains.append(without / on)
    return gains


def summary(gains: list[float]) -> str:
    return f"{statistics.median(gains):.3f}x [{min(gains):.3f}-{max(gains):.3f}]"


def measure_step(name: str, size: TransformerConfig, vocab: int, lengths, batch_tokens, precision, args) -> None:
    torch.manual_seed(0)
    model = build_model(size, VocabSizes(vocab, vocab))
    optimizer = make_optimizer(model.parameters(), 1e-4, (0.9, 0.98))
    autocast = autocast_dtype_for(precision, torch.device("cpu"))
    batches = synthetic_batches(vocab, *lengths, batch_tokens, args.batches)
    losses = {"fast": training_loss(size)}  # the step's loss: the fast one unless turned off below

    def run():
        for batch in batches:
            loss_fn = losses["fast"] or token_loss
            train_step(model, optimizer, batch, 1.0 / batch.num_tgt_tokens, 0.1, 1.0, autocast, loss_fn=loss_fn)

    run()  # warm-up
    precision_name = "bfloat16" if autocast is not None else "float32"
    print(f"\n{name} ({precision_name}, {len(batches)} batches of {batch_tokens} tokens, {args.repeats} repeats)")
    measures = step_measures(model)
    if size.dropout == 0:
        measures.pop("dropout from packed bits, fused with ReLU and the residual add")
    if size.attention_dropout > 0:  # with dropout on the weights a CPU step never takes the kernel
        measures.pop("fused attention kernel")  # (fused_kernel_pays): nothing to turn off
    if autocast is None:
        measures.pop("the loss's float32 workspace under bfloat16")

    @contextlib.contextmanager
    def plain_loss():
        fast, losses["fast"] = losses["fast"], None
        try:
            yield
        finally:
            losses["fast"] = fast

    measures["the loss in fewer passes, in the logits' memory"] = plain_loss
    for measure, off in measures.items():
        print(f"  {measure:66s} {summary(time_pair(run, off, args.repeats))}")


def measure_decoding(translator: Translator, args) -> None:
    run_dir = args.checkpoint
    sentences, _, _ = load_run_split(translator.config, "test")
    src_ids = translator.encode(list(sentences)[: args.sentences])
    penalty = translator.run_config.trainer.length_penalty
    options = DecodingOptions(beam_size=5, length_penalty=penalty)
    outputs = {}

    def run():
        outputs["last"] = translator.translate_encoded(src_ids, options)

    run()
    reference = outputs["last"]
    print(f"\nbeam 5 ({len(src_ids)} test sentences of {run_dir}, length penalty {penalty}, {args.repeats} repeats)")
    for measure, off in decoding_measures(translator.model).items():
        gains = time_pair(run, off, args.repeats)
        differ = sum(a != b for a, b in zip(outputs["last"], reference))
        print(f"  {measure:66s} {summary(gains)}  ({differ} outputs differ)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minitrans.bench.speed_measures", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--checkpoint", help="a trained run for the beam-5 workload (skipped without)")
    parser.add_argument("--repeats", type=int, default=5, help="alternating turns per measure (default 5)")
    parser.add_argument("--batches", type=int, default=6, help="training batches per turn (default 6)")
    parser.add_argument("--sentences", type=int, default=300, help="test sentences per decoding turn (default 300)")
    parser.add_argument("--workloads", default="default,multi30k,beam5", help="comma-separated (default: all three)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    workloads = args.workloads.split(",")
    translator = None
    if "beam5" in workloads and args.checkpoint:
        try:  # before minutes of measuring, not after
            translator = load_torch_translator(args.checkpoint, "cpu")
        except (CheckpointError, FileNotFoundError) as error:
            parser.error(f"--checkpoint: {error}")
    if "default" in workloads:
        measure_step("default step", DEFAULT_SIZE, 2000, (25.0, 10.0), 1024, "fp32", args)
    if "multi30k" in workloads:
        measure_step("multi30k step", MULTI30K_SIZE, 8000, (16.0, 6.0), 2048, "native", args)
    if translator is not None:
        measure_decoding(translator, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

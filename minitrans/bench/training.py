"""Training speed of the minitrans Transformer against ``torch.nn.Transformer``, side by side.

Both models get the same sizes, the same batches, the same embeddings (one table shared by
source and target, tied to the output projection), sinusoidal positions, pre/post-norm,
dropout, masks (source key padding, causal target, memory key padding), the same loss
(label-smoothed cross-entropy summed over real target tokens, over the batch's target tokens)
and the same update (gradient clipping, Adam with the same settings). minitrans trains with
the trainer's own step (:func:`minitrans.training.step.train_step`: its fused loss, Adam's fused
kernel); ``torch.nn.Transformer`` with the step PyTorch's defaults give (``F.cross_entropy``,
``torch.optim.Adam``'s default kernel). Both run under the same precision (``--precision``:
bfloat16 autocast on CUDA by default, float32 on the CPU). They are timed in one process, taking turns batch by batch, so the drift of
a shared machine hits both alike; ratios are per repeat (a pass over the timed batches), then
the median, from wall time and from process CPU time (steadier when others load the machine).

Figures:
- target tokens per second of training (real, non-pad target tokens / wall time);
- model FLOPs utilisation: analytic training FLOPs per second over the float32 (bfloat16
  under bfloat16 autocast) matrix-multiply rate measured in the same run (best of several big ``torch.mm``)::

      FLOPs/step = 6 · (matmul MACs per forward)
      matmul MACs = B·S·(Le·(4D² + 2DF) + Ld·2D²)            encoder layers, cross-attn K/V
                  + B·T·(Ld·(6D² + 2DF) + D·V)                decoder layers, output layer
                  + B·D·(Le·S² + Ld·(T² + T·S))·2             attention scores and values

  (B, S, T the padded batch shape, D model width, F feed-forward width, V vocabulary; 2 FLOPs
  per multiply-add, backward twice the forward; biases, norms, softmax, embeddings ignored;
  the causal half of decoder self-attention counted, as the kernels compute it);
- peak memory: on CUDA ``torch.cuda.max_memory_allocated``; on the CPU the growth of the
  process's peak resident set (Linux ``VmHWM``, reset after set-up; elsewhere ``ru_maxrss``)
  over the timed steps, each model in its own fresh subprocess, above the level reached after
  building the model, optimizer and batches (so it counts gradients, Adam state, activations);
- the padding fraction of the token-bucketed batches of a whole epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from dataclasses import asdict, replace
from pathlib import Path

import torch

from minitrans.bench.batches import load_batches
from minitrans.bench.measure import (
    cpu_isa,
    device_name,
    matmul_rate,
    time_interleaved,
    training_flops,
)
from minitrans.bench.reference import MODEL_NAMES, build
from minitrans.bench.steps import (
    BETAS,
    CLIP_GRAD_NORM,
    LABEL_SMOOTHING,
    LR,
    loss_for,
    make_step,
    peak_memory_mib,
    step_for,
)
from minitrans.core.checks import cli_number
from minitrans.core.config import MAX_VOCAB, PRECISIONS, TransformerConfig
from minitrans.core.utils import pick_device
from minitrans.data.tokenizer import PAD_ID
from minitrans.training.step import autocast_dtype_for


def _size(d_model: int, num_heads: int, d_ff: int, layers: int) -> TransformerConfig:
    return TransformerConfig(
        d_model=d_model, num_heads=num_heads, d_ff=d_ff, num_encoder_layers=layers, num_decoder_layers=layers
    )


SIZES = {
    "tiny": _size(64, 4, 128, 1),  # smoke tests
    "small": _size(256, 8, 1024, 3),  # Multi30k-sized
    "large": _size(512, 8, 2048, 6),  # Transformer-base
}


# -- the whole benchmark ---------------------------------------------------------------------
MEMORY_METHOD = {
    "cpu": "growth of the peak resident set (Linux VmHWM, reset after set-up; else getrusage ru_maxrss) "
    "over the timed steps, each model in a fresh subprocess, above the level after building model, "
    "optimizer and batches",
    "cuda": "torch.cuda.max_memory_allocated during the timed steps minus memory allocated before them",
}


def ratio_figures(seconds: list[float], reference_seconds: list[float]) -> dict:
    """How many times faster than the reference, repeat by repeat, and the median."""
    ratios = [ref / own for own, ref in zip(seconds, reference_seconds)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "per_repeat": ratios}


def benchmark_size(name: str, size: TransformerConfig, batches, vocab_size, options, device) -> dict:
    size = replace(size.with_dropout(options["dropout"]), norm_first=options["norm_first"])
    models, steps = {}, {}
    for model_name in MODEL_NAMES:
        torch.manual_seed(0)
        models[model_name] = build(model_name, vocab_size, size)
        models[model_name].to(device)
        steps[model_name] = step_for(model_name, models[model_name], device, options["precision"])
    if options.get("compile"):
        torch.manual_seed(0)
        compiled = build("minitrans", vocab_size, size).to(device)
        steps["minitrans+compile"] = make_step(
            torch.compile(compiled, dynamic=True), device, options["precision"], loss_for("minitrans")
        )
        models["minitrans+compile"] = compiled
    on_device = [b.to(device) for b in batches]
    wall, cpu, warmup_seconds = time_interleaved(steps, on_device, options["warmup"], options["repeats"], device)
    timed = batches[options["warmup"] :]
    tokens = sum(b.num_tgt_tokens for b in timed)
    positions = sum(b.src.numel() + b.tgt_out.numel() for b in timed)
    real = sum(int((b.src != PAD_ID).sum()) + b.num_tgt_tokens for b in timed)
    flops = sum(training_flops(size, vocab_size, b.src.shape[0], b.src.shape[1], b.tgt_in.shape[1]) for b in timed)
    result = {
        "size": name,
        "config": asdict(size) | {"vocab_size": vocab_size},
        "params": {n: sum(p.numel() for p in m.parameters()) for n, m in models.items()},
        "timed_batches": len(timed),
        "target_tokens_per_pass": tokens,
        "padding_fraction": 1 - real / positions,
        "flops_per_pass": flops,
        "seconds": wall,
        "cpu_seconds": cpu,
        "warmup_seconds": warmup_seconds,
        "tokens_per_second": {n: tokens / statistics.median(s) for n, s in wall.items()},
        "flops_per_second": {n: flops / statistics.median(s) for n, s in wall.items()},
        "ratio_vs_torch": {n: ratio_figures(wall[n], wall["torch"]) for n in wall if n != "torch"},
        "cpu_time_ratio_vs_torch": {n: ratio_figures(cpu[n], cpu["torch"]) for n in cpu if n != "torch"},
    }
    del models, steps
    if options["memory"]:
        result["peak_memory"] = {
            n: peak_memory_mib(n, size, vocab_size, timed, device, options["precision"]) for n in MODEL_NAMES
        }
    return result


def decoding_figures(checkpoint: str, device: torch.device) -> dict:
    """The translation benchmark's figures (:mod:`minitrans.bench.decoding`)."""
    from minitrans.bench.decoding import benchmark_decoding

    return benchmark_decoding(checkpoint, device=str(device))


def run_benchmark(
    sizes=("small", "large"),
    steps: int | None = None,
    repeats: int = 3,
    warmup: int = 2,
    threads: int | None = None,
    data: str = "auto",
    vocab_size: int = 8000,
    batch_tokens: int = 4096,
    dropout: float = 0.1,
    norm_first: bool = True,
    memory: bool = True,
    compile: bool = False,
    device: str = "auto",
    cache_dir: str | None = "~/.cache/minitrans",
    checkpoint: str | None = None,
    quick: bool = False,
    precision: str = "auto",
) -> dict:
    """Every figure of the benchmark, as a JSON-ready dict."""
    if threads:
        torch.set_num_threads(threads)
    device = pick_device(device)
    if quick:
        steps, repeats, warmup = steps or 2, min(repeats, 2), min(warmup, 1)
    steps_by_size = {name: steps or (6 if SIZES[name].d_model <= 256 else 3) for name in sizes}
    count = warmup + max(steps_by_size.values())
    batches, data_info = load_batches(data, vocab_size, batch_tokens, count, cache_dir)
    vocab_size = data_info["vocab_size"]
    autocast_dtype = autocast_dtype_for(precision, device)
    matmul_dtype = autocast_dtype or torch.float32
    peak_before, matmul_settings = matmul_rate(device, n=512 if quick else 2048, dtype=matmul_dtype)
    options = {"warmup": warmup, "repeats": repeats, "dropout": dropout, "norm_first": norm_first}
    options |= {"memory": memory, "compile": compile, "precision": precision}
    results = []
    for name in sizes:
        chosen = batches[: warmup + steps_by_size[name]]
        results.append(benchmark_size(name, SIZES[name], chosen, vocab_size, options, device))
    peak = max(peak_before, matmul_rate(device, n=512 if quick else 2048, dtype=matmul_dtype)[0])
    for result in results:  # model FLOPs utilisation against the best matmul rate of the run
        result["mfu"] = {n: rate / peak for n, rate in result["flops_per_second"].items()}
    out = {
        "machine": {
            "device": str(device),
            "device_name": device_name(device),
            "cpu_model": device_name(torch.device("cpu")),
            "cpu_isa": cpu_isa(),
            "threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "dtype": "bfloat16 autocast" if autocast_dtype is not None else "float32",
            "matmul_flops_per_second": peak,
            "matmul_settings": f"{matmul_settings}, at the start and the end of the run; the higher",
            "note": "absolute times are this machine's, at the time of the run",
        },
        "data": data_info,
        "settings": {
            "steps": steps_by_size,
            "repeats": repeats,
            "warmup": warmup,
            "dropout": dropout,
            "norm_first": norm_first,
            "label_smoothing": LABEL_SMOOTHING,
            "optimizer": f"Adam(lr={LR}, betas={BETAS})",
            "clip_grad_norm": CLIP_GRAD_NORM,
            "step": "forward + loss + backward + clip + Adam (minitrans: minitrans.training.step; torch: F.cross_entropy "
            "and torch.optim.Adam's defaults); models take turns batch by batch",
            "precision": precision,
            "memory_method": MEMORY_METHOD["cuda" if device.type == "cuda" else "cpu"] if memory else None,
        },
        "sizes": results,
        "decoding": decoding_figures(checkpoint, device) if checkpoint else None,
    }
    return out


# -- report --------------------------------------------------------------------------------
def format_report(out: dict) -> str:
    machine, data, settings = out["machine"], out["data"], out["settings"]
    lines = [
        f"minitrans training benchmark — this machine: {machine['device_name']} ({machine['device']}), "
        f"{machine['threads']} torch threads of {machine['cpu_count']} CPUs, torch {machine['torch']}, {machine['dtype']}",
        f"CPU: {machine['cpu_model']}, torch's CPU kernels built for {machine['cpu_isa']} "
        "(torch.backends.cpu.get_cpu_capability())",
        f"batches: {data['description']}; TokenBatchSampler batch_tokens={data['batch_tokens']}: "
        f"{data['batches_per_epoch']} batches/epoch, {data['mean_sentences_per_batch']:.0f} sentences and "
        f"{data['mean_target_tokens_per_batch']:.0f} target tokens per batch on average",
        f"padding fraction (whole epoch): {data['padding_fraction']:.1%} of source+target positions "
        f"(source {data['source_padding_fraction']:.1%}, target {data['target_padding_fraction']:.1%})",
        f"step: {settings['step']}; dropout {settings['dropout']}, "
        f"{'pre' if settings['norm_first'] else 'post'}-norm, label smoothing 0.1; "
        f"{settings['repeats']} repeats after {settings['warmup']} warm-up steps, medians",
        f"matmul ceiling: {machine['matmul_flops_per_second'] / 1e9:.1f} GFLOP/s ({machine['matmul_settings']})",
        "",
        f"{'size':<7}{'model':<19}{'params':>12}{'tok/s':>9}{'× torch (wall)':>23}{'× torch (CPU)':>15}"
        f"{'MFU':>7}{'peak mem':>10}",
    ]
    for result in out["sizes"]:
        cfg = result["config"]
        lines.append(
            f"{result['size']} — d_model {cfg['d_model']}, {cfg['num_heads']} heads, d_ff {cfg['d_ff']}, "
            f"{cfg['num_encoder_layers']}+{cfg['num_decoder_layers']} layers, vocab {cfg['vocab_size']}; "
            f"{result['timed_batches']} batches, {result['target_tokens_per_pass']} target tokens, "
            f"{result['padding_fraction']:.1%} padding, "
            f"{result['flops_per_pass'] / 1e9:.0f} GFLOP per pass"
        )
        for name, rate in result["tokens_per_second"].items():
            wall = result["ratio_vs_torch"].get(name)
            cpu = result["cpu_time_ratio_vs_torch"].get(name)
            wall_text = f"{wall['median']:.2f} [{wall['min']:.2f}–{wall['max']:.2f}]" if wall else "1"
            cpu_text = f"{cpu['median']:.2f}" if cpu else "1"
            memory = result.get("peak_memory", {}).get(name)
            memory_text = f"{memory['training_mib']:.0f} MiB" if memory else "—"
            lines.append(
                f"{'':<7}{name:<19}{result['params'][name]:>12,}{rate:>9,.0f}{wall_text:>23}{cpu_text:>15}"
                f"{result['mfu'][name]:>7.1%}{memory_text:>10}"
            )
    for result in out["sizes"]:
        if "minitrans+compile" in result["warmup_seconds"]:
            lines.append(
                f"{result['size']}: torch.compile(dynamic=True) + {settings['warmup']} warm-up steps took "
                f"{result['warmup_seconds']['minitrans+compile']:.0f} s (eager: "
                f"{result['warmup_seconds']['minitrans']:.0f} s)"
            )
    lines.append(
        "tok/s: real target tokens per wall second (median of repeats); × torch: how many times faster than "
        "torch.nn.Transformer, median [min–max] of per-repeat ratios; CPU: the same from process CPU time"
    )
    if settings["memory_method"]:
        lines.append(f"peak mem: {settings['memory_method']}")
    if out.get("decoding") is not None:
        lines += ["", "decoding (minitrans.bench.decoding):", json.dumps(out["decoding"], indent=2, default=str)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    sizes = ", ".join(
        f"{name} (d_model {s.d_model}, {s.num_encoder_layers}+{s.num_decoder_layers} layers)"
        for name, s in SIZES.items()
    )
    parser = argparse.ArgumentParser(
        prog="benchmark.py",
        description="Training speed of minitrans next to torch.nn.Transformer: the same sizes, batches and "
        "training step, timed side by side in one process. Prints target tokens/s, model FLOPs utilisation, "
        "peak memory and padding for each model, and their ratio.",
    )
    parser.add_argument("--sizes", default="small,large", help=f"comma-separated model sizes, of: {sizes}")
    parser.add_argument(
        "--steps",
        type=cli_number(int, 1, 10**6),
        default=None,
        help="timed steps per model and repeat (default: by size)",
    )
    parser.add_argument(
        "--repeats",
        type=cli_number(int, 1, 1000),
        default=3,
        help="passes over the timed batches; ratios are their median",
    )
    parser.add_argument(
        "--warmup", type=cli_number(int, 0, 10**4), default=2, help="untimed steps per model before timing"
    )
    parser.add_argument(
        "--threads", type=cli_number(int, 1, 4096), default=None, help="torch intra-op threads (default: torch's)"
    )
    parser.add_argument(
        "--data",
        choices=("auto", "multi30k", "synthetic"),
        default="auto",
        help="batches of tokenised Multi30k sentences, or synthetic ones (auto: Multi30k when prepared)",
    )
    parser.add_argument(
        "--vocab-size", type=cli_number(int, 8, MAX_VOCAB), default=8000, help="vocabulary of both models"
    )
    parser.add_argument(
        "--batch-tokens", type=cli_number(int, 1, 10**7), default=4096, help="source + target tokens per batch"
    )
    parser.add_argument(
        "--dropout", type=cli_number(float, 0, 1, high_open=True), default=0.1, help="dropout of both models"
    )
    parser.add_argument("--post-norm", action="store_true", help="post-norm layers (default pre-norm)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile'd minitrans")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="as trainer.precision: auto (bf16 autocast on CUDA, else fp32), native (bf16 also on a CPU with"
        " AVX512-BF16 or AMX), fp32 or bf16, for both models",
    )
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | mps (default auto)")
    parser.add_argument("--cache-dir", default="~/.cache/minitrans", help="where the Multi30k tokenizer is cached")
    parser.add_argument("--checkpoint", default=None, help="a run or checkpoint: add decoding-speed figures")
    parser.add_argument("--quick", action="store_true", help="a smoke test: few steps, small matmul")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown or not sizes:
        parser.error(f"--sizes: unknown size(s) {unknown}; choose from {', '.join(SIZES)}")
    if (args.steps is not None and args.steps < 1) or args.repeats < 1 or args.warmup < 0:
        parser.error("--steps and --repeats must be at least 1, --warmup at least 0")
    out = run_benchmark(
        sizes=sizes,
        steps=args.steps,
        repeats=args.repeats,
        warmup=args.warmup,
        threads=args.threads,
        data=args.data,
        vocab_size=args.vocab_size,
        batch_tokens=args.batch_tokens,
        dropout=args.dropout,
        norm_first=not args.post_norm,
        memory=not args.no_memory,
        compile=args.compile,
        device=args.device,
        cache_dir=args.cache_dir,
        checkpoint=args.checkpoint,
        quick=args.quick,
        precision=args.precision,
    )
    print(format_report(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str), encoding="utf-8")
    return out


__all__ = ["SIZES", "main", "run_benchmark"]

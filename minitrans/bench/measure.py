"""What the training benchmark measures with: interleaved wall and CPU timing, analytic FLOPs,
the machine's matmul rate, its name, and the process's peak resident memory."""

from __future__ import annotations

import math
import platform
import resource
import sys
import time
from pathlib import Path

import torch

from minitrans.core.config import TransformerConfig


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_interleaved(steps: dict, batches: list, warmup: int, repeats: int, device) -> tuple[dict, dict, dict]:
    """Wall and process CPU seconds per pass over ``batches[warmup:]`` for each model (one list
    entry per repeat), and the wall seconds of each model's warm-up (compilation included).

    The models take turns batch by batch, in an order that rotates, so a shared machine's drift
    reaches every model alike. CPU time (all threads of this process) counts none of the time
    other processes hold the cores, so on a busy machine it is the steadier of the two."""
    names = list(steps)
    warmup_seconds = {}
    for name in names:
        started = time.perf_counter()
        for batch in batches[:warmup]:
            steps[name](batch)
        synchronize(device)
        warmup_seconds[name] = time.perf_counter() - started
    wall = {name: [0.0] * repeats for name in names}
    cpu = {name: [0.0] * repeats for name in names}
    turn = 0
    for repeat in range(repeats):
        for batch in batches[warmup:]:
            order = names[turn % len(names) :] + names[: turn % len(names)]
            turn += 1
            for name in order if turn % 2 else order[::-1]:
                started, started_cpu = time.perf_counter(), time.process_time()
                steps[name](batch)
                synchronize(device)
                wall[name][repeat] += time.perf_counter() - started
                cpu[name][repeat] += time.process_time() - started_cpu
    return wall, cpu, warmup_seconds


def training_flops(size: TransformerConfig, vocab_size: int, batch_size: int, src_len: int, tgt_len: int) -> float:
    """Analytic FLOPs of one training step on a padded (B, S) / (B, T) batch (see module doc)."""
    d, f, le, ld = size.d_model, size.d_ff, size.num_encoder_layers, size.num_decoder_layers
    macs = batch_size * src_len * (le * (4 * d * d + 2 * d * f) + ld * 2 * d * d)
    macs += batch_size * tgt_len * (ld * (6 * d * d + 2 * d * f) + d * vocab_size)
    macs += 2 * batch_size * d * (le * src_len**2 + ld * (tgt_len**2 + tgt_len * src_len))
    return 6.0 * macs


def matmul_rate(device: torch.device, n: int = 2048, repeats: int = 5, dtype=None) -> tuple[float, str]:
    """Best FLOPs/s of an (n × n) @ (n × n) product (float32 on CPU, bfloat16 on CUDA), and how
    it was measured."""
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    if device.type == "cuda":
        n, repeats = max(n, 8192), max(repeats, 20)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        synchronize(device)
        started = time.perf_counter()
        torch.mm(a, b)
        synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2 * n**3 / best, f"best of {repeats} torch.mm of {n}×{n} {str(dtype).removeprefix('torch.')}"


def cpu_isa() -> str:
    """The instruction set PyTorch dispatches its CPU kernels for on this machine
    (``torch.backends.cpu.get_cpu_capability()``: DEFAULT, AVX2, AVX512, ...), with "+AMX" where
    the CPU has AMX tiles (oneDNN's bfloat16 matrix units): one model name ("AMD EPYC") covers
    machines with different vector units, and figures from one do not carry to another."""
    isa = torch.backends.cpu.get_cpu_capability()
    is_amx = getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
    return f"{isa}+AMX" if is_amx else isa


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's model name (``/proc/cpuinfo``, as ``lscpu`` reports it)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass

    return platform.processor() or platform.machine() or "cpu"


# -- peak memory --------------------------------------------------------------------------------
def reset_peak_rss() -> None:
    """Linux: set the peak resident set (VmHWM) back to the current one ("5" > clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    """Peak resident set of this process: VmHWM on Linux (per address space, so a fresh
    subprocess does not inherit its parent's peak as ``ru_maxrss`` does), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10  # kB
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB elsewhere


__all__ = [
    "cpu_isa",
    "device_name",
    "matmul_rate",
    "peak_rss_mib",
    "reset_peak_rss",
    "synchronize",
    "time_interleaved",
    "training_flops",
]

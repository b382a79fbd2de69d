"""Processes against threads on this machine's CPU: the default run's first steps trained as
1 process x 2 threads, 1 x 1 and 2 x 1 (``trainer.processes`` x ``trainer.num_threads``), one
after the other, each through ``scripts/train.py``; printed side by side: steps per second of
training, the validation BLEU reached, and the training time to the BLEU every layout reached.

    python scripts/bench_processes.py                         # 1000 steps each
    python scripts/bench_processes.py --steps 400 --layouts 1x1,2x1 --out runs/bench

Every layout takes the same optimizer steps on the same global batches (each of N processes
takes every N-th sentence of a batch), so they differ in speed, and in their dropout masks.
Times are of training only (``train_seconds`` in summary.json); the time to a BLEU is the
training time up to the first validation that reached it. The machine should be otherwise
quiet: the CPU model and the load average are printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from minitrans.bench.measure import cpu_isa, device_name

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Layout:
    processes: int
    threads: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        processes, _, threads = text.partition("x")
        try:
            layout = cls(int(processes), int(threads))
        except ValueError:
            raise argparse.ArgumentTypeError(f"a layout is PROCESSESxTHREADS, e.g. 2x1; got {text!r}") from None
        if layout.processes < 1 or layout.threads < 1:
            raise argparse.ArgumentTypeError(f"a layout needs at least one process and one thread; got {text!r}")
        return layout

    @property
    def name(self) -> str:
        return f"{self.processes}x{self.threads}"


def validations(run: Path) -> list[tuple[int, float]]:
    """(step, valid BLEU) of every validation the run logged."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars("valid/bleu")]


def train(layout: Layout, steps: int, eval_every: int, run: Path, overrides: list[str]) -> dict:
    command = [
        sys.executable,
        str(REPO / "scripts" / "train.py"),
        f"trainer.processes={layout.processes}",
        f"trainer.num_threads={layout.threads}",
        f"trainer.max_steps={steps}",
        f"trainer.eval_every={eval_every}",
        "trainer.progress=false",
        *overrides,
        f"hydra.run.dir={run}",
    ]
    print(f"{layout.name}: {' '.join(command[1:])}", flush=True)
    subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    summary = json.loads((run / "summary.json").read_text())
    return {"steps": summary["steps"], "train_seconds": summary["train_seconds"], "valid": validations(run)}


def seconds_to(result: dict, bleu: float) -> float | None:
    """Training seconds up to the first validation at ``bleu`` or above (steps are evenly timed)."""
    for step, value in result["valid"]:
        if value >= bleu:
            return result["train_seconds"] * step / result["steps"]
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps per layout (default 1000)")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between validations (default 250)")
    parser.add_argument(
        "--layouts",
        type=lambda text: [Layout.parse(part) for part in text.split(",")],
        default=[Layout(1, 2), Layout(1, 1), Layout(2, 1)],
        help="PROCESSESxTHREADS, comma-separated (default 1x2,1x1,2x1)",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/bench_processes"), help="folder for the runs")
    parser.add_argument("overrides", nargs="*", help="more key=value overrides for every run")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty: choose another --out (the runs would resume)")

    results = {}
    for layout in args.layouts:
        results[layout.name] = train(layout, args.steps, args.eval_every, args.out / layout.name, args.overrides)
    target = min(max(value for _, value in result["valid"]) for result in results.values())
    baseline = results[args.layouts[0].name]
    print(
        f"\nCPU: {device_name(torch.device('cpu'))} ({cpu_isa()}); {os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.2f} (1 min)"
    )
    print(f"{args.steps} steps of the default run, validation every {args.eval_every}; target BLEU {target:.2f}")
    print(f"{'processes x threads':>20} {'steps/s':>8} {'x':>6} {'valid BLEU':>10} {'s to target':>12}")
    for name, result in results.items():
        rate = result["steps"] / result["train_seconds"]
        ratio = rate / (baseline["steps"] / baseline["train_seconds"])
        to_target = seconds_to(result, target)
        print(
            f"{name:>20} {rate:8.2f} {ratio:6.2f} {result['valid'][-1][1]:10.2f} "
            f"{'-' if to_target is None else f'{to_target:.0f}':>12}"
        )

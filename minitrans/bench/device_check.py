"""One prepared check of an accelerator, for the few minutes a GPU is lent: the default run from an
empty cache, the Multi30k-sized training step against ``torch.nn.Transformer`` under bfloat16
autocast, and decoding with and without the cache, each through the project's own command, one
after the other, with the figures gathered into one table beside the machine's name.

    python scripts/bench_device.py --out OUT                      # on the GPU (device auto)
    python scripts/bench_device.py --out OUT --device cpu --quick # the same stages, a smoke test

Each stage runs in its own process under its own time limit and writes its log to OUT; a stage
that fails or runs out of time is reported as such and the next one still runs, so one call
brings back whatever could be measured. ``OUT/device_check.json`` holds the figures,
``OUT/device_check.md`` the table. The Multi30k step uses the prepared corpus where
``data/multi30k`` holds it (synthetic batches of its lengths otherwise, and the table says which).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from minitrans.bench.measure import device_name
from minitrans.core.textio import read_json
from minitrans.core.utils import pick_device

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Stage:
    name: str
    command: list[str]
    timeout: float
    seconds: float = 0.0
    status: str = "not run"
    extra_env: dict[str, str] = field(default_factory=dict)


def run_stage(stage: Stage, out: Path) -> None:
    """Run one stage's command, its output into OUT/NAME.log; record its wall time and status."""
    log = out / f"{stage.name}.log"
    env = {**os.environ, **stage.extra_env}
    start = time.perf_counter()
    print(f"[{stage.name}] {' '.join(stage.command[1:])}", flush=True)
    try:
        with log.open("w", encoding="utf-8") as handle:
            done = subprocess.run(
                stage.command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=stage.timeout
            )
        stage.status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode}, see {log.name})"
    except subprocess.TimeoutExpired:
        stage.status = f"stopped at its limit of {stage.timeout:.0f} s"
    stage.seconds = time.perf_counter() - start
    print(f"[{stage.name}] {stage.status} in {stage.seconds:.0f} s", flush=True)


def stages(out: Path, device: str, quick: bool) -> list[Stage]:
    python = sys.executable
    default_run = out / "default_run"
    train_quick = ["trainer.max_steps=40", "trainer.eval_every=40", "data.num_train=2000"] if quick else []
    return [
        Stage(
            "default_run",
            [
                python,
                str(REPO / "scripts" / "train.py"),
                f"trainer.device={device}",
                "trainer.progress=false",
                *train_quick,
                f"hydra.run.dir={default_run}",
            ],
            timeout=240,
            extra_env={"MINITRANS_CACHE_DIR": str(out / "empty_cache")},
        ),
        Stage(
            "multi30k_step",
            [
                python,
                str(REPO / "scripts" / "benchmark.py"),
                "--sizes",
                "tiny" if quick else "small,large",
                "--precision",
                "bf16",
                f"--device={device}",
                "--no-memory",
                f"--cache-dir={out / 'step_cache'}",
                f"--json={out / 'multi30k_step.json'}",
                *(["--quick"] if quick else []),
            ],
            timeout=180,
        ),
        Stage(
            "decoding",
            [
                python,
                "-m",
                "minitrans.bench.decoding",
                str(default_run),
                f"--device={device}",
                "--limit",
                "20" if quick else "1000",
                f"--json={out / 'decoding.json'}",
            ],
            timeout=150,
        ),
    ]


def read_figures(path: Path) -> dict | None:
    """What a stage wrote, or None where it wrote nothing readable."""
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


def gather(out: Path, done: list[Stage], device: str) -> dict:
    """The figures of every stage that wrote them, with the machine and each stage's status."""
    summary = read_figures(out / "default_run" / "summary.json")
    step = read_figures(out / "multi30k_step.json")
    decoding = read_figures(out / "decoding.json")
    report: dict = {
        "device": device_name(torch.device(device)),
        "torch": torch.__version__,
        "stages": {stage.name: {"status": stage.status, "wall_s": round(stage.seconds, 1)} for stage in done},
    }
    if summary:
        report["default_run"] = {
            "device": summary.get("device"),
            "steps": summary["steps"],
            "train_seconds": summary["train_seconds"],
            "wall_s": report["stages"]["default_run"]["wall_s"],
            "test_bleu": summary["test"]["bleu"],
        }
    if step:
        report["multi30k_step"] = {
            "device": step["machine"]["device_name"],
            "precision": step["machine"]["dtype"],
            "batches": step["data"]["description"],
            "sizes": {
                result["size"]: {
                    "tokens_per_second": result["tokens_per_second"],
                    "ratio_vs_torch": result["ratio_vs_torch"].get("minitrans", {}).get("median"),
                }
                for result in step["sizes"]
            },
        }
    if decoding:
        report["decoding"] = {
            "device": decoding["device"],
            "sentences": decoding["sentences"],
            "beams": {
                row["beam"]: {
                    "cached_sents_per_s": row["cached_sents_per_s"],
                    "speedup": row["speedup"],
                    "identical": row["identical"],
                }
                for row in decoding["results"]
            },
        }
    return report


def format_report(report: dict) -> str:
    lines = [f"Device check on {report['device']} (torch {report['torch']})", ""]
    lines += ["| stage | status | wall |", "|---|---|---:|"]
    lines += [f"| {name} | {stage['status']} | {stage['wall_s']:.0f} s |" for name, stage in report["stages"].items()]
    run = report.get("default_run")
    if run:
        lines += [
            "",
            f"Default run ({run['device']}): test BLEU {run['test_bleu']:.2f}, {run['steps']:,} steps, "
            f"{run['train_seconds']:.0f} s of training, {run['wall_s']:.0f} s wall from an empty cache",
        ]
    step = report.get("multi30k_step")
    if step:
        lines += ["", f"Training step ({step['device']}, {step['precision']}; {step['batches']}):"]
        for size, figures in step["sizes"].items():
            ours = figures["tokens_per_second"].get("minitrans", 0.0)
            theirs = figures["tokens_per_second"].get("torch", 0.0)
            ratio = figures["ratio_vs_torch"]
            lines.append(
                f"- {size}: {ours:,.0f} target tokens/s against nn.Transformer's {theirs:,.0f}"
                + (f" ({ratio:.2f}×)" if ratio else "")
            )
    decoding = report.get("decoding")
    if decoding:
        lines += ["", f"Decoding ({decoding['device']}, {decoding['sentences']} sentences):"]
        for beam, row in decoding["beams"].items():
            same = "the same outputs" if row["identical"] else "outputs differ"
            lines.append(
                f"- beam {beam}: {row['cached_sents_per_s']:,.1f} sentences/s cached, "
                f"{row['speedup']:.2f}× uncached; {same}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_device.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="an empty or new folder for the runs and logs")
    parser.add_argument("--device", default="auto", help="auto (CUDA, then MPS, else CPU) | cuda | mps | cpu")
    parser.add_argument("--quick", action="store_true", help="a smoke test: a few steps and sentences a stage")
    args = parser.parse_args(argv)
    if args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        parser.error(f"{args.out} is not an empty folder: the default run would resume from it; choose another --out")
    try:
        device = pick_device(args.device).type
    except ValueError as error:
        parser.error(f"--device: {error}")
    args.out.mkdir(parents=True, exist_ok=True)
    done = stages(args.out.resolve(), device, args.quick)
    for stage in done:
        run_stage(stage, args.out)
    report = gather(args.out, done, device)
    (args.out / "device_check.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = format_report(report)
    (args.out / "device_check.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if all(stage.status == "ok" for stage in done) else 1


__all__ = ["format_report", "gather", "main", "stages"]

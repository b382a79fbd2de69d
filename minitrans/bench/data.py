"""How long a large corpus takes to become ready to train on, and how much memory the
training process then holds: ``python scripts/bench_data.py``.

1. Builds a corpus of ``--pairs`` English→French pairs (default 1,000,000) as plain
   ``train.en`` / ``train.fr`` files: two of Multi30k's 29,000 training captions drawn at random
   and joined (almost all pairs distinct, about 25 words a side, like news text), else two
   sentences of the embedded English→German grammar the same way; one pair in 2,000 is damaged (an empty
   side, a side of 2,000 characters, a whitespace mess) so cleaning has work to do.
2. First start, in a fresh process with an empty cache: ``data=parallel`` on that folder —
   read, clean, hold out valid and test, train SentencePiece on a sample (``data.spm_sample``),
   tokenise everything, build the model and the batches — then a few training steps.
3. Second start, in another fresh process with the cache the first one left.

Each start reports wall time to ready (data prepared, model built), the process's CPU time,
and its peak resident memory (``ru_maxrss``) after the training steps.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minitrans.data.generated import generate_corpus

REPO = Path(__file__).resolve().parents[2]


def source_pairs(source: Path | None) -> tuple[list[str], list[str], str]:
    folder = source or REPO / "data" / "multi30k"
    for lang_src, lang_tgt in (("en", "fr"),):
        paths = [folder / f"train.{lang}.gz" for lang in (lang_src, lang_tgt)]
        if all(p.is_file() for p in paths):
            src, tgt = (gzip.decompress(p.read_bytes()).decode().split("\n")[:-1] for p in paths)
            return src, tgt, f"Multi30k train.en/train.fr from {folder}"

    pairs = generate_corpus(num_train=30000, num_valid=1, num_test=1, seed=7)["train"]
    return [en for en, _ in pairs], [de for _, de in pairs], "the embedded grammar (no Multi30k found)"


def build_corpus(folder: Path, pairs: int, source: Path | None, seed: int = 0) -> str:
    src, tgt, origin = source_pairs(source)
    rng = random.Random(seed)
    with open(folder / "train.en", "w", encoding="utf-8") as en, open(folder / "train.fr", "w", encoding="utf-8") as fr:
        for i in range(pairs):
            picks = (rng.randrange(len(src)), rng.randrange(len(src)))
            s, t = " ".join(src[p] for p in picks), " ".join(tgt[p] for p in picks)
            if i % 2000 == 1:
                s = ""
            elif i % 2000 == 2:
                t = (t + " ") * (2000 // max(len(t), 1) + 1)
            elif i % 2000 == 3:
                s = "  \t" + s.replace(" ", "  ") + "\x0b "
            en.write(s + "\n")
            fr.write(t + "\n")
    return origin


def child_main(overrides: list[str], out_dir: str, steps: int) -> None:
    """Entry point of a measured process (scripts/bench_data.py --child)."""
    started, cpu_started = time.perf_counter(), _cpu()
    import datasets

    from minitrans.core.hydra_config import register_configs, to_dataclass
    from minitrans.training.trainer import Trainer

    datasets.disable_progress_bars()
    register_configs()
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = to_dataclass(compose(config_name="train", overrides=overrides))
    trainer = Trainer(cfg, out_dir)
    ready, cpu_ready = time.perf_counter() - started, _cpu() - cpu_started
    rss_ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step_started = time.perf_counter()
    for indices in trainer.sampler.batches(0)[:steps]:
        trainer.train_batch(indices)
    result = {
        "ready_s": round(ready, 1),
        "ready_cpu_s": round(cpu_ready, 1),
        "peak_rss_ready_mib": round(rss_ready),
        "steps": steps,
        "steps_s": round(time.perf_counter() - step_started, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "training_pairs": len(trainer.src_ids),
        "data": trainer.data_report,
    }
    print("RESULT " + json.dumps(result), flush=True)


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _run_child(script: Path, overrides: list[str], out_dir: Path, steps: int) -> dict:
    command = [sys.executable, str(script), "--child", "--out", str(out_dir), "--steps", str(steps), "--", *overrides]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise SystemExit(f"error: the measured process failed:\n{done.stderr[-3000:]}")


def _folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def main(script: Path, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench_data.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="training pairs to build (default 1,000,000)")
    parser.add_argument("--source", type=Path, help="a Multi30k folder (default data/multi30k)")
    parser.add_argument("--work", type=Path, help="folder for the corpus and cache (default: a temporary one)")
    parser.add_argument("--steps", type=int, default=20, help="training steps after each start (default 20)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*", help="extra key=value settings for the run (after --)")
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.overrides, args.out, args.steps)
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="minitrans-bench-data-"))
    corpus, cache = work / "corpus", work / "cache"
    corpus.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(cache, ignore_errors=True)
    started = time.perf_counter()
    origin = build_corpus(corpus, args.pairs, args.source)
    print(
        f"built {args.pairs:,} pairs from {origin} in {time.perf_counter() - started:.0f} s "
        f"({_folder_mib(corpus):,.0f} MiB of text in {corpus})",
        flush=True,
    )
    overrides = [
        "data=parallel",
        f"data.root={corpus}",
        "data.src_lang=en",
        "data.tgt_lang=fr",
        f"data.cache_dir={cache}",
        "trainer.progress=false",
        *args.overrides,
    ]
    first = _run_child(script, overrides, work / "run1", args.steps)
    print(json.dumps(first["data"], indent=1))
    second = _run_child(script, overrides, work / "run2", args.steps)
    figures = {
        "pairs": args.pairs,
        "source": origin,
        "first": first,
        "second": second,
        "cache_mib": round(_folder_mib(cache)),
    }
    for name, start in (("first start (empty cache)", first), ("second start (cached)", second)):
        print(
            f"{name}: ready in {start['ready_s']:.1f} s (CPU {start['ready_cpu_s']:.1f} s), "
            f"peak RSS {start['peak_rss_ready_mib']:,} MiB when ready, {start['peak_rss_mib']:,} MiB after "
            f"{start['steps']} training steps; {start['training_pairs']:,} training pairs"
        )
    print(f"cache on disk: {figures['cache_mib']:,} MiB in {cache}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)

"""Decoding speed: sentences per second, greedy and beam, with the cache against without it.

    python -m minitrans.benchmark_decoding RUN_OR_CHECKPOINT [--split test] [--beams 1 5]
                                          [--limit N] [--repeats R] [--threads T] [--json PATH]

The sentences are a split of the run's own corpus (Multi30k's test_2016_flickr for a
Multi30k run, the generated test split for a generated-corpus run) unless given. Both paths
translate the same sentences in the same run, alternating, and the best of ``repeats`` timings
of each is kept, so a busy machine slows both alike; the report says whether their outputs
are identical (they must be).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from minitrans.translate import Translator, load_run_split


def benchmark_decoding(
    checkpoint: str | Path | Translator,
    sentences: list[str] | None = None,
    split: str = "test",
    beams: Sequence[int] = (1, 5),
    repeats: int = 1,
    limit: int | None = None,
    length_penalty: float = 0.6,
    device: str = "cpu",
) -> dict:
    """Time cached and uncached decoding of ``sentences`` (default: ``split`` of the run's
    corpus, its first ``limit`` sentences) at each beam size. Returns a plain dict::

        {"checkpoint", "model", "split", "sentences", "threads", "device",
         "results": [{"beam", "cached_sents_per_s", "uncached_sents_per_s", "speedup",
                      "identical", "differing_sentences", "cached_s", "uncached_s"}, ...]}
    """
    translator = checkpoint if isinstance(checkpoint, Translator) else Translator.from_checkpoint(checkpoint, device)
    if sentences is None:
        if translator.config is None:
            raise ValueError("this translator has no run configuration: pass the sentences")
        sentences, _, split = load_run_split(translator.config, split)
    else:
        split = "given"
    sentences = list(sentences)[:limit]
    src_ids = translator.encode(sentences)
    results = []
    for beam in beams:
        seconds = {True: float("inf"), False: float("inf")}
        outputs = {}
        for _ in range(repeats):
            for use_cache in (True, False):
                start = time.perf_counter()
                outputs[use_cache] = translator.translate_encoded(
                    src_ids, beam, length_penalty=length_penalty, use_cache=use_cache
                )
                seconds[use_cache] = min(seconds[use_cache], time.perf_counter() - start)
        differing = sum(a != b for a, b in zip(outputs[True], outputs[False]))
        results.append(
            {
                "beam": beam,
                "cached_sents_per_s": len(sentences) / seconds[True],
                "uncached_sents_per_s": len(sentences) / seconds[False],
                "speedup": seconds[False] / seconds[True],
                "identical": differing == 0,
                "differing_sentences": differing,
                "cached_s": seconds[True],
                "uncached_s": seconds[False],
            }
        )
    return {
        "checkpoint": None if isinstance(checkpoint, Translator) else str(checkpoint),
        "model": (translator.config or {}).get("model", {}).get("kind", type(translator.model).__name__),
        "split": split,
        "sentences": len(sentences),
        "threads": torch.get_num_threads(),
        "device": str(translator.device),
        "results": results,
    }


def format_table(report: dict) -> str:
    head = (
        f"{report['model']} on {report['split']} ({report['sentences']} sentences, "
        f"{report['device']}, {report['threads']} thread(s))"
    )
    lines = [head, f"{'beam':>4}  {'cached sent/s':>13}  {'uncached sent/s':>15}  {'speed-up':>8}  identical"]
    for row in report["results"]:
        same = "yes" if row["identical"] else f"no ({row['differing_sentences']} differ)"
        lines.append(
            f"{row['beam']:>4}  {row['cached_sents_per_s']:>13.1f}  {row['uncached_sents_per_s']:>15.1f}"
            f"  {row['speedup']:>7.2f}x  {same}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitrans.benchmark_decoding", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help="a run folder or a .pt checkpoint")
    parser.add_argument("--split", default="test", help="split of the run's corpus (default: its test split)")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5], help="beam sizes (default: 1 5)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--repeats", type=int, default=1, help="timings per path; the best is kept")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, mps or auto")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from minitrans.checkpoint import CheckpointError

    try:
        report = benchmark_decoding(
            args.checkpoint,
            split=args.split,
            beams=args.beams,
            repeats=args.repeats,
            limit=args.limit,
            device=args.device,
        )
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(format_table(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

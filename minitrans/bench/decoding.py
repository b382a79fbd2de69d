"""Decoding speed: sentences per second, greedy and beam, with the cache against without it,
and (``--engines``) our decoder against CTranslate2's.

    python -m minitrans.bench.decoding RUN_OR_CHECKPOINT [--split test] [--beams 1 5]
                                          [--limit N] [--repeats R] [--threads T] [--json PATH]
    python -m minitrans.bench.decoding RUN --engines torch,ctranslate2,ctranslate2-int8 [--threads 1 0]

The sentences are a split of the run's own corpus (Multi30k's test_2016_flickr for a
Multi30k run, the generated test split for a generated-corpus run) unless given. Both paths
translate the same sentences in the same run, alternating, and the best of ``repeats`` timings
of each is kept, so a busy machine slows both alike; the report says whether their outputs
are identical (they must be).

With ``--engines``, each engine translates the split at each beam size and thread count (0: every
core), taking turns in one process: ``torch`` is our cached decoder, ``ctranslate2`` the float32
export of the same checkpoint, ``ctranslate2-int8`` its int8 export (both made in a temporary
folder). The report gives sentences per second, BLEU against the references, and how many
outputs differ from ours. Tokenisation is left out of every timing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.checks import cli_number
from minitrans.core.decoding_options import BEAM_RANGE, DecodingOptions
from minitrans.core.metrics import corpus_scores
from minitrans.data.corpus import load_run_split
from minitrans.export.ct2_export import export_ctranslate2
from minitrans.export.ct2_translator import Ct2Translator
from minitrans.export.loading import load_torch_translator
from minitrans.inference.translator import Translator


def benchmark_decoding(
    checkpoint: str | Path | Translator,
    sentences: list[str] | None = None,
    split: str = "test",
    beams: Sequence[int] = (1, 5),
    repeats: int = 1,
    limit: int | None = None,
    length_penalty: float = DecodingOptions.length_penalty,
    device: str = "cpu",
) -> dict:
    """Time cached and uncached decoding of ``sentences`` (default: ``split`` of the run's
    corpus, its first ``limit`` sentences) at each beam size. Returns a plain dict::

        {"checkpoint", "model", "split", "sentences", "threads", "device",
         "results": [{"beam", "cached_sents_per_s", "uncached_sents_per_s", "speedup",
                      "identical", "differing_sentences", "cached_s", "uncached_s"}, ...]}
    """
    translator = checkpoint if isinstance(checkpoint, Translator) else load_torch_translator(checkpoint, device)
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
                options = DecodingOptions(beam_size=beam, length_penalty=length_penalty, use_cache=use_cache)
                outputs[use_cache] = translator.translate_encoded(src_ids, options)
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
        "model": translator.run_config.model.kind if translator.run_config else type(translator.model).__name__,
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


ENGINES = {"torch": None, "ctranslate2": "float32", "ctranslate2-int8": "int8"}  # engine -> export quantization


def benchmark_engines(
    checkpoint: str | Path,
    engines: Sequence[str] = tuple(ENGINES),
    split: str = "test",
    beams: Sequence[int] = (1, 5),
    threads: Sequence[int] = (1, 0),
    limit: int | None = None,
    repeats: int = 1,
    length_penalty: float = DecodingOptions.length_penalty,
) -> dict:
    """Our decoder and CTranslate2 side by side on one split: for each thread count (0: all
    cores) and beam size, each engine's sentences per second, BLEU, and outputs that differ
    from the ``torch`` engine's (when it runs). Returns a plain dict::

        {"checkpoint", "split", "sentences", "cores", "engines",
         "results": [{"threads", "beam", "engine", "sents_per_s", "seconds", "cpu_seconds",
                      "sents_per_cpu_s", "bleu", "differing_sentences"}, ...]}
    """
    unknown = [name for name in engines if name not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {unknown[0]!r}; choose from {', '.join(ENGINES)}")
    ours = load_torch_translator(checkpoint, "cpu")
    sentences, references, split = load_run_split(ours.config, split)
    sentences, references = list(sentences)[:limit], list(references)[:limit]
    src_ids = ours.encode(sentences)
    cores = os.cpu_count() or 1
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folders = {
            name: export_ctranslate2(checkpoint, Path(tmp) / name, None if quant == "float32" else quant)
            for name, quant in ENGINES.items()
            if quant and name in engines
        }
        for count in threads:
            count = count or cores
            torch.set_num_threads(count)
            translators = {
                name: ours if name == "torch" else Ct2Translator.from_folder(folders[name], "cpu", threads=count)
                for name in engines
            }
            for beam in beams:
                seconds, cpu, outputs = dict.fromkeys(engines, float("inf")), dict.fromkeys(engines, float("inf")), {}
                for _ in range(repeats):
                    for name, translator in translators.items():  # taking turns: a busy machine slows all alike
                        start, start_cpu = time.perf_counter(), time.process_time()
                        outputs[name] = translator.translate_encoded(
                            src_ids, DecodingOptions(beam_size=beam, length_penalty=length_penalty)
                        )
                        seconds[name] = min(seconds[name], time.perf_counter() - start)
                        cpu[name] = min(cpu[name], time.process_time() - start_cpu)
                for name in engines:
                    hypotheses = [ours.decode(ids) for ids in outputs[name]]
                    differing = (
                        sum(a != b for a, b in zip(outputs[name], outputs["torch"])) if "torch" in outputs else None
                    )
                    results.append(
                        {
                            "threads": count,
                            "beam": beam,
                            "engine": name,
                            "sents_per_s": len(sentences) / seconds[name],
                            "seconds": seconds[name],
                            "cpu_seconds": cpu[name],  # every thread of this process; steadier on a shared machine
                            "sents_per_cpu_s": len(sentences) / cpu[name],
                            "bleu": corpus_scores(hypotheses, references)["bleu"],
                            "differing_sentences": differing,
                        }
                    )
    return {
        "checkpoint": str(checkpoint),
        "split": split,
        "sentences": len(sentences),
        "cores": cores,
        "engines": list(engines),
        "length_penalty": length_penalty,
        "results": results,
    }


def format_engines_table(report: dict) -> str:
    """One line per thread count, beam size and engine; speed (per wall second and per CPU second
    of the process) relative to CTranslate2 float32."""
    lines = [
        f"{report['split']} ({report['sentences']} sentences, {report['cores']} cores)",
        f"{'threads':>7}  {'beam':>4}  {'engine':<17}  {'sent/s':>8}  {'vs ct2':>6}  {'sent/CPU-s':>10}  {'vs ct2':>6}"
        f"  {'BLEU':>6}  differ from torch",
    ]
    rows = report["results"]
    anchor = {(r["threads"], r["beam"]): r for r in rows if r["engine"] == "ctranslate2"}
    for row in rows:
        ref = anchor.get((row["threads"], row["beam"]))
        wall = row["sents_per_s"] / ref["sents_per_s"] if ref else float("nan")
        cpu = row["sents_per_cpu_s"] / ref["sents_per_cpu_s"] if ref else float("nan")
        differ = "-" if row["differing_sentences"] is None else str(row["differing_sentences"])
        lines.append(
            f"{row['threads']:>7}  {row['beam']:>4}  {row['engine']:<17}  {row['sents_per_s']:>8.1f}  {wall:>5.2f}x"
            f"  {row['sents_per_cpu_s']:>10.1f}  {cpu:>5.2f}x  {row['bleu']:>6.2f}  {differ}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitrans.bench.decoding", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help="a run folder or a .pt checkpoint")
    parser.add_argument("--split", default="test", help="split of the run's corpus (default: its test split)")
    parser.add_argument(
        "--beams", type=cli_number(int, *BEAM_RANGE), nargs="+", default=[1, 5], help="beam sizes (default: 1 5)"
    )
    parser.add_argument("--limit", type=cli_number(int, 1), default=None, help="only the first N sentences")
    parser.add_argument(
        "--repeats", type=cli_number(int, 1, 1000), default=1, help="timings per path; the best is kept"
    )
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=None,
        help="threads (default: torch's choice; with --engines: 1 0, where 0 means every core)",
    )
    parser.add_argument(
        "--engines", default=None, help=f"compare engines, comma-separated from {','.join(ENGINES)} (needs ctranslate2)"
    )
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, mps or auto")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)

    if args.engines is not None:
        try:
            report = benchmark_engines(
                args.checkpoint,
                [name.strip() for name in args.engines.split(",") if name.strip()],
                split=args.split,
                beams=args.beams,
                threads=args.threads or (1, 0),
                limit=args.limit,
                repeats=args.repeats,
            )
        except (CheckpointError, FileNotFoundError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return _report(format_engines_table(report), report, args.json)
    if args.threads:
        torch.set_num_threads(args.threads[0])
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
    return _report(format_table(report), report, args.json)


def _report(table: str, report: dict, json_path: Path | None) -> int:
    print(table)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Does a model translate who does what? ``python scripts/order_probe.py RUN [RUN ...]``.

Claim 3 of docs/claims.md (self-attention on its own has no notion of order): --sets order sets
of the embedded grammar (four sentences of the same words whose roles differ only by word
order: "the dog that the man sees sleeps", "the man that the dog sees sleeps", ...) are
translated greedily, and each translation's role words (the nouns and the articles and pronoun
that mark their case) are counted right (its own gold's), another's (another sentence's of its
set: the roles swapped) or neither, beside exact matches and the share whose first noun is the
gold's (minitrans/analysis/order_probe.py).
Prints one line per run and writes RUN/order_probe.json (an export: into its folder); runs of another
corpus are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from minitrans.analysis.order_probe import RESULT, is_probe_result, oriented_sets, score_order_probe
from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES, MAX_SEED


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="order_probe.py", description="Share of order sets translated with the right roles."
    )
    parser.add_argument("runs", nargs="+", help="run folders, checkpoints or exports (export.py)")
    parser.add_argument("--sets", type=cli_number(int, 1), default=100, help="order sets of 4 sentences (default 100)")
    parser.add_argument(
        "--seed", type=cli_number(int, 0, MAX_SEED), default=0, help="the sets' random stream (default 0)"
    )
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="default: cpu")
    return parser.parse_args(argv)


def result_problem(path: Path, checkpoint: Path) -> str | None:
    """Why the probe's result must not be written to ``path`` (one line), or None: a file the
    probe did not write, or one no command may write over."""
    from minitrans.core.protected import output_problem

    if path.is_dir():
        return f"{path}: a folder is in the way of the probe's result"
    if path.exists() and not is_probe_result(path):
        return f"{path}: not written by order_probe.py (it is replaced only when it is a probe's result); move it away"
    return output_problem(path, [(checkpoint, "the checkpoint it measures")], flag="result")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from minitrans.core.checkpoint import CheckpointError, CheckpointFolder
    from minitrans.core.utils import pick_device, write_atomic
    from minitrans.export.loading import load_translator

    loaded = []
    for run in args.runs:  # every result checked before any run is measured, so a refusal costs nothing
        try:
            translator = load_translator(run, pick_device(args.device))  # a run, a checkpoint or an export
        except (CheckpointError, FileNotFoundError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        if translator.run_config is None:
            print(f"error: {run} does not say what it was trained on (no run configuration)", file=sys.stderr)
            return 1
        path = Path(translator.path)
        result = (path if path.is_dir() else CheckpointFolder.run_folder_of(path)) / RESULT
        if (problem := result_problem(result, path)) is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        loaded.append((run, translator, result))
    measured = 0
    print(f"{'run':<50}{'right':>8}{'another':>9}{'neither':>9}{'exact':>8}{'1st noun':>9}{'alike':>9}")
    for run, translator, result in loaded:
        data = translator.run_config.data
        if data.name != "generated":
            print(f"{run}: skipped, corpus {data.name!r} (the order sets are the embedded grammar's)")
            continue
        probe = score_order_probe(oriented_sets(data, args.sets, args.seed), translator.translate)
        summary = probe.summary()
        print(
            f"{str(run):<50}{summary['order_probe_right']:>8.3f}{summary['order_probe_another']:>9.3f}"
            f"{summary['order_probe_neither']:>9.3f}{summary['order_probe_exact']:>8.3f}"
            f"{summary['order_probe_first_noun']:>9.3f}{probe.sets_alike:>5}/{probe.sets}"
        )
        try:
            write_atomic(result, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        except OSError as error:
            print(f"error: cannot write {result}: {error.strerror or error}", file=sys.stderr)
            return 1
        measured += 1
    print(
        "right / another / neither: the role words (nouns, case marks) are its own gold's / another sentence's of "
        "its set / neither; exact: the whole gold; 1st noun: the gold's first noun first; alike: sets translated alike"
    )
    return 0 if measured else 1


if __name__ == "__main__":
    raise SystemExit(main())

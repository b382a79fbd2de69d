"""Compare finished runs: ``python scripts/compare.py SWEEP_DIR_OR_RUNS... [--out DIR] [--split NAME]``.

Writes comparison.md, heads_dk_bleu.png (when the runs vary num_heads or d_k),
heads_matched_bleu.png (when runs share an h·d_k), bleu_by_length.png and learning_curves.png into
the sweep folder (or ``--out``), and prints the table. The library is imported after the arguments are parsed,
so that ``--help`` answers at once.
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = "Compare finished runs: a Markdown table of their scores, and plots across them."
EPILOG = """\
writes, into the sweep folder (or --out):
  comparison.md       one row per run: size, steps, training time, valid and test BLEU/chrF,
                      and a column per kind of evaluate.py report found in RUN/eval/,
                      headed by its name (test.beam5.lp0.6.ratio1.5.tok13a)
  heads_dk_bleu.png   test BLEU over num_heads x d_k, with each cell's parameter count,
                      when the runs vary them
  heads_matched_bleu.png
                      test BLEU by number of heads at a fixed h x d_k (equal parameters and
                      FLOPs), when runs share one (experiment=heads_dk_matched)
  bleu_by_length.png  test BLEU by source length, one line per run
  learning_curves.png validation loss (teacher-forced) and BLEU (greedy) by step, one line
                      per run, with the step each first reaches BLEU 30 (experiment=claim_*)
runs of several language pairs get a table section and figures per pair (NAME.en-de.png);
a folder of an Optuna search (hydra/sweeper=optuna) gets its best trial as a command line.

example:
  python scripts/compare.py multirun/2026-12-01/10-00-00
  python scripts/compare.py outputs/run_a outputs/run_b --out comparison/
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="compare.py", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", help="sweep folders, run folders or summary.json files")
    parser.add_argument(
        "--out", help="folder for the table and plots (default: the one folder given, or their common parent)"
    )
    parser.add_argument("--split", help="test split for the heatmap and the length plot (default: each run's first)")
    args = parser.parse_args(argv)
    from minitrans.runs.compare import compare  # matplotlib and numpy: only once there is work

    try:
        result = compare(args.paths, args.out, args.split)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(result.table)
    for path in result.files:
        print(f"wrote {path}")
    for note in result.notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

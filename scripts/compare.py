"""Compare finished runs: ``python scripts/compare.py SWEEP_DIR_OR_RUNS... [--out DIR] [--split NAME]``.

Writes comparison.md, heads_dk_bleu.png (when the runs vary num_heads or d_k) and
bleu_by_length.png into the sweep folder (or ``--out``), and prints the table.
"""

from __future__ import annotations

import argparse
import sys

from minitrans.compare import compare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="sweep folders, run folders or summary.json files")
    parser.add_argument(
        "--out", help="folder for the table and plots (default: the one folder given, or their common parent)"
    )
    parser.add_argument("--split", help="test split for the heatmap and the length plot (default: each run's first)")
    args = parser.parse_args(argv)
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

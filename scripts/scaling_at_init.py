"""Why attention divides by √d_k, at initialisation: ``python scripts/scaling_at_init.py [--out DIR]``.

With and without the division: the variance of q·k, the mean largest softmax weight, the row
entropy and the norm of the gradient reaching the scores, on unit-variance q and k (the notes'
assumption) for d_k from 4 to 512, and on freshly initialised minitrans Transformers over a grid
of d_model × heads (d_k = d_model / heads unless --d-ks gives it). Writes scaling_at_init.png,
.json and .md into --out (default: the current folder), never over a file that is there unless
--overwrite is given, and prints the table. Seconds on a CPU; no training, no data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import MAX_SEED

NAMES = ("scaling_at_init.json", "scaling_at_init.md", "scaling_at_init.png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scaling_at_init.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the results (default: this one)")
    parser.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
    parser.add_argument("--d-models", type=int, nargs="+", default=[64, 128, 256], help="model widths")
    parser.add_argument("--heads", type=int, nargs="+", default=[1, 2, 4, 8], help="head counts, each d_model")
    parser.add_argument("--d-ks", type=int, nargs="+", help="per-head widths (default: d_model / heads)")
    parser.add_argument(
        "--seed", type=cli_number(int, 0, MAX_SEED), default=0, help="the random initialisation's seed (default 0)"
    )
    args = parser.parse_args(argv)
    from minitrans.analysis.scaling_at_init import as_rows, measure_scaling, model_grid, plot, table
    from minitrans.core.protected import output_problem
    from minitrans.core.utils import write_atomic

    try:
        grid = model_grid(args.d_models, args.heads, args.d_ks)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out}: not a folder", file=sys.stderr)
        return 2
    targets = [args.out / name for name in NAMES]
    for target in targets:
        if problem := output_problem(target, flag="--out"):
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if (found := [t for t in targets if t.exists()]) and not args.overwrite:
        print(
            f"error: --out {args.out}: {found[0].name} is there already; name another folder or add --overwrite",
            file=sys.stderr,
        )
        return 2
    points = measure_scaling(seed=args.seed, grid=grid)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(targets[0], json.dumps(as_rows(points), indent=2) + "\n")
    write_atomic(targets[1], table(points) + "\n")
    plot(points).savefig(targets[2])
    print(table(points))
    print(f"wrote {', '.join(NAMES)} into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

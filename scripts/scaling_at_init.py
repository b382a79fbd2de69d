"""Why attention divides by √d_k, at initialisation: ``python scripts/scaling_at_init.py [--out DIR]``.

For d_k from 4 to 512, with and without the division: the variance of q·k, the mean largest
softmax weight, the row entropy and the norm of the gradient reaching the scores, on
unit-variance q and k (the notes' assumption) and on a freshly initialised minitrans
Transformer. Writes scaling_at_init.png, .json and .md into --out (default docs/claims/) and
prints the table. Seconds on a CPU; no training, no data.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from minitrans.core.utils import write_atomic
from minitrans.runs.scaling_at_init import as_rows, measure_scaling, plot, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scaling_at_init.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/claims"), help="folder for the results")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    points = measure_scaling(seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "scaling_at_init.json", json.dumps(as_rows(points), indent=2) + "\n")
    write_atomic(args.out / "scaling_at_init.md", table(points) + "\n")
    plot(points).savefig(args.out / "scaling_at_init.png")
    print(table(points))
    print(f"wrote scaling_at_init.png, .json and .md into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

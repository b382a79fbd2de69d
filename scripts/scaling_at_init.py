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
import sys
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import MAX_SEED
from minitrans.core.protected import output_problem
from minitrans.core.utils import write_atomic
from minitrans.runs.scaling_at_init import RESULTS, as_rows, is_own_result, measure_scaling, plot, table


def out_problem(out: Path) -> str | None:
    """Why the results must not go into ``out`` (one line), or None: a file named as the
    folder, a result the script did not write, or one no command may write over."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: a file, not a folder; name a folder for the results"
    for name in RESULTS:
        path = out / name
        if path.is_dir():
            return f"--out {out}: a folder is in the way of {name}"
        if (problem := output_problem(path, flag="--out")) is not None:
            return problem
        if path.exists() and not is_own_result(path):
            return f"--out {out}: {name} is not written by scaling_at_init.py; move it away or name another folder"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scaling_at_init.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/claims"), help="folder for the results")
    parser.add_argument("--seed", type=cli_number(int, 0, MAX_SEED), default=0)
    args = parser.parse_args(argv)
    if (problem := out_problem(args.out)) is not None:  # before the measurement, so a refusal costs nothing
        print(f"error: {problem}", file=sys.stderr)
        return 2
    points = measure_scaling(seed=args.seed)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out / "scaling_at_init.json", json.dumps(as_rows(points), indent=2) + "\n")
        write_atomic(args.out / "scaling_at_init.md", table(points) + "\n")
        plot(points).savefig(args.out / "scaling_at_init.png")
    except OSError as error:
        print(f"error: cannot write the results into {args.out}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(table(points))
    print(f"wrote scaling_at_init.png, .json and .md into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

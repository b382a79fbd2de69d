"""Average the weights of checkpoints of one run into a new self-contained checkpoint.

    python scripts/average.py RUN --last 5 -o RUN/avg5.pt        # the run's last 5 step_*.pt
    python scripts/average.py A.pt B.pt C.pt -o averaged.pt       # any checkpoints of one model

The run keeps ``step_*.pt`` checkpoints when trained with ``trainer.average_last=N``. The
output is accepted by translate.py and evaluate.py like any best.pt. Checkpoints of different
models (config, tokenizer or weight shapes) are refused with one ``error:`` line, exit status 1,
and so is an output that is one of the inputs, an existing checkpoint, or a file of a run's
record such as its ``checkpoints/`` (``last.pt`` is the state the run resumes from; ``best.pt``,
``averaged.pt`` and ``step_*.pt`` its training writes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from minitrans.core.checkpoint import CheckpointError, CheckpointFolder, save_checkpoint
from minitrans.runs.averaging import average_checkpoints, check_output


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="average.py", description="Average the weights of checkpoints of one run.")
    parser.add_argument("checkpoints", nargs="+", help=".pt files, or one run folder with --last")
    parser.add_argument("--last", type=int, help="with a run folder: average its last N step_*.pt checkpoints")
    parser.add_argument("-o", "--output", required=True, help="the averaged checkpoint to write")
    args = parser.parse_args(argv)
    if args.last is not None and (args.last < 1 or len(args.checkpoints) != 1):
        parser.error("--last N (N >= 1) takes exactly one run folder")
    return args


def checkpoint_paths(args: argparse.Namespace) -> list[Path]:
    if args.last is None:
        return [Path(path) for path in args.checkpoints]
    checkpoints = CheckpointFolder.find(args.checkpoints[0])
    folder, found = checkpoints.folder, checkpoints.step_files()
    if not found:
        raise CheckpointError(
            f"no step_*.pt checkpoints in {folder} (a run keeps them with trainer.average_last=N); name .pt files instead"
        )
    return found[-args.last :]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        paths = checkpoint_paths(args)
        output = Path(args.output)
        check_output(paths, output)
        if not output.resolve().parent.is_dir():
            raise CheckpointError(f"cannot write {output}: no such folder")
        payload = average_checkpoints(paths)
        save_checkpoint(payload, output)
    except (CheckpointError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"averaged {len(paths)} checkpoints ({', '.join(payload['averaged_from'])}) into {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

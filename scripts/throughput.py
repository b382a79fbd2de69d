"""A run's tokens/s and resident memory per N minutes, from its TensorBoard events.

    python scripts/throughput.py outputs/2026-12-01/10-00-00 --every 5

Prints a Markdown table: for each window of wall-clock minutes since the first logged step,
the steps it holds, the mean of the training rates logged in it (target tokens per second of
training and per CPU-second of the process, validation excluded) and the resident set last
logged in it (``train/rss_mib``; "-" for a run from before the trainer logged it). A run whose steps slow down, or whose memory
grows, shows it row by row. Works on a run still training.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="throughput.py", description="A run's tokens/s, tokens per CPU-second and resident memory per N minutes."
    )
    parser.add_argument("run", help="the run folder (its events.out.tfevents.* file)")
    parser.add_argument("--every", type=float, default=5.0, help="minutes per row (default: 5)")
    args = parser.parse_args(argv)
    if args.every <= 0:
        parser.error("--every must be positive")
    from minitrans.runs.throughput import format_windows, throughput_windows

    windows = throughput_windows(args.run, args.every) if Path(args.run).is_dir() else []
    if not windows:
        print(f"error: no train/tokens_per_second events in {args.run}", file=sys.stderr)
        return 1
    print(format_windows(windows, args.every))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

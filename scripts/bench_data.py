"""Time to ready, peak memory and second-start time of a large corpus (default 1,000,000 pairs):

    nice python scripts/bench_data.py                      # builds the corpus in a temporary folder
    nice python scripts/bench_data.py --pairs 200000 --json figures.json
    nice python scripts/bench_data.py -- data.spm_sample=100000   # settings for the measured runs

Thin by design: everything lives in :mod:`minitrans.bench.data`.
"""

from __future__ import annotations

from pathlib import Path

from minitrans.bench.data import main

if __name__ == "__main__":
    main(Path(__file__).resolve())

"""The prepared accelerator check (default run, Multi30k step in bfloat16, decoding): ``python
scripts/bench_device.py --out OUT``.

Thin by design: everything lives in :mod:`minitrans.bench.device_check`.
"""

from __future__ import annotations

from minitrans.bench.device_check import main

if __name__ == "__main__":
    raise SystemExit(main())

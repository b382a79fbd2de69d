"""Training processes against threads on this CPU: ``python scripts/bench_processes.py``.

Thin by design: everything lives in :mod:`minitrans.bench.processes`.
"""

from __future__ import annotations

from minitrans.bench.processes import main

if __name__ == "__main__":
    main()

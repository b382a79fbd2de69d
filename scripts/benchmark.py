"""Training speed of minitrans next to ``torch.nn.Transformer``, side by side, in one run.

    python scripts/benchmark.py                              # small and large models, Multi30k batches
    python scripts/benchmark.py --threads 1 --json bench.json
    python scripts/benchmark.py --sizes tiny --quick         # smoke test
    python scripts/benchmark.py --checkpoint RUN             # add decoding speed (minitrans.bench.decoding)

Thin by design: everything lives in :mod:`minitrans.bench.training`.
"""

from __future__ import annotations

from minitrans.bench.training import main

if __name__ == "__main__":
    main()

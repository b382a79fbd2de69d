"""minitrans: a miniature, from-scratch encoder-decoder Transformer for learning and experiments."""

import os

# Idle OpenMP threads sleep instead of spinning: with spinning, one other busy process on a
# 2-core machine made a 2-thread training step many times slower (docs/performance.md). Set here, when
# the package is first imported and before any of its modules imports torch (whose OpenMP runtime
# reads it once, at load), so every entry point gets it; a value already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

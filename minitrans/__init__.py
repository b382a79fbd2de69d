"""minitrans: a miniature, from-scratch encoder-decoder Transformer for learning and experiments."""

import os

# Idle OpenMP threads sleep instead of spinning. A spinning thread holds its core while it waits,
# so a training step that shares the cores with any other busy process (a second run, a test
# suite, a neighbour's job) slows many times over; on a quiet machine the setting changes nothing
# (docs/performance.md records the measurement). Set here, when the package is first imported and
# before any of its modules imports torch (whose OpenMP runtime reads it once, at load), so every
# entry point gets it; a value already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

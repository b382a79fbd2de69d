"""The foundation every other layer stands on: typed configuration (and its Hydra side),
checkpoint I/O, run folders and their lock, sacrebleu metrics, PNGs that record their smallest
text, text I/O and small utilities.

Imports nothing else of minitrans; every sub-package may import it. Only ``core.config``,
``core.hydra_config``, ``core.hydra_sweep`` and ``scripts/`` touch Hydra.
"""

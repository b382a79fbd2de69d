"""The foundation every other layer stands on: typed configuration (and its Hydra side),
checkpoint files and the folder a run keeps them in, run folders and their lock, sacrebleu
metrics, evaluation work shared by several processes, PNGs that record their smallest text, text
I/O and small utilities.

Imports nothing else of minitrans; every sub-package may import it. Library code takes typed
dataclasses, never a ``DictConfig``: Hydra's API is used only in ``core.hydra_config`` and
``core.hydra_sweep`` (and by ``bench.data`` and ``scripts/``).
"""

"""What each command does once its options are parsed, written once: ``train`` (the run folder
claimed before Hydra starts, then the job), ``translate``, ``evaluate`` and ``heads``. The files
under ``scripts/`` only parse and call these.

The top layer: may import every other; nothing in minitrans imports it.
"""

"""Training: ``train(cfg, out_dir)`` and its loop, the one training step, learning-rate schedules,
resuming, data parallelism, the progress bar and the data a run reads.

May import every layer below it (``core``, ``data``, ``models``, ``inference``, ``runs``); only
``scripts/``, ``serve`` and ``bench`` import it.
"""

"""Training: ``train(cfg, out_dir)`` and its loop, the one training step, learning-rate schedules,
the run's checkpoints and resuming, data parallelism (one process per core, or torchrun), the
progress bar and the data a run reads.

May import every layer below it (``core`` up to ``runs``); imported by ``bench`` and ``cli``.
"""

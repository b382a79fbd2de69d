"""What a run leaves and how it is read: evaluation with sacrebleu, ``summary.json``, the
validation report, TensorBoard logging (with the gold-alignment overlays), speed read back from
the events, comparing finished runs (table, plots, curves, paired significance) and checkpoint
averaging.

May import ``core``, ``data``, ``models``, ``inference``, ``export`` and ``analysis``; imported by
``training`` and every layer above it.
"""

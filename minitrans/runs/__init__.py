"""What a run leaves and how it is read: evaluation with sacrebleu, ``summary.json``, the
validation report, TensorBoard logging, attention figures, comparing runs, checkpoint averaging.

May import ``core``, ``data``, ``models`` and ``inference``; imported by ``training``, ``serve``,
``bench`` and the scripts.
"""

"""Speed benchmarks: the training step against ``torch.nn.Transformer``, decoding with and
without the cache (and CTranslate2), corpus preparation at scale, and the prepared check of a lent
accelerator that runs the first two with the default run. May import every layer up to ``training``;
nothing in minitrans imports it; ``scripts/benchmark.py``, ``scripts/bench_data.py`` and ``scripts/bench_device.py`` run it.
"""

"""Speed benchmarks: the training step against ``torch.nn.Transformer``, decoding with and
without the cache (and CTranslate2), corpus preparation at scale. Outside the core layers:
nothing in minitrans imports it; ``scripts/benchmark.py`` and ``scripts/bench_data.py`` run it.
"""

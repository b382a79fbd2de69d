"""Speed benchmarks: the training step against ``torch.nn.Transformer``, decoding with and
without the cache (and CTranslate2), corpus preparation at scale. May import every layer up to ``training``;
nothing in minitrans imports it; ``scripts/benchmark.py`` and ``scripts/bench_data.py`` run it.
"""

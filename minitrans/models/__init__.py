"""The models: the notes model — attention as the notes write it, the Transformer, the RNN
baselines, the loss — the one model interface they share, and building a model from its config.

``attention``, ``transformer`` and ``loss`` compute what the notes describe and nothing else (one
visible speed switch: ``MultiHeadAttention.use_fused``, PyTorch's fused kernel). Code that exists
only for speed sits in the sub-package ``models.fast``: the same Transformer with the same
parameters, derived from the notes model and held equal to it by ``tests/test_fast_model.py``;
``build_model`` builds it unless ``model.implementation=notes``. May import ``core`` and
``data.tokenizer`` (the special token ids); imported by ``inference``, ``runs``, ``training`` and above.
"""

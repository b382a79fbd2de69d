"""The models: attention as the notes write it, the Transformer, the RNN baselines, the one model
interface they share, building a model from its config, and the loss.

Code that exists only for speed (packed-bit dropout in ``fast_dropout``, the encoder on real
tokens only in ``packed_tokens``) sits in those two modules so that
``attention`` and ``transformer`` read like the notes. May import ``core`` and ``data.tokenizer``
(the special token ids); imported by ``inference``, ``runs``, ``training`` and above.
"""

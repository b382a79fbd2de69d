"""The models: the notes model — attention as the notes write it, the Transformer, the RNN
baselines, the loss — the one model interface they share, and building a model from its config.

``attention``, ``transformer``, ``rnn`` and ``loss`` compute what the notes describe and nothing
else, with no switch to a faster path: what a learner reads here is what trains. The
sub-package ``models.fast`` makes a built notes model fast from outside (``make_fast``), keeping
its modules and parameter names (PyTorch's fused attention kernel is one of its measures);
``build`` applies it unless ``model.implementation=notes`` and picks the loss the training step
calls. Nothing here outside ``fast`` and ``build`` imports
``models.fast`` (tests/project/test_layers.py). May import ``core`` and ``data.tokenizer`` (the special
token ids); imported by ``inference``, ``runs``, ``training`` and above.
"""

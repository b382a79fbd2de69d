"""The fast model: the notes model (``models/transformer.py``, ``attention.py``, ``loss.py``) made
fast, and nothing else.

Each class here derives from its notes class and overrides only what it speeds up, so a change
to the notes model (a position scheme, the scores' scale, the causal mask) reaches both:

- ``dropout``: inverted dropout from packed random bits on the CPU, and its fused forms
  (``dropout_add`` for the residual branches, ``relu_dropout`` for the feed-forward);
- ``packed_tokens``: the encoder's position-wise work on real (non-pad) source tokens only;
- ``loss``: the label-smoothed cross-entropy as one autograd function that can overwrite the
  logits in place (the training step's form);
- ``attention`` and ``transformer``: the written-out attention in place and with the packed-bit
  dropout (and for a decoding step's few queries on the CPU, where it beats the fused kernel),
  no source mask when nothing is padded, the self-attention cache's spare slot, the
  cross-attention keys and values laid out once per source and shared by a sentence's beams.

Same parameters under the same names as the notes model: every checkpoint loads into either,
and ``tests/test_fast_model.py`` holds the two equal (values, gradients, decoded strings).
``models/build.py`` builds this one unless ``model.implementation=notes``. May import the notes
model (``models``) and what it may import.
"""

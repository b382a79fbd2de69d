"""The fast model: the notes model (``models/transformer.py``, ``attention.py``, ``loss.py``) made
fast from outside, and nothing else.

``transformer.make_fast(model)`` gives each module of a built notes Transformer the fast class
below (same state, same parameter names; ``models/build.py`` calls it unless
``model.implementation=notes``), and ``loss.step_loss`` is the training step's loss. What each
replaces, and why (each measure's gain is in docs/performance.md, "What each speed measure earns"):

| notes piece                      | fast form                                   | why                                                          |
|----------------------------------|---------------------------------------------|--------------------------------------------------------------|
| ``nn.Dropout``                   | ``dropout.Dropout``: packed random bits      | PyTorch's CPU dropout draws one random number per element    |
| ``FeedForward`` ReLU + dropout   | ``FastFeedForward``: ``relu_dropout``        | one autograd node whose backward keeps no mask               |
| ``Residual`` add + dropout       | ``FastResidual``: ``dropout_add``            | one pass forward, one multiply backward                      |
| ``MultiHeadAttention`` formula   | ``FastMultiHeadAttention``: fused kernel     | PyTorch's kernel skips the weights; not taken where it is    |
|                                  | (``fused_attention``) where it pays          | slower (CPU dropout in training, a step's few queries)       |
| cross-attention cache per beam   | ``FastTransformer.reorder_cache``            | a sentence's beams share its source's keys and values        |
| ``Transformer.encode``           | ``FastTransformer.encode``: ``packed_tokens``| no mask when nothing is padded; position-wise work on real   |
|                                  |                                             | tokens only                                                  |
| ``loss.token_loss``              | ``loss.step_loss``                          | fewer passes over the (N, V) scores, in the logits' memory   |

Every checkpoint loads into either model, and ``tests/models/fast/test_fast_model.py`` holds the two equal
(values, gradients, decoded strings). May import the notes model (``models``) and what it may
import; imported only by ``models.build`` (and the tests of what is here).
"""

"""From a trained model to text: decoding (greedy, beam, cache), the ``Translator``, the
CTranslate2 translator and export, forced scoring, what the model has seen (coverage), the model
card, and line handling for the command line.

May import ``core``, ``data`` and ``models``; imported by ``runs``, ``training``, ``serve`` and
``bench``.
"""

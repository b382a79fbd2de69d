"""From a trained model to text: the ``Translator`` protocol and its PyTorch engine, decoding
(greedy, beam, the cache, the search's exact top-k), forced scoring, what the model has seen
(coverage), the model card, reading a shareable folder back (``Translator.from_pretrained``), and
lines of text as the command line gives them.

May import ``core``, ``data`` and ``models``; imported by ``export`` and every layer above it.
Which engine a path needs (a checkpoint, a shareable folder, a CTranslate2 export) is decided in
one place above this one, :mod:`minitrans.export.loading`.
"""

"""Trained models outside the training stack: the CTranslate2 export and the engine that
translates with it, the shareable folder (safetensors, tokenizer, ``config.json``, the Hub's model
card) and reading it back without pickle, and the one loader that tells every format apart
(:func:`minitrans.export.loading.load_translator`).

May import ``core``, ``data``, ``models`` and ``inference``; imported by ``analysis`` and every
layer above it.
"""

"""Trained models outside the training stack: the CTranslate2 export and the engine that
translates with it, the shareable folder (safetensors, tokenizer, ``config.json``, the Hub's model
card), and the one loader that tells every format a path may hold apart
(:func:`minitrans.export.loading.load_translator`). Reading a shareable folder back is the PyTorch
engine's (``Translator.from_pretrained``, :mod:`minitrans.inference.hf_folder`).

May import ``core``, ``data``, ``models`` and ``inference``; may be imported by every layer above
it (today ``serve``, ``bench`` and ``cli``).
"""

"""Corpora and what turns them into batches: the embedded generated grammar, folders of parallel
files, Multi30k, any ``datasets`` corpus; cleaning, SentencePiece tokenisation, compact token ids
and token-count batching.

May import ``core`` only; imported by every layer above it. Import the modules themselves
(``minitrans.data.batching``, ``minitrans.data.corpus``): this file imports nothing, so that
importing a light module does not load ``datasets``.
"""

"""Corpora (the embedded generated grammar, Multi30k), tokenisation and token-count batching."""

from minitrans.data.batching import Batch, TokenBatchSampler, collate, padding_fraction
from minitrans.data.corpus import load_corpus, load_run_split, load_split
from minitrans.data.tokenize import tokenize_corpus

__all__ = [
    "Batch",
    "TokenBatchSampler",
    "collate",
    "load_corpus",
    "load_run_split",
    "load_split",
    "padding_fraction",
    "tokenize_corpus",
]

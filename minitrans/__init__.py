"""minitrans: a miniature, from-scratch encoder-decoder Transformer for learning and experiments."""

__version__ = "0.1.0"

"""Exercise 8: greedy decoding.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py greedy my_greedy.py
"""

from __future__ import annotations

import torch
from torch import Tensor

from minitrans.data.tokenizer import BOS_ID, EOS_ID  # noqa: F401  (the ids your loop needs)
from minitrans.models.interface import Seq2SeqModel


@torch.no_grad()
def greedy_decode(model: Seq2SeqModel, src: Tensor, max_len: int) -> list[int]:
    """The greedy translation of one source sentence, src (1, S) token ids.

    ``enc, _ = model.encode(src)`` encodes the source once; ``logits, _ = model.decode(enc,
    tgt_in)`` scores a target prefix tgt_in (1, t), giving logits (1, t, V): the last position's
    logits rank the next word. Start the prefix with BOS_ID; at each step append the best word;
    stop when that word is EOS_ID, or once ``max_len`` words have been generated (EOS counts as
    one). Returns the generated ids, without BOS and without EOS.
    """
    raise NotImplementedError

"""Exercise 9: one beam-search step.

Copy this file, write the body, then check it against the notes model:

    python docs/exercises/check.py beam_step my_beam_step.py
"""

from __future__ import annotations

from torch import Tensor


def beam_step(log_probs: Tensor, scores: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One step of beam search over K open beams of one sentence, V words.

    log_probs (K, V): the log-probability of each next word after each beam; scores (K,): each
    beam's log-probability so far (at the first step [0, -inf, ..., -inf]: the beams start
    identical, so only the first is extended).

    An extension (beam r, word w) scores scores[r] + log_probs[r, w]. Returns the K best of all
    K·V extensions, best first, as three (K,) tensors: ``(new_scores, rows, tokens)``, where
    rows[j] is the beam that extension j extends and tokens[j] its word.
    """
    raise NotImplementedError

"""Evaluation shared by the training processes: each translates, scores or draws its part, and
rank 0 puts the parts back in order, so every core works through validation and the final test
and the results are what one process computes.

A :class:`Share` is this process's place among the ``size`` processes and two collectives that
the trainer supplies (``training/distributed.py``: this layer knows no process group). Work is
dealt in turn (:meth:`Share.mine`); what is dealt is chosen so that each unit is computed as one
process computes it: the loss of a whole validation batch, a whole alignment batch of 32 pairs,
a sample sentence's attention cards. Translations are the exception: validation's sentences fit
one decoding batch, so each process decodes every other sentence of the length-sorted split in
batches of its own; a sentence's greedy or beam result does not depend on its batch-mates (the
tests compare 2 ranks with 1, sentence by sentence).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def _alone(value: Any) -> list[Any]:
    return [value]


@dataclass(frozen=True)
class Share:
    """This process's part of an evaluation: ``rank`` of ``size``, ``all_gather`` (every rank's
    value on every rank, in rank order) and ``gather`` (the same on rank 0, None elsewhere);
    every rank calls them at the same points. ``Share()`` is one process doing everything."""

    rank: int = 0
    size: int = 1
    all_gather: Callable[[Any], list[Any]] = field(default=_alone, repr=False)
    gather: Callable[[Any], list[Any] | None] = field(default=_alone, repr=False)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def mine(self, items: Sequence[T], main_last: bool = False) -> list[T]:
        """Every ``size``-th item, from this rank's place on; ``main_last`` deals from the last
        rank instead, so rank 0, which also writes the logs, gets the smaller part."""
        place = self.size - 1 - self.rank if main_last else self.rank
        return list(items[place :: self.size])

    def merge(self, part: dict, everywhere: bool = True) -> dict | None:
        """Every rank's ``{position: result}`` as one dict (None off rank 0 unless ``everywhere``)."""
        parts = (self.all_gather if everywhere else self.gather)(part)
        if parts is None:
            return None
        return {key: value for one in parts for key, value in one.items()}


ALONE = Share()

__all__ = ["ALONE", "Share"]

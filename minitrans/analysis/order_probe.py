"""The order probe (docs/claims.md, claim 3: self-attention on its own has no notion of order).

Each order set of :mod:`minitrans.data.probes` is four sentences of the same words whose
meanings differ only by who does what ("the dog that the man sees sleeps", "the man that the
dog sees sleeps", "the dog that sees the man sleeps", "the man that sees the dog sleeps"),
each with its gold translation. The four golds differ only in their role words: the words at
the positions where they do not all agree ("Der Hund, den der Mann sieht, schläft." against
"Der Hund, der den Mann sieht, schläft.": the nouns and the articles and pronoun that mark
their case), compared in lower case without punctuation. A translation's role words are its
words that are role words of its set, in order, and it is counted

- **right** when they are its own gold's (the roles right, whatever the verbs);
- **another's** when they are another sentence's of its set (the roles swapped);
- **neither** otherwise (a noun missing, a wrong case, an extra article).

The probe's score is the share right. Reported beside it: the share exactly equal to its gold
(every word) and the share whose first noun of the two is the gold's first (who does the main
verb: "the dog ... sleeps"). A translator that knows the roles scores 1; one that swaps the two
nouns scores 0 (all another's). A model that sees only which words a sentence has gives the
four sentences of a set one translation, so it scores at most 1/4 (at most 1/2 on the first
noun); ``sets_alike`` counts the sets translated that way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from minitrans.core.config import DataConfig
from minitrans.data.probes import OrderSet, order_sets


@dataclass
class OrderProbe:
    right: int = 0
    another: int = 0
    neither: int = 0
    exact: int = 0  # translations equal to their gold, word for word
    first_noun: int = 0  # translations whose first noun of the two is the gold's
    sets: int = 0
    sets_alike: int = 0  # sets whose four sentences got one and the same translation
    examples: list[dict[str, str]] = field(default_factory=list)  # the first set, sentence by sentence

    @property
    def sentences(self) -> int:
        return self.right + self.another + self.neither

    @property
    def share_right(self) -> float:
        return self.right / self.sentences if self.sentences else 0.0

    def summary(self) -> dict:
        count = max(self.sentences, 1)
        return {
            "order_probe_right": self.share_right,
            "order_probe_another": self.another / count,
            "order_probe_neither": self.neither / count,
            "order_probe_exact": self.exact / count,
            "order_probe_first_noun": self.first_noun / count,
            "order_probe_sentences": self.sentences,
            "order_probe_sets": self.sets,
            "order_probe_sets_alike": self.sets_alike,
            "order_probe_examples": self.examples,
        }


def _words(text: str) -> list[str]:
    return [word.strip(".,;:!?").lower() for word in text.split()]


def role_words(golds: Sequence[str]) -> set[str]:
    """The words at the positions where the golds of a set do not all agree (golds of one set
    have the same number of words: they differ only in which noun and which case stands where)."""
    rows = [_words(gold) for gold in golds]
    return {row[p] for p in range(min(map(len, rows))) if len({r[p] for r in rows}) > 1 for row in rows}


def _kept(text: str, vocabulary: set[str]) -> list[str]:
    return [word for word in _words(text) if word in vocabulary]


def _first_of(words: Sequence[str], nouns: set[str]) -> str | None:
    return next((word for word in words if word in nouns), None)


def oriented_sets(data: DataConfig, count: int = 100, seed: int = 0) -> list[list[tuple[str, str]]]:
    """``count`` order sets as (source, gold target) pairs in the run's direction (English to
    German, or German to English when ``data.src_lang`` is not "en")."""
    sets: list[OrderSet] = order_sets(count, seed)
    if data.src_lang == "en":
        return [list(s.pairs) for s in sets]
    return [[(de, en) for en, de in s.pairs] for s in sets]


def score_order_probe(
    sets: Sequence[Sequence[tuple[str, str]]], translate: Callable[[list[str]], list[str]]
) -> OrderProbe:
    """Translate every sentence of ``sets`` (all in one call) and count right / another's /
    neither by their role words, exact matches and right first nouns (module docstring)."""
    sources = [source for pairs in sets for source, _ in pairs]
    hypotheses = iter(hypothesis.strip() for hypothesis in translate(sources))
    probe = OrderProbe()
    for pairs in sets:
        golds = [gold.strip() for _, gold in pairs]
        outputs = [next(hypotheses) for _ in pairs]
        vocabulary = role_words(golds)
        gold_roles = [_kept(gold, vocabulary) for gold in golds]
        nouns = {_words(gold)[1] for gold in golds}  # every gold opens with its head: article, noun
        for (source, _), gold, roles, output in zip(pairs, golds, gold_roles, outputs):
            found = _kept(output, vocabulary)
            verdict = "right" if found == roles else "another's" if found in gold_roles else "neither"
            probe.right += verdict == "right"
            probe.another += verdict == "another's"
            probe.neither += verdict == "neither"
            probe.exact += output == gold
            first = _first_of(_words(output), nouns)
            probe.first_noun += first is not None and first == _first_of(_words(gold), nouns)
            if probe.sets == 0:
                probe.examples.append({"source": source, "gold": gold, "output": output, "verdict": verdict})
        probe.sets += 1
        probe.sets_alike += len(set(outputs)) == 1
    return probe


RESULT = "order_probe.json"  # what scripts/order_probe.py writes into a run's folder


def is_probe_result(path: str | Path) -> bool:
    """Whether ``path`` holds what scripts/order_probe.py writes (a probe's summary), so a
    rerun may replace it; any other file of that name is someone else's."""
    try:
        summary = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and bool(summary) and all(key.startswith("order_probe_") for key in summary)

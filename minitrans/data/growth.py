"""Random growth of the embedded grammar's sentence trees (:mod:`minitrans.data.grammar`):
a sentence starts as one short clause and grows, one random expansion at a time, towards a
target English length. :mod:`minitrans.data.generated` draws the corpus with it.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

from minitrans.data.grammar import (
    Clause,
    MainClause,
    NounPhrase,
    PrepPhrase,
    RelativeClause,
    Sentence,
    SubordinateClause,
    main_clause_en,
    noun_phrase_en,
    relative_clause_en,
    subordinate_en,
)
from minitrans.data.lexicon import (
    ADJECTIVES,
    ADVERBS,
    COORDINATORS,
    DETERMINERS,
    NOUNS,
    PREPOSITIONS,
    SUBORDINATORS,
    VERBS,
    Adjective,
    Noun,
    Preposition,
    Verb,
)


def _matches(tags: str, wanted: str) -> bool:
    return any(tag in wanted for tag in tags)


@functools.cache
def _nouns_for(wanted: str) -> tuple[Noun, ...]:
    return tuple(noun for noun in NOUNS.values() if _matches(noun.tags, wanted))


@functools.cache
def _adjectives_for(noun: Noun) -> tuple[Adjective, ...]:
    return tuple(adj for adj in ADJECTIVES.values() if noun.tags[0] in adj.tags)


@functools.cache
def _prepositions_for(noun: Noun) -> tuple[Preposition, ...]:
    return tuple(prep for prep in PREPOSITIONS.values() if _matches(noun.tags, prep.head_tags))


@functools.cache
def _verbs_for(frames: str, role: str = "", noun: Noun | None = None) -> tuple[Verb, ...]:
    """Verbs of the given frames; with ``noun``, those taking it as their subject or object."""
    return tuple(
        verb
        for verb in VERBS.values()
        if verb.frame in frames and (noun is None or _matches(noun.tags, getattr(verb, role + "_tags")))
    )


def _pick(rng: random.Random, items, cum_weights: list[int] | None = None):
    """rng.choice / rng.choices, leaner: corpus generation spends much of its time here."""
    if cum_weights is None:
        return items[int(rng.random() * len(items))]
    return items[bisect.bisect(cum_weights, rng.random() * cum_weights[-1])]


_DETERMINER_CHOICES = list(DETERMINERS.values())
_DETERMINER_CUM_WEIGHTS = list(itertools.accumulate([50, 22, 4, 5, 5, 4, 5, 5]))  # the, a, no, his ...
_CLAUSE_FRAMES, _CLAUSE_FRAME_CUM_WEIGHTS = "iadg", list(itertools.accumulate([15, 55, 15, 15]))
_ADVERB_CHOICES, _SUBORDINATOR_CHOICES = list(ADVERBS.values()), list(SUBORDINATORS.values())
_COORDINATOR_CHOICES, _COORDINATOR_CUM_WEIGHTS = [COORDINATORS["and"], COORDINATORS["but"]], [7, 10]


@dataclass(eq=False)
class _Site:
    """A noun phrase in the growing sentence, with what it may still receive."""

    np: NounPhrase
    pp_depth: int = 0
    in_relative: bool = False
    allows_relative: bool = True
    is_first_conjunct: bool = False  # stays unmodified, so "and" never hides an attachment


class _Grower:
    """Grows one random sentence, one expansion at a time, towards a target English length.

    Each expansion builds its new fragment, measures its English words, and only attaches
    it (and registers its noun phrases as new sites) when it fits in the room left.
    """

    MAX_MAINS, MAX_WRAPS = 3, 2

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.sites: list[_Site] = []
        self.arg_lists: list[tuple[list[NounPhrase], str]] = []  # (conjuncts, tags a new one needs)
        self.clauses: list[Clause] = []
        self.wraps = 0
        main = MainClause(self._new_clause())
        self._register_clause(main.clause)
        self.sentence = Sentence([main])
        self.length = len(main_clause_en(main))
        self.expansions: list[tuple[Callable[[int], int], float]] = [
            (self._add_adjective, 3.0),
            (self._add_prep_phrase, 2.0),
            (self._add_relative, 2.0),
            (self._coordinate, 1.0),
            (self._front_adverb, 1.0),
            (self._add_trailing, 1.5),
            (self._add_fronted, 0.5),
            (self._add_main, 1.5),
            (self._wrap_in_that_clause, 0.7),
        ]

    # ---- building fragments
    def _new_np(self, wanted_tags: str) -> NounPhrase:
        det = _pick(self.rng, _DETERMINER_CHOICES, _DETERMINER_CUM_WEIGHTS)
        return NounPhrase(_pick(self.rng, _nouns_for(wanted_tags)), det, self.rng.random() < 0.3)

    def _new_clause(self) -> Clause:
        frame = _pick(self.rng, _CLAUSE_FRAMES, _CLAUSE_FRAME_CUM_WEIGHTS)
        verb = _pick(self.rng, _verbs_for(frame))
        clause = Clause([self._new_np(verb.subject_tags)], verb)
        if frame != "i":
            clause.objects.append(self._new_np(verb.object_tags))
        if frame == "g" and self.rng.random() < 0.6:
            clause.recipient = self._new_np(verb.recipient_tags)
        return clause

    def _register_clause(self, clause: Clause) -> None:
        self.clauses.append(clause)
        self.arg_lists.append((clause.subject, clause.verb.subject_tags))
        self.sites.append(_Site(clause.subject[0]))
        if clause.objects:
            self.arg_lists.append((clause.objects, clause.verb.object_tags))
            self.sites.append(_Site(clause.objects[0]))
        if clause.recipient:
            self.sites.append(_Site(clause.recipient, allows_relative=False))

    # ---- expansions: each takes the room left in words and returns the words it added
    def _add_adjective(self, room: int) -> int:
        np = _pick(self.rng, self.sites).np
        used = {adj.order for adj in np.adjectives}
        choices = [adj for adj in _adjectives_for(np.noun) if adj.order not in used]
        if room < 1 or len(np.adjectives) >= 2 or not choices:
            return 0
        np.adjectives = sorted(np.adjectives + [_pick(self.rng, choices)], key=lambda adj: adj.order)
        return 1

    def _open_sites(self, needs_relative: bool) -> list[_Site]:
        return [
            site
            for site in self.sites
            if site.np.modifier is None
            and not site.is_first_conjunct
            and (site.pp_depth < 2 if not needs_relative else site.allows_relative and not site.in_relative)
        ]

    def _add_prep_phrase(self, room: int) -> int:
        sites = self._open_sites(needs_relative=False)
        if room < 2 or not sites:
            return 0
        site = _pick(self.rng, sites)
        prep = _pick(self.rng, _prepositions_for(site.np.noun))
        inner = self._new_np(prep.object_tags)
        added = len(prep.en.split()) + len(noun_phrase_en(inner))
        if inner.noun == site.np.noun or added > room:
            return 0
        site.np.modifier = PrepPhrase(prep, inner)
        self.sites.append(_Site(inner, site.pp_depth + 1, site.in_relative, site.allows_relative))
        return added

    def _add_relative(self, room: int) -> int:
        sites = self._open_sites(needs_relative=True)
        if room < 2 or not sites:
            return 0
        head = _pick(self.rng, sites).np
        is_subject_gap = self.rng.random() < 0.5
        verbs = _verbs_for("iadg", "subject", head.noun) if is_subject_gap else _verbs_for("adg", "object", head.noun)
        if not verbs:
            return 0
        verb = _pick(self.rng, verbs)
        other = None
        if not is_subject_gap:
            other = self._new_np(verb.subject_tags)
        elif verb.frame != "i":
            other = self._new_np(verb.object_tags)
        recipient = self._new_np(verb.recipient_tags) if verb.frame == "g" and self.rng.random() < 0.4 else None
        rel = RelativeClause(verb, is_subject_gap, other, recipient)
        added = len(relative_clause_en(rel, head.is_plural))
        if added > room:
            return 0
        head.modifier = rel
        if other:
            self.sites.append(_Site(other, pp_depth=1, in_relative=True))
        if recipient:
            self.sites.append(_Site(recipient, pp_depth=1, in_relative=True, allows_relative=False))
        return added

    def _coordinate(self, room: int) -> int:
        if room < 2:
            return 0
        args, wanted = _pick(self.rng, self.arg_lists)
        first = NounPhrase(
            _pick(self.rng, _nouns_for(wanted)), _pick(self.rng, _DETERMINER_CHOICES[:2]), self.rng.random() < 0.3
        )
        added = 1 + len(noun_phrase_en(first))
        if len(args) > 1 or first.noun == args[0].noun or added > room:
            return 0
        args.insert(0, first)
        self.sites.append(_Site(first, is_first_conjunct=True))
        return added

    def _front_adverb(self, room: int) -> int:
        main = _pick(self.rng, self.sentence.mains)
        if room < 1 or main.adverb or main.fronted:
            return 0
        main.adverb = _pick(self.rng, _ADVERB_CHOICES)
        return 1

    def _new_subordinate(self, room: int) -> SubordinateClause | None:
        if room < 3:  # the shortest clause has two words: "dogs sleep"
            return None
        sub = SubordinateClause(_pick(self.rng, _SUBORDINATOR_CHOICES), self._new_clause())
        return sub if len(subordinate_en(sub)) <= room else None

    def _add_trailing(self, room: int) -> int:
        main = _pick(self.rng, self.sentence.mains)
        if main.trailing or main.fronted or not (sub := self._new_subordinate(room)):
            return 0
        main.trailing = sub
        self._register_clause(sub.clause)
        return len(subordinate_en(sub))

    def _add_fronted(self, room: int) -> int:
        main = self.sentence.mains[0]  # a fronted clause only opens the sentence
        if main.trailing or main.fronted or main.adverb or not (sub := self._new_subordinate(room)):
            return 0
        main.fronted = sub
        self._register_clause(sub.clause)
        return len(subordinate_en(sub))

    def _add_main(self, room: int) -> int:
        if room < 3 or len(self.sentence.mains) >= self.MAX_MAINS:
            return 0
        main = MainClause(self._new_clause())
        added = 1 + len(main_clause_en(main))
        if added > room:
            return 0
        self.sentence.mains.append(main)
        self.sentence.coordinators.append(_pick(self.rng, _COORDINATOR_CHOICES, _COORDINATOR_CUM_WEIGHTS))
        self._register_clause(main.clause)
        return added

    def _wrap_in_that_clause(self, room: int) -> int:
        """Turn a clause X into "<someone> says that X", in place, so references stay valid."""
        if room < 3 or self.wraps >= self.MAX_WRAPS:
            return 0
        clause = _pick(self.rng, self.clauses)
        verb = _pick(self.rng, _verbs_for("c"))
        subject = self._new_np(verb.subject_tags)
        added = len(noun_phrase_en(subject)) + len(verb.en(subject.is_plural)) + 1
        if added > room:
            return 0
        inner = Clause(clause.subject, clause.verb, clause.objects, clause.recipient, clause.complement)
        clause.subject, clause.verb, clause.objects, clause.recipient = [subject], verb, [], None
        clause.complement = inner
        self.clauses.append(inner)
        self.arg_lists.append((clause.subject, verb.subject_tags))
        self.sites.append(_Site(subject))
        self.wraps += 1
        return added

    def grow(self, target_words: int) -> Sentence:
        slack = max(1, target_words // 15)
        ops, weights = zip(*self.expansions)
        cum_weights = list(itertools.accumulate(weights))
        failures = 0
        while self.length < target_words and failures < 60:
            added = _pick(self.rng, ops, cum_weights)(target_words + slack - self.length)
            self.length += added
            failures = 0 if added else failures + 1
        return self.sentence


def generate_sentence(rng: random.Random, target_words: int) -> Sentence:
    """A random sentence tree whose English has about ``target_words`` words."""
    return _Grower(rng).grow(target_words)

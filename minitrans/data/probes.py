"""Probe sentences the grammar makes with their gold structure (docs/claims.md): sentences whose
subject is linked to its verb across a relative clause, and sets of sentences whose meaning
depends only on word order.

Order sets: two nouns A and B, a transitive verb V and an intransitive verb W give four
sentences made of the same words, one for each way of giving the roles::

    the A that the B Vs Ws    (B sees A; A sleeps)        the A that Vs the B Ws   (A sees B)
    the B that the A Vs Ws    (A sees B; B sleeps)        the B that Vs the A Ws   (B sees A)

"The dog that the man sees sleeps", "the man that the dog sees sleeps", "the dog that sees the
man sleeps", "the man that sees the dog sleeps": the same seven English words, four meanings,
four German translations (the grammar's, so the gold is exact; a set is kept only when its
four translations differ, which the German cases do not always allow: "die Frau, die die
Katze sieht" is both object and subject gap). A model that sees only which words a sentence
has, not their order, cannot tell the four apart.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from minitrans.data.grammar import (
    Clause,
    MainClause,
    NounPhrase,
    RelativeClause,
    Sentence,
    SubjectLink,
    render,
    subject_links,
)
from minitrans.data.growth import generate_sentence
from minitrans.data.lexicon import DETERMINERS, NOUNS, VERBS, Noun, Verb


# ------------------------------------------------------------------ subject across a clause
@dataclass(frozen=True)
class SubjectPair:
    """A generated pair with its verb-to-subject links on each side (word indices)."""

    en: str
    de: str
    en_links: list[SubjectLink]
    de_links: list[SubjectLink]


def subject_pairs(count: int, seed: int = 0, min_words: int = 4, max_words: int = 55) -> list[SubjectPair]:
    """``count`` distinct generated pairs of ``min_words``..``max_words`` English words that hold
    at least one verb whose subject carries a relative clause (their own random stream: drawing
    them changes no other draw)."""
    rng = random.Random(seed)
    pairs: dict[str, SubjectPair] = {}
    for _ in range(200 * count + 1000):
        if len(pairs) == count:
            break
        sentence = generate_sentence(rng, rng.randint(min_words, max_words))
        en_links, de_links = subject_links(sentence)
        en, de = render(sentence)
        if en_links and min_words <= len(en.split()) <= max_words and en not in pairs:
            pairs[en] = SubjectPair(en, de, en_links, de_links)
    return list(pairs.values())


# ----------------------------------------------------------------------------- order sets
@dataclass(frozen=True)
class OrderSet:
    """Four (English, German) pairs of the same English words; ``twins[i]`` is the sentence
    with the two nouns exchanged (the roles swapped, the construction kept)."""

    pairs: list[tuple[str, str]]
    twins: tuple[int, ...] = (1, 0, 3, 2)


def _matches(tags: str, wanted: str) -> bool:
    return any(tag in wanted for tag in tags)


def _relative_sentence(head: Noun, other: Noun, verb: Verb, main_verb: Verb, is_subject_gap: bool) -> Sentence:
    the = DETERMINERS["the"]
    relative = RelativeClause(verb, is_subject_gap, other=NounPhrase(other, the))
    return Sentence([MainClause(Clause([NounPhrase(head, the, modifier=relative)], main_verb))])


def order_set(a: Noun, b: Noun, verb: Verb, main_verb: Verb) -> OrderSet | None:
    """The four sentences of nouns ``a``, ``b``, transitive ``verb`` and intransitive
    ``main_verb`` (module docstring), or None when two of their translations are the same."""
    trees = [
        _relative_sentence(a, b, verb, main_verb, False),
        _relative_sentence(b, a, verb, main_verb, False),
        _relative_sentence(a, b, verb, main_verb, True),
        _relative_sentence(b, a, verb, main_verb, True),
    ]
    pairs = [render(tree) for tree in trees]
    if len({en for en, _ in pairs}) < 4 or len({de for _, de in pairs}) < 4:
        return None
    return OrderSet(pairs)


def order_sets(count: int, seed: int = 0) -> list[OrderSet]:
    """``count`` distinct order sets of animate nouns (people and animals: each can see the
    other), a verb of frame "a" taking both as subject and object, an intransitive verb taking
    both as subject; drawn from their own random stream."""
    rng = random.Random(seed)
    animate = sorted((n for n in NOUNS.values() if n.tags[0] in "pa"), key=lambda n: n.en_sg)
    transitive = sorted((v for v in VERBS.values() if v.frame == "a"), key=lambda v: v.en_sg)
    intransitive = sorted((v for v in VERBS.values() if v.frame == "i"), key=lambda v: v.en_sg)
    found: dict[tuple[str, ...], OrderSet] = {}
    for _ in range(100 * count + 1000):
        if len(found) == count:
            break
        a, b = rng.sample(animate, 2)
        verbs = [v for v in transitive if all(_matches(n.tags, v.subject_tags) for n in (a, b))]
        verbs = [v for v in verbs if all(_matches(n.tags, v.object_tags) for n in (a, b))]
        main_verbs = [v for v in intransitive if all(_matches(n.tags, v.subject_tags) for n in (a, b))]
        if not verbs or not main_verbs:
            continue
        verb, main_verb = rng.choice(verbs), rng.choice(main_verbs)
        key = tuple(sorted((a.en_sg, b.en_sg))) + (verb.en_sg, main_verb.en_sg)
        made = order_set(a, b, verb, main_verb) if key not in found else None
        if made is not None:
            found[key] = made
    return list(found.values())

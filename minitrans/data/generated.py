"""The embedded English→German corpus: sentence pairs generated from a small bilingual grammar.

It is the offline default training corpus. A Transformer learns it to test BLEU above 90 in
minutes on a laptop CPU, and its long sentences (up to 55 words, with verb-final clauses
that move the German verb far from where the English puts it) expose a fixed-context RNN
that must squeeze the whole source into one vector.

Grammar fragment (English side; the German side is built from the same tree)::

    Sentence  := Main ((", and" | ", but") Main){0,2}
    Main      := [Adverb] Clause [Sub] | Sub "," Clause      a fronted Sub only opens the sentence
    Sub       := ("because" | "although" | "while" | "if" | "before") Clause
    Clause    := Args Verb [Recipient] [Args] ["that" Clause]
    Args      := NP | NP "and" NP                          the first conjunct stays unmodified
    NP        := Det Adj{0,2} Noun [PP | Relative]
    PP        := Prep NP
    Relative  := "that" Verb [Recipient] [NP]              subject gap: "the dog that sees the man"
               | "that" NP Verb [Recipient]                object gap: "the dog that the man sees"

German realisation: three genders and plural; nominative, accusative and dative on articles,
adjectives (weak after der/die/das, mixed after ein/kein/possessives, strong after no article)
and relative pronouns; the dative plural -n on nouns; present-tense verbs agreeing in number
(coordinated subjects are plural); verb second in main clauses, with inversion after a fronted
adverb or a fronted subordinate clause; verb final in relative, subordinate and dass clauses;
a comma before every embedded clause and one closing it whenever the sentence goes on.

Design choices that keep one correct German translation per English sentence:
- Present tense, third person only; no pronouns; "that" introduces every English relative clause.
- Prepositions modify nouns, never verbs, and only those that never contract with the article
  (no "im", "beim", "zum"); two-way prepositions are used for location only, so with the dative.
- A noun phrase takes a prepositional phrase or a relative clause, not both, so a relative
  clause always belongs to the nearest noun; relative clauses do not nest, and a dative
  recipient takes none (``shows the woman that ...`` would be ambiguous in English).
- Relative clauses stay next to their noun (no extraposition); main clauses are joined by
  "und" without a comma and by ", aber"; "if" is rendered "wenn".
- Nouns that decline weakly (der Junge, den Jungen) and English nouns whose plural equals the
  singular (fish, sheep) are left out.
Semantic tags on nouns keep the sentences sensible: people read books, dogs do not.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from minitrans.data.lexicon import (
    ADJECTIVES,
    ADVERBS,
    COMPLEMENTIZER,
    COORDINATORS,
    DAT,
    DETERMINERS,
    LEXICON_SIZE,
    NOM,
    NOUNS,
    PREPOSITIONS,
    SUBORDINATORS,
    VERBS,
    Adjective,
    Determiner,
    Noun,
    Preposition,
    Verb,
    Word,
)

# --------------------------------------------------------------------------- German endings
# Per gender key ("m", "f", "n", "pl"): the forms for (nominative, accusative, dative).
_DEFINITE = {
    "m": ("der", "den", "dem"),
    "f": ("die", "die", "der"),
    "n": ("das", "das", "dem"),
    "pl": ("die", "die", "den"),
}
_EIN_WORD = {"m": ("", "en", "em"), "f": ("e", "e", "er"), "n": ("", "", "em"), "pl": ("e", "e", "en")}
_WEAK = {"m": ("e", "en", "en"), "f": ("e", "e", "en"), "n": ("e", "e", "en"), "pl": ("en", "en", "en")}
_MIXED = {"m": ("er", "en", "en"), "f": ("e", "e", "en"), "n": ("es", "es", "en"), "pl": ("en", "en", "en")}
_STRONG_PLURAL = ("e", "e", "en")
_RELATIVE = {
    "m": ("der", "den", "dem"),
    "f": ("die", "die", "der"),
    "n": ("das", "das", "dem"),
    "pl": ("die", "die", "denen"),
}


# ------------------------------------------------------------------------------ syntax tree
@dataclass(eq=False)
class NounPhrase:
    noun: Noun
    det: Determiner
    is_plural: bool = False
    adjectives: list[Adjective] = field(default_factory=list)
    modifier: PrepPhrase | RelativeClause | None = None


@dataclass(eq=False)
class PrepPhrase:
    prep: Preposition
    np: NounPhrase


@dataclass(eq=False)
class RelativeClause:
    """A clause with a gap for the noun it modifies: its subject or its (first) object."""

    verb: Verb
    is_subject_gap: bool
    other: NounPhrase | None = None  # the object (subject gap) or the subject (object gap)
    recipient: NounPhrase | None = None


@dataclass(eq=False)
class Clause:
    subject: list[NounPhrase]  # one noun phrase, or two joined by "and"
    verb: Verb
    objects: list[NounPhrase] = field(default_factory=list)
    recipient: NounPhrase | None = None
    complement: Clause | None = None  # the "that" clause of a frame-c verb


@dataclass(eq=False)
class SubordinateClause:
    conjunction: Word
    clause: Clause


@dataclass(eq=False)
class MainClause:
    clause: Clause
    adverb: Word | None = None  # fronted: "today the man reads ..." -> "heute liest der Mann ..."
    fronted: SubordinateClause | None = None
    trailing: SubordinateClause | None = None


@dataclass(eq=False)
class Sentence:
    mains: list[MainClause]
    coordinators: list[Word] = field(default_factory=list)  # one between each pair of mains


# ------------------------------------------------------------------------------- rendering
def _is_plural(args: list[NounPhrase]) -> bool:
    return len(args) > 1 or args[0].is_plural


def noun_phrase_en(np: NounPhrase) -> list[str]:
    noun = np.noun.en(np.is_plural)
    article = np.det.en_pl if np.is_plural else np.det.en_sg
    if article == "a" and (np.adjectives[0].en if np.adjectives else noun)[0] in "aeiou":
        article = "an"
    words = ([article] if article else []) + [adj.en for adj in np.adjectives] + [noun]
    if isinstance(np.modifier, PrepPhrase):
        words += np.modifier.prep.en.split() + noun_phrase_en(np.modifier.np)
    elif isinstance(np.modifier, RelativeClause):
        words += relative_clause_en(np.modifier, np.is_plural)
    return words


def noun_phrase_de(np: NounPhrase, case: int) -> list[str]:
    gender = "pl" if np.is_plural else np.noun.gender
    stem = np.det.de_stem
    if not stem:
        words, endings = [_DEFINITE[gender][case]], _WEAK[gender]
    elif np.is_plural and stem == "ein":
        words, endings = [], _STRONG_PLURAL  # bare plural: große Hunde
    else:
        words, endings = [stem + _EIN_WORD[gender][case]], _MIXED[gender]
    words += [adj.de_stem + endings[case] for adj in np.adjectives]
    words.append(np.noun.de(np.is_plural, case))
    if isinstance(np.modifier, PrepPhrase):
        words += [np.modifier.prep.de] + noun_phrase_de(np.modifier.np, np.modifier.prep.case)
    elif isinstance(np.modifier, RelativeClause):
        words += relative_clause_de(np.modifier, gender)
    return words


def _args_en(args: list[NounPhrase]) -> list[str]:
    words: list[str] = []
    for np in args:
        words += (["and"] if words else []) + noun_phrase_en(np)
    return words


def _args_de(args: list[NounPhrase], case: int) -> list[str]:
    words: list[str] = []
    for np in args:
        words += (["und"] if words else []) + noun_phrase_de(np, case)
    return words


def relative_clause_en(rel: RelativeClause, head_is_plural: bool) -> list[str]:
    recipient = noun_phrase_en(rel.recipient) if rel.recipient else []
    if rel.is_subject_gap:
        other = noun_phrase_en(rel.other) if rel.other else []
        return ["that"] + rel.verb.en(head_is_plural) + recipient + other
    return ["that"] + noun_phrase_en(rel.other) + rel.verb.en(rel.other.is_plural) + recipient


def relative_clause_de(rel: RelativeClause, head_gender: str) -> list[str]:
    """Verb-final clause between commas; the closing comma merges with any that follows."""
    recipient = noun_phrase_de(rel.recipient, DAT) if rel.recipient else []
    if rel.is_subject_gap:
        other = noun_phrase_de(rel.other, rel.verb.object_case) if rel.other else []
        pronoun, middle, verb = _RELATIVE[head_gender][NOM], recipient + other, rel.verb.de(head_gender == "pl")
    else:
        pronoun = _RELATIVE[head_gender][rel.verb.object_case]
        middle, verb = noun_phrase_de(rel.other, NOM) + recipient, rel.verb.de(rel.other.is_plural)
    return [",", pronoun] + middle + [verb, ","]


def clause_en(clause: Clause) -> list[str]:
    words = _args_en(clause.subject) + clause.verb.en(_is_plural(clause.subject))
    if clause.recipient:
        words += noun_phrase_en(clause.recipient)
    words += _args_en(clause.objects)
    if clause.complement:
        words += [COMPLEMENTIZER.en] + clause_en(clause.complement)
    return words


def clause_de(clause: Clause, is_verb_final: bool, front: list[str] | None = None) -> list[str]:
    """Verb second (after ``front`` if given, else after the subject) or verb final."""
    subject = _args_de(clause.subject, NOM)
    rest = noun_phrase_de(clause.recipient, DAT) if clause.recipient else []
    rest += _args_de(clause.objects, clause.verb.object_case)
    verb = [clause.verb.de(_is_plural(clause.subject))]
    if is_verb_final:
        words = subject + rest + verb
    elif front:
        words = front + verb + subject + rest
    else:
        words = subject + verb + rest
    if clause.complement:
        words += [",", COMPLEMENTIZER.de] + clause_de(clause.complement, is_verb_final=True) + [","]
    return words


def _subordinate_en(sub: SubordinateClause) -> list[str]:
    return [sub.conjunction.en] + clause_en(sub.clause)


def _subordinate_de(sub: SubordinateClause) -> list[str]:
    return [sub.conjunction.de] + clause_de(sub.clause, is_verb_final=True) + [","]


def main_clause_en(main: MainClause) -> list[str]:
    words = [main.adverb.en] if main.adverb else []
    if main.fronted:
        words += _subordinate_en(main.fronted) + [","]
    words += clause_en(main.clause)
    if main.trailing:
        words += _subordinate_en(main.trailing)
    return words


def main_clause_de(main: MainClause) -> list[str]:
    front = [main.adverb.de] if main.adverb else _subordinate_de(main.fronted) if main.fronted else None
    words = clause_de(main.clause, is_verb_final=False, front=front)
    if main.trailing:
        words += [","] + _subordinate_de(main.trailing)
    return words


def _join(tokens: list[str]) -> str:
    """Words and "," tokens to a sentence: no doubled comma, none before the final period."""
    out: list[str] = []
    for token in tokens:
        if token != "," or (out and out[-1] != ","):
            out.append(token)
    while out and out[-1] == ",":
        out.pop()
    text = " ".join(out).replace(" ,", ",") + "."
    return text[0].upper() + text[1:]


def render(sentence: Sentence) -> tuple[str, str]:
    """The (English, German) strings of a sentence tree."""
    en, de = main_clause_en(sentence.mains[0]), main_clause_de(sentence.mains[0])
    for coordinator, main in zip(sentence.coordinators, sentence.mains[1:]):
        en += [",", coordinator.en] + main_clause_en(main)
        # German joins main clauses with "und" without a comma, but "aber" always takes one.
        de += ([","] if coordinator.de == "aber" else []) + [coordinator.de] + main_clause_de(main)
    return _join(en), _join(de)


# -------------------------------------------------------------------------- random growth
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
        return sub if len(_subordinate_en(sub)) <= room else None

    def _add_trailing(self, room: int) -> int:
        main = _pick(self.rng, self.sentence.mains)
        if main.trailing or main.fronted or not (sub := self._new_subordinate(room)):
            return 0
        main.trailing = sub
        self._register_clause(sub.clause)
        return len(_subordinate_en(sub))

    def _add_fronted(self, room: int) -> int:
        main = self.sentence.mains[0]  # a fronted clause only opens the sentence
        if main.trailing or main.fronted or main.adverb or not (sub := self._new_subordinate(room)):
            return 0
        main.fronted = sub
        self._register_clause(sub.clause)
        return len(_subordinate_en(sub))

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


def generate_pair(rng: random.Random, target_words: int) -> tuple[str, str]:
    """One (english, german) pair whose English has about target_words words (close to it, not exact)."""
    return render(generate_sentence(rng, target_words))


# ------------------------------------------------------------------------------- the corpus
def length_buckets(min_words: int, max_words: int) -> list[tuple[int, int]]:
    """Inclusive length buckets for the stratified test split: 4-10, 11-20, ..., 41-55 by default."""
    edges = [min_words] + [edge for edge in (11, 21, 31, 41) if min_words < edge <= max_words] + [max_words + 1]
    return [(lo, hi - 1) for lo, hi in zip(edges, edges[1:])]


def _draw(rng: random.Random, count: int, lengths: Callable[[], tuple[int, int, int]], seen: set[str]):
    """``count`` new pairs; ``lengths()`` gives (target, lowest, highest) English word counts."""
    pairs: list[tuple[str, str]] = []
    attempts = 0
    while len(pairs) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise RuntimeError(f"could only generate {len(pairs)} of {count} distinct pairs")
        target, lowest, highest = lengths()
        en, de = generate_pair(rng, target)
        if lowest <= len(en.split()) <= highest and en not in seen:
            seen.add(en)
            pairs.append((en, de))
    return pairs


def generate_corpus(
    num_train: int = 30000,
    num_valid: int = 500,
    num_test: int = 1000,
    min_words: int = 4,
    max_words: int = 55,
    seed: int = 1234,
) -> dict[str, list[tuple[str, str]]]:
    """{"train": [...], "valid": [...], "test": [...]} of (english, german) pairs.

    Train and valid lengths follow a triangular law peaking at ``min_words`` (most pairs
    short or medium, a tail to ``max_words``); test has equal numbers in each length bucket of
    :func:`length_buckets`. No English sentence appears twice, within or across splits. Each split
    draws from its own seeded generator, test first, then valid, then train, each skipping the
    sentences already drawn: the test split does not depend on the sizes asked for the others.
    """
    seen: set[str] = set()
    rngs = {split: random.Random(f"minitrans.generated:{seed}:{split}") for split in ("train", "valid", "test")}

    buckets = length_buckets(min_words, max_words)
    test: list[tuple[str, str]] = []
    for i, (lo, hi) in enumerate(buckets):
        count = num_test // len(buckets) + (i < num_test % len(buckets))
        test += _draw(rngs["test"], count, lambda lo=lo, hi=hi: (rngs["test"].randint(lo, hi), lo, hi), seen)
    rngs["test"].shuffle(test)

    def skewed(rng: random.Random) -> Callable[[], tuple[int, int, int]]:
        return lambda: (round(rng.triangular(min_words, max_words, min_words)), min_words, max_words)

    valid = _draw(rngs["valid"], num_valid, skewed(rngs["valid"]), seen)
    train = _draw(rngs["train"], num_train, skewed(rngs["train"]), seen)
    return {"train": train, "valid": valid, "test": test}


# ------------------------------------------------------------------- what a model can know
def coverage_summary() -> str:
    """What the grammar covers, in a few lines, for a model card (``translate.py RUN --info``):
    a model trained on this corpus knows nothing outside it."""
    return (
        "Statements in the present tense, third person only: no pronouns (I, you, he), no questions, "
        "no past or future.\n"
        f"A fixed lexicon of {LEXICON_SIZE} words: {len(NOUNS)} nouns, {len(VERBS)} verbs, "
        f"{len(ADJECTIVES)} adjectives, {len(PREPOSITIONS)} prepositions, {len(ADVERBS)} adverbs, "
        f"{len(DETERMINERS)} determiners ({', '.join(DETERMINERS)}).\n"
        'Noun phrases with up to two adjectives and a prepositional phrase or a relative clause with "that" '
        '(never "who" or "which"); "that"-clauses; subordinate clauses with '
        f'{", ".join(SUBORDINATORS)}; up to three main clauses joined by ", and" or ", but".'
    )


def example_pairs(count: int = 3, seed: int = 0, words: tuple[int, ...] = (5, 8, 12)) -> list[tuple[str, str]]:
    """A few (english, german) pairs of the grammar, short to longer, the same every time."""
    rng = random.Random(f"minitrans.generated.examples:{seed}")
    return [generate_pair(rng, words[i % len(words)]) for i in range(count)]

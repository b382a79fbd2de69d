"""The embedded grammar's sentence trees and their English and German realisations, with the
gold word alignment between the two (:mod:`minitrans.data.generated` grows the trees).

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

Gold alignment: every word is rendered as a token ``(text, origin)``, the origin naming the
tree node and role it realises (an article, a noun, a verb, the relative "that"). A German word
is linked to the English words of the same origin, wherever the verb moved: a sure link when
that is one English word, possible links when it is several ("looks for" - "sucht", "in front
of" - "vor"). Case endings and the dative plural -n belong to their word, the relative pronoun
realises "that". A word of one side whose origin the other side lacks stays unlinked; this
grammar has none, so every word of a pair is linked.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from minitrans.data.lexicon import COMPLEMENTIZER, DAT, NOM, Adjective, Determiner, Noun, Preposition, Verb, Word

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
Token = tuple[str, Hashable]  # (text, origin): (tree node, role) it realises, nodes hashed by identity; "," has None
_COMMA: Token = (",", None)


def _is_plural(args: list[NounPhrase]) -> bool:
    return len(args) > 1 or args[0].is_plural


def _np_en(np: NounPhrase) -> list[Token]:
    noun = np.noun.en(np.is_plural)
    article = np.det.en_pl if np.is_plural else np.det.en_sg
    if article == "a" and (np.adjectives[0].en if np.adjectives else noun)[0] in "aeiou":
        article = "an"
    tokens = [(article, (np, "det"))] if article else []
    tokens += [(adj.en, (np, f"adj{i}")) for i, adj in enumerate(np.adjectives)]
    tokens.append((noun, (np, "noun")))
    if isinstance(np.modifier, PrepPhrase):
        tokens += [(word, (np.modifier, "prep")) for word in np.modifier.prep.en.split()]
        tokens += _np_en(np.modifier.np)
    elif isinstance(np.modifier, RelativeClause):
        tokens += _relative_en(np.modifier, np.is_plural)
    return tokens


def _np_de(np: NounPhrase, case: int) -> list[Token]:
    gender = "pl" if np.is_plural else np.noun.gender
    stem = np.det.de_stem
    if not stem:
        tokens, endings = [(_DEFINITE[gender][case], (np, "det"))], _WEAK[gender]
    elif np.is_plural and stem == "ein":
        tokens, endings = [], _STRONG_PLURAL  # bare plural: große Hunde
    else:
        tokens, endings = [(stem + _EIN_WORD[gender][case], (np, "det"))], _MIXED[gender]
    tokens += [(adj.de_stem + endings[case], (np, f"adj{i}")) for i, adj in enumerate(np.adjectives)]
    tokens.append((np.noun.de(np.is_plural, case), (np, "noun")))
    if isinstance(np.modifier, PrepPhrase):
        tokens.append((np.modifier.prep.de, (np.modifier, "prep")))
        tokens += _np_de(np.modifier.np, np.modifier.prep.case)
    elif isinstance(np.modifier, RelativeClause):
        tokens += _relative_de(np.modifier, gender)
    return tokens


def _args_en(args: list[NounPhrase]) -> list[Token]:
    tokens: list[Token] = []
    for np in args:
        tokens += ([("and", (np, "and"))] if tokens else []) + _np_en(np)
    return tokens


def _args_de(args: list[NounPhrase], case: int) -> list[Token]:
    tokens: list[Token] = []
    for np in args:
        tokens += ([("und", (np, "and"))] if tokens else []) + _np_de(np, case)
    return tokens


def _verb_en(verb: Verb, is_plural: bool, node: object) -> list[Token]:
    return [(word, (node, "verb")) for word in verb.en(is_plural)]


def _relative_en(rel: RelativeClause, head_is_plural: bool) -> list[Token]:
    that = [("that", (rel, "that"))]
    recipient = _np_en(rel.recipient) if rel.recipient else []
    if rel.is_subject_gap:
        other = _np_en(rel.other) if rel.other else []
        return that + _verb_en(rel.verb, head_is_plural, rel) + recipient + other
    return that + _np_en(rel.other) + _verb_en(rel.verb, rel.other.is_plural, rel) + recipient


def _relative_de(rel: RelativeClause, head_gender: str) -> list[Token]:
    """Verb-final clause between commas; the closing comma merges with any that follows."""
    recipient = _np_de(rel.recipient, DAT) if rel.recipient else []
    if rel.is_subject_gap:
        other = _np_de(rel.other, rel.verb.object_case) if rel.other else []
        pronoun, middle, verb = _RELATIVE[head_gender][NOM], recipient + other, rel.verb.de(head_gender == "pl")
    else:
        pronoun = _RELATIVE[head_gender][rel.verb.object_case]
        middle, verb = _np_de(rel.other, NOM) + recipient, rel.verb.de(rel.other.is_plural)
    return [_COMMA, (pronoun, (rel, "that"))] + middle + [(verb, (rel, "verb")), _COMMA]


def _clause_en(clause: Clause) -> list[Token]:
    tokens = _args_en(clause.subject) + _verb_en(clause.verb, _is_plural(clause.subject), clause)
    if clause.recipient:
        tokens += _np_en(clause.recipient)
    tokens += _args_en(clause.objects)
    if clause.complement:
        tokens += [(COMPLEMENTIZER.en, (clause, "that"))] + _clause_en(clause.complement)
    return tokens


def _clause_de(clause: Clause, is_verb_final: bool, front: list[Token] | None = None) -> list[Token]:
    """Verb second (after ``front`` if given, else after the subject) or verb final."""
    subject = _args_de(clause.subject, NOM)
    rest = _np_de(clause.recipient, DAT) if clause.recipient else []
    rest += _args_de(clause.objects, clause.verb.object_case)
    verb = [(clause.verb.de(_is_plural(clause.subject)), (clause, "verb"))]
    if is_verb_final:
        tokens = subject + rest + verb
    elif front:
        tokens = front + verb + subject + rest
    else:
        tokens = subject + verb + rest
    if clause.complement:
        that = (COMPLEMENTIZER.de, (clause, "that"))
        tokens += [_COMMA, that] + _clause_de(clause.complement, is_verb_final=True) + [_COMMA]
    return tokens


def _subordinate_en(sub: SubordinateClause) -> list[Token]:
    return [(sub.conjunction.en, (sub, "conjunction"))] + _clause_en(sub.clause)


def _subordinate_de(sub: SubordinateClause) -> list[Token]:
    conjunction = (sub.conjunction.de, (sub, "conjunction"))
    return [conjunction] + _clause_de(sub.clause, is_verb_final=True) + [_COMMA]


def _main_en(main: MainClause) -> list[Token]:
    tokens = [(main.adverb.en, (main, "adverb"))] if main.adverb else []
    if main.fronted:
        tokens += _subordinate_en(main.fronted) + [_COMMA]
    tokens += _clause_en(main.clause)
    if main.trailing:
        tokens += _subordinate_en(main.trailing)
    return tokens


def _main_de(main: MainClause) -> list[Token]:
    adverb = [(main.adverb.de, (main, "adverb"))] if main.adverb else None
    front = adverb or (_subordinate_de(main.fronted) if main.fronted else None)
    tokens = _clause_de(main.clause, is_verb_final=False, front=front)
    if main.trailing:
        tokens += [_COMMA] + _subordinate_de(main.trailing)
    return tokens


def _texts(tokens: list[Token]) -> list[str]:
    return [text for text, _ in tokens]


def noun_phrase_en(np: NounPhrase) -> list[str]:
    return _texts(_np_en(np))


def noun_phrase_de(np: NounPhrase, case: int) -> list[str]:
    return _texts(_np_de(np, case))


def relative_clause_en(rel: RelativeClause, head_is_plural: bool) -> list[str]:
    return _texts(_relative_en(rel, head_is_plural))


def clause_en(clause: Clause) -> list[str]:
    return _texts(_clause_en(clause))


def subordinate_en(sub: SubordinateClause) -> list[str]:
    return _texts(_subordinate_en(sub))


def main_clause_en(main: MainClause) -> list[str]:
    return _texts(_main_en(main))


def _join(tokens: list[Token]) -> tuple[str, list[Hashable]]:
    """Tokens to a sentence (no doubled comma, none before the final period; a comma or the period
    sticks to the word before it) and the origin of each of its space-separated words."""
    out: list[Token] = []
    for token in tokens:
        if token[0] != "," or (out and out[-1][0] != ","):
            out.append(token)
    while out and out[-1][0] == ",":
        out.pop()
    text = " ".join(_texts(out)).replace(" ,", ",") + "."
    return text[0].upper() + text[1:], [origin for word, origin in out if word != ","]


def _tokens(sentence: Sentence) -> tuple[list[Token], list[Token]]:
    en, de = _main_en(sentence.mains[0]), _main_de(sentence.mains[0])
    for i, (coordinator, main) in enumerate(zip(sentence.coordinators, sentence.mains[1:])):
        origin = (sentence, f"coordinator{i}")
        en += [_COMMA, (coordinator.en, origin)] + _main_en(main)
        # German joins main clauses with "und" without a comma, but "aber" always takes one.
        de += ([_COMMA] if coordinator.de == "aber" else []) + [(coordinator.de, origin)] + _main_de(main)
    return en, de


def render(sentence: Sentence) -> tuple[str, str]:
    """The (English, German) strings of a sentence tree."""
    en, de = _tokens(sentence)
    return _join(en)[0], _join(de)[0]


def render_aligned(sentence: Sentence) -> tuple[str, str, str]:
    """(English, German, gold alignment): the alignment in Pharaoh format, ``i-j`` a sure and
    ``i?j`` a possible link between English word i and German word j (0-based, words split at
    spaces), sorted by j then i."""
    (en, en_origins), (de, de_origins) = (_join(tokens) for tokens in _tokens(sentence))
    english_words: dict[Hashable, list[int]] = {}
    for i, origin in enumerate(en_origins):
        english_words.setdefault(origin, []).append(i)
    links = []
    for j, origin in enumerate(de_origins):
        sources = english_words.get(origin, [])
        links += [f"{i}{'-' if len(sources) == 1 else '?'}{j}" for i in sources]
    return en, de, " ".join(links)


# ------------------------------------------------------------------- long-range syntax links
SubjectLink = tuple[list[int], list[int]]  # (the verb's word indices, its subject's head nouns')


def _clauses(sentence: Sentence) -> list[Clause]:
    """Every clause of a sentence tree in reading order (mains, their subordinates, "that" clauses)."""
    found: list[Clause] = []

    def visit(clause: Clause) -> None:
        found.append(clause)
        if clause.complement:
            visit(clause.complement)

    for main in sentence.mains:
        for part in (main.fronted, main, main.trailing):
            if part is not None:
                visit(part.clause)
    return found


def subject_links(sentence: Sentence) -> tuple[list[SubjectLink], list[SubjectLink]]:
    """English and German links from a clause's verb to its subject, for each clause whose subject
    carries a relative clause (so the two are apart: "the dog that the man sees sleeps" links
    "sleeps" to "dog"): word indices as :func:`render_aligned` counts them (split at spaces).
    The subject's head nouns are linked (both conjuncts of "the cat and the dog that ..."), not
    its articles or the relative clause; the verb's words are all its words ("looks for")."""
    (_, en_origins), (_, de_origins) = (_join(tokens) for tokens in _tokens(sentence))
    sides = []
    for origins in (en_origins, de_origins):
        where: dict[Hashable, list[int]] = {}
        for i, origin in enumerate(origins):
            where.setdefault(origin, []).append(i)
        links = []
        for clause in _clauses(sentence):
            if any(isinstance(np.modifier, RelativeClause) for np in clause.subject):
                nouns = [i for np in clause.subject for i in where.get((np, "noun"), [])]
                links.append((where.get((clause, "verb"), []), nouns))
        sides.append(links)
    return sides[0], sides[1]

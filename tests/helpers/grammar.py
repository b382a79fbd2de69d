"""The grammar's sentence trees written as their words (``np("the big dogs")``, ``clause("the man",
"reads", "the book")``), and the hand-checked golden pairs built from them (each German string was
checked by hand); test_generated renders them, test_gold_alignment covers their constructions."""

from __future__ import annotations

import dataclasses

from minitrans.data.grammar import (
    Clause,
    MainClause,
    NounPhrase,
    PrepPhrase,
    RelativeClause,
    Sentence,
    SubordinateClause,
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
)

_PLURALS = {noun.en_pl: noun for noun in NOUNS.values()}
# Verbs by either English form: "sees" / "see", "knows that" / "know that".
_VERB_FORMS = {key.replace(verb.en_sg, verb.en_pl, 1): verb for key, verb in VERBS.items()} | VERBS


# ------------------------------------------------------------------------ tree helpers
def np(text: str, modifier: PrepPhrase | RelativeClause | None = None) -> NounPhrase:
    """'the big dogs' -> NounPhrase; no determiner means a bare plural ('big dogs')."""
    words = text.split()
    det = DETERMINERS["a" if words[0] == "an" else words[0]] if words[0] in DETERMINERS or words[0] == "an" else None
    if det:
        words = words[1:]
    *adjectives, noun = words
    is_plural = noun in _PLURALS and noun not in NOUNS
    return NounPhrase(
        _PLURALS[noun] if is_plural else NOUNS[noun],
        det or DETERMINERS["a"],
        is_plural,
        [ADJECTIVES[adj] for adj in adjectives],
        modifier,
    )


def pp(prep: str, text: str) -> PrepPhrase:
    return PrepPhrase(PREPOSITIONS[prep], np(text))


def who(verb: str, obj: str | None = None, recipient: str | None = None) -> RelativeClause:
    """Subject gap: 'that sees the man'."""
    return RelativeClause(_VERB_FORMS[verb], True, np(obj) if obj else None, np(recipient) if recipient else None)


def whom(subject: str, verb: str, recipient: str | None = None) -> RelativeClause:
    """Object gap: 'that the man sees'."""
    return RelativeClause(_VERB_FORMS[verb], False, np(subject), np(recipient) if recipient else None)


def clause(subject, verb: str, *objects, recipient=None, complement: Clause | None = None) -> Clause:
    subjects = [subject] if isinstance(subject, (str, NounPhrase)) else list(subject)
    as_np = lambda x: np(x) if isinstance(x, str) else x
    return Clause(
        [as_np(s) for s in subjects],
        _VERB_FORMS[verb],
        [as_np(o) for o in objects],
        as_np(recipient) if recipient else None,
        complement,
    )


def sub(conjunction: str, body: Clause) -> SubordinateClause:
    return SubordinateClause(SUBORDINATORS[conjunction], body)


def main(body: Clause, adverb: str | None = None, fronted=None, trailing=None) -> MainClause:
    return MainClause(body, ADVERBS[adverb] if adverb else None, fronted, trailing)


def sentence(*parts) -> Sentence:
    """sentence(main1, "and", main2, ...); a bare Clause counts as a plain main clause."""
    mains = [p if isinstance(p, MainClause) else main(p) for p in parts[::2]]
    return Sentence(mains, [COORDINATORS[c] for c in parts[1::2]])


# (tree, English, German): every construction the grammar has, each pair rendered and checked by hand
GOLDEN = [
    # plain verb-second clauses, irregular verbs and umlaut plurals
    (sentence(clause("the man", "reads", "the book")), "The man reads the book.", "Der Mann liest das Buch."),
    (
        sentence(clause("the woman", "sees", "the big dog")),
        "The woman sees the big dog.",
        "Die Frau sieht den großen Hund.",
    ),
    (
        sentence(clause("a big dog", "sees", "a small cat")),
        "A big dog sees a small cat.",
        "Ein großer Hund sieht eine kleine Katze.",
    ),
    (
        sentence(clause("the man", "carries", "the children")),
        "The man carries the children.",
        "Der Mann trägt die Kinder.",
    ),
    (sentence(clause("the woman", "takes", "the knives")), "The woman takes the knives.", "Die Frau nimmt die Messer."),
    (sentence(clause("the driver", "drives", "the car")), "The driver drives the car.", "Der Fahrer fährt das Auto."),
    (
        sentence(clause("the doctor", "forgets", "the key")),
        "The doctor forgets the key.",
        "Der Arzt vergisst den Schlüssel.",
    ),
    (sentence(clause("the father", "throws", "the ball")), "The father throws the ball.", "Der Vater wirft den Ball."),
    (sentence(clause("the foxes", "chase", "the mice")), "The foxes chase the mice.", "Die Füchse jagen die Mäuse."),
    (
        sentence(clause("the brothers", "see", "the towers")),
        "The brothers see the towers.",
        "Die Brüder sehen die Türme.",
    ),
    (sentence(clause("no child", "sees", "the mouse")), "No child sees the mouse.", "Kein Kind sieht die Maus."),
    # dative objects and recipients
    (
        sentence(clause("my brother", "answers", "our teachers")),
        "My brother answers our teachers.",
        "Mein Bruder antwortet unseren Lehrern.",
    ),
    (
        sentence(clause("a child", "gives", "an apple", recipient="the old man")),
        "A child gives the old man an apple.",
        "Ein Kind gibt dem alten Mann einen Apfel.",
    ),
    # verb second after a fronted adverb
    (
        sentence(main(clause("the man", "reads", "the book"), adverb="today")),
        "Today the man reads the book.",
        "Heute liest der Mann das Buch.",
    ),
    (
        sentence(main(clause("the children", "eat", "a cake"), adverb="often")),
        "Often the children eat a cake.",
        "Oft essen die Kinder einen Kuchen.",
    ),
    (
        sentence(main(clause("the dogs", "run"), adverb="suddenly")),
        "Suddenly the dogs run.",
        "Plötzlich laufen die Hunde.",
    ),
    (
        sentence(main(clause(["the man", "the woman"], "read", "the book"), adverb="today")),
        "Today the man and the woman read the book.",
        "Heute lesen der Mann und die Frau das Buch.",
    ),
    # relative clauses: subject and object gaps, every gender and the plural, dative pronouns
    (
        sentence(clause(np("the dog", who("sees", "the man")), "sleeps")),
        "The dog that sees the man sleeps.",
        "Der Hund, der den Mann sieht, schläft.",
    ),
    (
        sentence(clause(np("the dog", whom("the man", "sees")), "sleeps")),
        "The dog that the man sees sleeps.",
        "Der Hund, den der Mann sieht, schläft.",
    ),
    (
        sentence(clause(np("the man", whom("the woman", "helps")), "reads", "the newspaper")),
        "The man that the woman helps reads the newspaper.",
        "Der Mann, dem die Frau hilft, liest die Zeitung.",
    ),
    (
        sentence(clause(np("the cat", whom("the child", "loves")), "sleeps")),
        "The cat that the child loves sleeps.",
        "Die Katze, die das Kind liebt, schläft.",
    ),
    (
        sentence(clause(np("the woman", who("thanks", "the doctor")), "laughs")),
        "The woman that thanks the doctor laughs.",
        "Die Frau, die dem Arzt dankt, lacht.",
    ),
    (
        sentence(clause("the teacher", "sees", np("the woman", whom("the dog", "follows")))),
        "The teacher sees the woman that the dog follows.",
        "Der Lehrer sieht die Frau, der der Hund folgt.",
    ),
    (
        sentence(clause(np("the horse", whom("the girl", "rides")), "eats", "the apple")),
        "The horse that the girl rides eats the apple.",
        "Das Pferd, das das Mädchen reitet, isst den Apfel.",
    ),
    (
        sentence(clause(np("the child", whom("the man", "trusts")), "plays")),
        "The child that the man trusts plays.",
        "Das Kind, dem der Mann vertraut, spielt.",
    ),
    (
        sentence(clause(np("the child", who("sleeps")), "laughs")),
        "The child that sleeps laughs.",
        "Das Kind, das schläft, lacht.",
    ),
    (
        sentence(clause(np("the dogs", who("chase", "the cat")), "run")),
        "The dogs that chase the cat run.",
        "Die Hunde, die die Katze jagen, laufen.",
    ),
    (
        sentence(clause(np("the women", whom("the men", "see")), "sing")),
        "The women that the men see sing.",
        "Die Frauen, die die Männer sehen, singen.",
    ),
    (
        sentence(clause(np("the children", whom("the teacher", "helps")), "laugh")),
        "The children that the teacher helps laugh.",
        "Die Kinder, denen der Lehrer hilft, lachen.",
    ),
    (
        sentence(clause(np("the dog", whom("the man", "looks for")), "sleeps")),
        "The dog that the man looks for sleeps.",
        "Der Hund, den der Mann sucht, schläft.",
    ),
    (
        sentence(clause("the man", "reads", np("the book", whom("the teacher", "gives", recipient="the child")))),
        "The man reads the book that the teacher gives the child.",
        "Der Mann liest das Buch, das der Lehrer dem Kind gibt.",
    ),
    (
        sentence(clause(np("the man", who("gives", "the book", recipient="the woman")), "laughs")),
        "The man that gives the woman the book laughs.",
        "Der Mann, der der Frau das Buch gibt, lacht.",
    ),
    (
        sentence(main(clause(np("the dog", whom("the man", "loves")), "sees", "the cat"), adverb="today")),
        "Today the dog that the man loves sees the cat.",
        "Heute sieht der Hund, den der Mann liebt, die Katze.",
    ),
    # subordinate and "that" clauses: verb final
    (
        sentence(main(clause("the man", "reads", "the book"), trailing=sub("because", clause("the dog", "sleeps")))),
        "The man reads the book because the dog sleeps.",
        "Der Mann liest das Buch, weil der Hund schläft.",
    ),
    (
        sentence(main(clause("the children", "play"), trailing=sub("although", clause("the mother", "works")))),
        "The children play although the mother works.",
        "Die Kinder spielen, obwohl die Mutter arbeitet.",
    ),
    (
        sentence(main(clause("the man", "waits"), trailing=sub("while", clause("the woman", "eats", "the soup")))),
        "The man waits while the woman eats the soup.",
        "Der Mann wartet, während die Frau die Suppe isst.",
    ),
    (
        sentence(main(clause("the baby", "cries"), trailing=sub("because", clause(["the dog", "the cat"], "run")))),
        "The baby cries because the dog and the cat run.",
        "Das Baby weint, weil der Hund und die Katze laufen.",
    ),
    (
        sentence(
            main(clause("the man", "reads", "the book"), fronted=sub("because", clause("the dog", "sees", "the cat")))
        ),
        "Because the dog sees the cat, the man reads the book.",
        "Weil der Hund die Katze sieht, liest der Mann das Buch.",
    ),
    (
        sentence(main(clause("the cat", "plays"), fronted=sub("if", clause("the dog", "sleeps")))),
        "If the dog sleeps, the cat plays.",
        "Wenn der Hund schläft, spielt die Katze.",
    ),
    (
        sentence(clause("the woman", "says that", complement=clause("the man", "reads", "the book"))),
        "The woman says that the man reads the book.",
        "Die Frau sagt, dass der Mann das Buch liest.",
    ),
    (
        sentence(clause("the children", "knows that", complement=clause("the dogs", "eat", "the sausages"))),
        "The children know that the dogs eat the sausages.",
        "Die Kinder wissen, dass die Hunde die Würste essen.",
    ),
    (
        sentence(
            clause(
                "the king",
                "knows that",
                complement=clause("the queen", "says that", complement=clause("the thief", "sleeps")),
            )
        ),
        "The king knows that the queen says that the thief sleeps.",
        "Der König weiß, dass die Königin sagt, dass der Dieb schläft.",
    ),
    (
        sentence(
            main(
                clause("the woman", "laughs"),
                trailing=sub("because", clause("the man", "sees", np("the dog", whom("the child", "loves")))),
            )
        ),
        "The woman laughs because the man sees the dog that the child loves.",
        "Die Frau lacht, weil der Mann den Hund, den das Kind liebt, sieht.",
    ),
    # coordination of clauses and of noun phrases
    (
        sentence(clause("the man", "reads", "the book"), "and", clause("the woman", "sees", "the dog")),
        "The man reads the book, and the woman sees the dog.",
        "Der Mann liest das Buch und die Frau sieht den Hund.",
    ),
    (
        sentence(clause("the man", "reads", "the book"), "but", clause("the woman", "sleeps")),
        "The man reads the book, but the woman sleeps.",
        "Der Mann liest das Buch, aber die Frau schläft.",
    ),
    (
        sentence(clause("the dog", "sleeps"), "and", main(clause("the cat", "plays"), adverb="now")),
        "The dog sleeps, and now the cat plays.",
        "Der Hund schläft und jetzt spielt die Katze.",
    ),
    (
        sentence(
            clause("the man", "sees", np("the dog", who("sleeps"))), "and", clause("the woman", "reads", "the book")
        ),
        "The man sees the dog that sleeps, and the woman reads the book.",
        "Der Mann sieht den Hund, der schläft, und die Frau liest das Buch.",
    ),
    (
        sentence(clause(["the man", "the woman"], "read", "the book")),
        "The man and the woman read the book.",
        "Der Mann und die Frau lesen das Buch.",
    ),
    (
        sentence(clause("the girl", "sees", "the cat", "the dog")),
        "The girl sees the cat and the dog.",
        "Das Mädchen sieht die Katze und den Hund.",
    ),
    # prepositions: dative and accusative
    (
        sentence(clause(np("the woman", pp("with", "the dog")), "buys", "a hat")),
        "The woman with the dog buys a hat.",
        "Die Frau mit dem Hund kauft einen Hut.",
    ),
    (
        sentence(clause(np("the man", pp("with", "the big dogs")), "sees", "the car")),
        "The man with the big dogs sees the car.",
        "Der Mann mit den großen Hunden sieht das Auto.",
    ),
    (
        sentence(clause("the man", "helps", np("a tired woman", pp("with", "an old dog")))),
        "The man helps a tired woman with an old dog.",
        "Der Mann hilft einer müden Frau mit einem alten Hund.",
    ),
    (
        sentence(clause("the child", "buys", np("a gift", pp("for", "the mother")))),
        "The child buys a gift for the mother.",
        "Das Kind kauft ein Geschenk für die Mutter.",
    ),
    (
        sentence(clause("the mothers", "buy", np("the apples", pp("for", "the daughters")))),
        "The mothers buy the apples for the daughters.",
        "Die Mütter kaufen die Äpfel für die Töchter.",
    ),
    (
        sentence(clause(np("the man", pp("without", "his hat")), "greets", "the queen")),
        "The man without his hat greets the queen.",
        "Der Mann ohne seinen Hut grüßt die Königin.",
    ),
    (
        sentence(clause("the teacher", "reads", np("a book", pp("about", "the king")))),
        "The teacher reads a book about the king.",
        "Der Lehrer liest ein Buch über den König.",
    ),
    (
        sentence(clause(np("the cat", pp("under", "the table")), "sleeps")),
        "The cat under the table sleeps.",
        "Die Katze unter dem Tisch schläft.",
    ),
    (
        sentence(clause(np("the man", pp("from", "the village")), "drives", "the car")),
        "The man from the village drives the car.",
        "Der Mann aus dem Dorf fährt das Auto.",
    ),
    (
        sentence(clause(np("the mouse", pp("next to", "the trees")), "eats", "a nut")),
        "The mouse next to the trees eats a nut.",
        "Die Maus neben den Bäumen isst eine Nuss.",
    ),
    (
        sentence(clause("the children", "see", np("the boat", pp("in front of", "the houses")))),
        "The children see the boat in front of the houses.",
        "Die Kinder sehen das Boot vor den Häusern.",
    ),
]


def parts(node) -> list:
    """Every grammar object inside a sentence tree (noun phrases, clauses, words, ...)."""
    found = [node]
    if isinstance(node, list):
        return [part for item in node for part in parts(item)]
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for item in dataclasses.fields(node):
            found += parts(getattr(node, item.name))
    return found


__all__ = ["GOLDEN", "clause", "main", "np", "parts", "pp", "sentence", "sub", "who", "whom"]

"""Gold word alignments of the embedded corpus (minitrans/data/grammar.py): hand-drawn links for
sentences covering every construction of the grammar, and properties of random pairs.

Alignments are Pharaoh ``i-j`` (sure) and ``i?j`` (possible) links between English word i and
German word j, 0-based over space-separated words; each expected string below was drawn by hand
from the two sentences, in German word order.
"""

from __future__ import annotations

import random

import pytest
from helpers.grammar import GOLDEN, clause, main, np, parts, pp, sentence, sub, who, whom

from minitrans.data.generated import generate_aligned_corpus, generate_corpus
from minitrans.data.grammar import render, render_aligned
from minitrans.data.growth import generate_sentence

# (tree, English, German, gold alignment); a comment names what the pair checks
HAND_DRAWN = [
    (
        sentence(clause("the man", "reads", "the book")),
        "The man reads the book.",
        "Der Mann liest das Buch.",
        "0-0 1-1 2-2 3-3 4-4",
    ),
    # dative recipient before the accusative object, case endings on articles and adjectives
    (
        sentence(clause("a child", "gives", "an apple", recipient="the old man")),
        "A child gives the old man an apple.",
        "Ein Kind gibt dem alten Mann einen Apfel.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7",
    ),
    # "no" and the negative article
    (
        sentence(clause("no child", "sees", "the mouse")),
        "No child sees the mouse.",
        "Kein Kind sieht die Maus.",
        "0-0 1-1 2-2 3-3 4-4",
    ),
    # bare plural: no article on either side, strong adjective ending
    (
        sentence(clause("big dogs", "chase", "the cat")),
        "Big dogs chase the cat.",
        "Große Hunde jagen die Katze.",
        "0-0 1-1 2-2 3-3 4-4",
    ),
    # verb second after a fronted adverb: the verb moves before the subject
    (
        sentence(main(clause("the man", "reads", "the book"), adverb="today")),
        "Today the man reads the book.",
        "Heute liest der Mann das Buch.",
        "0-0 3-1 1-2 2-3 4-4 5-5",
    ),
    # inversion with a coordinated subject: "and" - "und", the plural verb to "read"
    (
        sentence(main(clause(["the man", "the woman"], "read", "the book"), adverb="today")),
        "Today the man and the woman read the book.",
        "Heute lesen der Mann und die Frau das Buch.",
        "0-0 6-1 1-2 2-3 3-4 4-5 5-6 7-7 8-8",
    ),
    # subject-gap relative clause: "that" - "der", the verb goes to the end
    (
        sentence(clause(np("the dog", who("sees", "the man")), "sleeps")),
        "The dog that sees the man sleeps.",
        "Der Hund, der den Mann sieht, schläft.",
        "0-0 1-1 2-2 4-3 5-4 3-5 6-6",
    ),
    # object-gap relative clause: the same order in both languages
    (
        sentence(clause(np("the dog", whom("the man", "sees")), "sleeps")),
        "The dog that the man sees sleeps.",
        "Der Hund, den der Mann sieht, schläft.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6",
    ),
    # dative plural relative pronoun "denen"
    (
        sentence(clause(np("the children", whom("the teacher", "helps")), "laugh")),
        "The children that the teacher helps laugh.",
        "Die Kinder, denen der Lehrer hilft, lachen.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6",
    ),
    # a two-word English verb for one German verb: possible links
    (
        sentence(clause(np("the dog", whom("the man", "looks for")), "sleeps")),
        "The dog that the man looks for sleeps.",
        "Der Hund, den der Mann sucht, schläft.",
        "0-0 1-1 2-2 3-3 4-4 5?5 6?5 7-6",
    ),
    # relative clause with a recipient and an object; the verb passes both
    (
        sentence(clause(np("the man", who("gives", "the book", recipient="the woman")), "laughs")),
        "The man that gives the woman the book laughs.",
        "Der Mann, der der Frau das Buch gibt, lacht.",
        "0-0 1-1 2-2 4-3 5-4 6-5 7-6 3-7 8-8",
    ),
    (
        sentence(clause("the man", "reads", np("the book", whom("the teacher", "gives", recipient="the child")))),
        "The man reads the book that the teacher gives the child.",
        "Der Mann liest das Buch, das der Lehrer dem Kind gibt.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7 9-8 10-9 8-10",
    ),
    # fronted adverb with a relative clause between the verb and the rest
    (
        sentence(main(clause(np("the dog", whom("the man", "loves")), "sees", "the cat"), adverb="today")),
        "Today the dog that the man loves sees the cat.",
        "Heute sieht der Hund, den der Mann liebt, die Katze.",
        "0-0 7-1 1-2 2-3 3-4 4-5 5-6 6-7 8-8 9-9",
    ),
    # trailing subordinate clause: verb final
    (
        sentence(main(clause("the man", "waits"), trailing=sub("while", clause("the woman", "eats", "the soup")))),
        "The man waits while the woman eats the soup.",
        "Der Mann wartet, während die Frau die Suppe isst.",
        "0-0 1-1 2-2 3-3 4-4 5-5 7-6 8-7 6-8",
    ),
    # coordinated subjects in a subordinate clause, plural verb
    (
        sentence(main(clause("the baby", "cries"), trailing=sub("because", clause(["the dog", "the cat"], "run")))),
        "The baby cries because the dog and the cat run.",
        "Das Baby weint, weil der Hund und die Katze laufen.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7 8-8 9-9",
    ),
    # fronted subordinate clause: verb final inside, then verb second with inversion
    (
        sentence(
            main(clause("the man", "reads", "the book"), fronted=sub("because", clause("the dog", "sees", "the cat")))
        ),
        "Because the dog sees the cat, the man reads the book.",
        "Weil der Hund die Katze sieht, liest der Mann das Buch.",
        "0-0 1-1 2-2 4-3 5-4 3-5 8-6 6-7 7-8 9-9 10-10",
    ),
    # "if" is "wenn"
    (
        sentence(main(clause("the cat", "plays"), fronted=sub("if", clause("the dog", "sleeps")))),
        "If the dog sleeps, the cat plays.",
        "Wenn der Hund schläft, spielt die Katze.",
        "0-0 1-1 2-2 3-3 6-4 4-5 5-6",
    ),
    # "that" clause: "that" - "dass", verb final
    (
        sentence(clause("the woman", "says that", complement=clause("the man", "reads", "the book"))),
        "The woman says that the man reads the book.",
        "Die Frau sagt, dass der Mann das Buch liest.",
        "0-0 1-1 2-2 3-3 4-4 5-5 7-6 8-7 6-8",
    ),
    # nested "that" clauses: each verb final before the next clause
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
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7 8-8 9-9 10-10",
    ),
    # a relative clause inside a verb-final clause: the verb jumps over it
    (
        sentence(
            main(
                clause("the woman", "laughs"),
                trailing=sub("because", clause("the man", "sees", np("the dog", whom("the child", "loves")))),
            )
        ),
        "The woman laughs because the man sees the dog that the child loves.",
        "Die Frau lacht, weil der Mann den Hund, den das Kind liebt, sieht.",
        "0-0 1-1 2-2 3-3 4-4 5-5 7-6 8-7 9-8 10-9 11-10 12-11 6-12",
    ),
    # main clauses joined by ", but" and by ", and" (no comma in German), inversion in the second
    (
        sentence(clause("the man", "reads", "the book"), "but", clause("the woman", "sleeps")),
        "The man reads the book, but the woman sleeps.",
        "Der Mann liest das Buch, aber die Frau schläft.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7 8-8",
    ),
    (
        sentence(clause("the dog", "sleeps"), "and", main(clause("the cat", "plays"), adverb="now")),
        "The dog sleeps, and now the cat plays.",
        "Der Hund schläft und jetzt spielt die Katze.",
        "0-0 1-1 2-2 3-3 4-4 7-5 5-6 6-7",
    ),
    # coordinated objects
    (
        sentence(clause("the girl", "sees", "the cat", "the dog")),
        "The girl sees the cat and the dog.",
        "Das Mädchen sieht die Katze und den Hund.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7",
    ),
    # dative preposition with the dative plural -n
    (
        sentence(clause(np("the man", pp("with", "the big dogs")), "sees", "the car")),
        "The man with the big dogs sees the car.",
        "Der Mann mit den großen Hunden sieht das Auto.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7 8-8",
    ),
    # accusative preposition and a possessive
    (
        sentence(clause(np("the man", pp("without", "his hat")), "greets", "the queen")),
        "The man without his hat greets the queen.",
        "Der Mann ohne seinen Hut grüßt die Königin.",
        "0-0 1-1 2-2 3-3 4-4 5-5 6-6 7-7",
    ),
    # multi-word prepositions for one German preposition: possible links
    (
        sentence(clause(np("the mouse", pp("next to", "the trees")), "eats", "a nut")),
        "The mouse next to the trees eats a nut.",
        "Die Maus neben den Bäumen isst eine Nuss.",
        "0-0 1-1 2?2 3?2 4-3 5-4 6-5 7-6 8-7",
    ),
    (
        sentence(clause("the children", "see", np("the boat", pp("in front of", "the houses")))),
        "The children see the boat in front of the houses.",
        "Die Kinder sehen das Boot vor den Häusern.",
        "0-0 1-1 2-2 3-3 4-4 5?5 6?5 7?5 8-6 9-7",
    ),
]


@pytest.mark.parametrize("tree, english, german, gold", HAND_DRAWN, ids=[row[1] for row in HAND_DRAWN])
def test_hand_drawn_alignments(tree, english, german, gold):
    assert render_aligned(tree) == (english, german, gold)


def test_the_hand_drawn_sample_covers_every_construction():
    trees = [row[0] for row in HAND_DRAWN]
    assert len(trees) >= 20
    kinds_here = {type(part).__name__ for tree in trees for part in parts(tree)}
    kinds_golden = {type(part).__name__ for tree, _, _ in GOLDEN for part in parts(tree)}
    assert kinds_here >= kinds_golden
    verbs = [part for tree in trees for part in parts(tree) if type(part).__name__ == "Verb"]
    assert {verb.frame for verb in verbs} == set("iadgc")


def _links(alignment: str) -> list[tuple[int, int, bool]]:
    out = []
    for link in alignment.split():
        sep = "-" if "-" in link else "?"
        i, j = link.split(sep)
        out.append((int(i), int(j), sep == "-"))
    return out


def test_random_pairs_link_every_word_within_range():
    rng = random.Random(7)
    for _ in range(300):
        tree = generate_sentence(rng, rng.randint(4, 55))
        english, german, alignment = render_aligned(tree)
        assert (english, german) == render(tree)
        links = _links(alignment)
        assert {i for i, _, _ in links} == set(range(len(english.split())))
        assert {j for _, j, _ in links} == set(range(len(german.split())))
        # one sure link per German word, or only possible links (a multi-word English unit)
        for j in range(len(german.split())):
            kinds = [is_sure for _, jj, is_sure in links if jj == j]
            assert kinds == [True] or (len(kinds) > 1 and not any(kinds))


def test_aligned_corpus_has_the_same_pairs_as_the_corpus():
    sizes = dict(num_train=40, num_valid=20, num_test=30)
    aligned, plain = generate_aligned_corpus(**sizes), generate_corpus(**sizes)
    assert {name: [(en, de) for en, de, _ in rows] for name, rows in aligned.items()} == plain
    assert all(alignment for rows in aligned.values() for _, _, alignment in rows)

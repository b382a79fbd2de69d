"""The embedded English→German corpus: sentence pairs generated from a small bilingual grammar,
each with its gold word alignment.

It is the offline default training corpus. A Transformer learns it to test BLEU above 90 in
minutes on a laptop CPU, and its long sentences (up to 55 words, with verb-final clauses
that move the German verb far from where the English puts it) expose a fixed-context RNN
that must squeeze the whole source into one vector. The grammar and its German realisation
are in :mod:`minitrans.data.grammar`, the random growth of sentences in
:mod:`minitrans.data.growth`, the words in :mod:`minitrans.data.lexicon`.

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

import random
from collections.abc import Callable

from minitrans.data.grammar import (
    render,
    render_aligned,
)
from minitrans.data.growth import generate_sentence
from minitrans.data.lexicon import (
    ADJECTIVES,
    ADVERBS,
    DETERMINERS,
    LEXICON_SIZE,
    NOUNS,
    PREPOSITIONS,
    SUBORDINATORS,
    VERBS,
)

AlignedPair = tuple[str, str, str]  # (english, german, gold alignment in Pharaoh format)


def generate_pair(rng: random.Random, target_words: int) -> tuple[str, str]:
    """One (english, german) pair whose English has about target_words words (close to it, not exact)."""
    return render(generate_sentence(rng, target_words))


# ------------------------------------------------------------------------------- the corpus
def length_buckets(min_words: int, max_words: int) -> list[tuple[int, int]]:
    """Inclusive length buckets for the stratified test split: 4-10, 11-20, ..., 41-55 by default."""
    edges = [min_words] + [edge for edge in (11, 21, 31, 41) if min_words < edge <= max_words] + [max_words + 1]
    return [(lo, hi - 1) for lo, hi in zip(edges, edges[1:])]


def _draw(rng: random.Random, count: int, lengths: Callable[[], tuple[int, int, int]], seen: set[str]):
    """``count`` new aligned pairs; ``lengths()`` gives (target, lowest, highest) English word counts."""
    pairs: list[AlignedPair] = []
    attempts = 0
    while len(pairs) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise RuntimeError(f"could only generate {len(pairs)} of {count} distinct pairs")
        target, lowest, highest = lengths()
        en, de, alignment = render_aligned(generate_sentence(rng, target))
        if lowest <= len(en.split()) <= highest and en not in seen:
            seen.add(en)
            pairs.append((en, de, alignment))
    return pairs


def generate_aligned_corpus(
    num_train: int = 30000,
    num_valid: int = 500,
    num_test: int = 1000,
    min_words: int = 4,
    max_words: int = 55,
    seed: int = 1234,
) -> dict[str, list[AlignedPair]]:
    """{"train": [...], "valid": [...], "test": [...]} of (english, german, gold alignment).

    Train and valid lengths follow a triangular law peaking at ``min_words`` (most pairs
    short or medium, a tail to ``max_words``); test has equal numbers in each length bucket of
    :func:`length_buckets`. No English sentence appears twice, within or across splits. Each split
    draws from its own seeded generator, test first, then valid, then train, each skipping the
    sentences already drawn: the test split does not depend on the sizes asked for the others.
    """
    seen: set[str] = set()
    rngs = {split: random.Random(f"minitrans.generated:{seed}:{split}") for split in ("train", "valid", "test")}

    buckets = length_buckets(min_words, max_words)
    test: list[AlignedPair] = []
    for i, (lo, hi) in enumerate(buckets):
        count = num_test // len(buckets) + (i < num_test % len(buckets))
        test += _draw(rngs["test"], count, lambda lo=lo, hi=hi: (rngs["test"].randint(lo, hi), lo, hi), seen)
    rngs["test"].shuffle(test)

    def skewed(rng: random.Random) -> Callable[[], tuple[int, int, int]]:
        return lambda: (round(rng.triangular(min_words, max_words, min_words)), min_words, max_words)

    valid = _draw(rngs["valid"], num_valid, skewed(rngs["valid"]), seen)
    train = _draw(rngs["train"], num_train, skewed(rngs["train"]), seen)
    return {"train": train, "valid": valid, "test": test}


def generate_corpus(**sizes: int) -> dict[str, list[tuple[str, str]]]:
    """The pairs of :func:`generate_aligned_corpus` (same keyword arguments), without their alignments."""
    return {name: [(en, de) for en, de, _ in triples] for name, triples in generate_aligned_corpus(**sizes).items()}


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

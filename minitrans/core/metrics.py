"""Translation quality through sacrebleu: corpus BLEU (cased, detokenised, 13a), chrF,
lower-cased BLEU for comparison with tutorials, and BLEU by source-length bucket."""

from __future__ import annotations

from collections.abc import Sequence

import sacrebleu

DEFAULT_BUCKETS = (10, 20, 30, 40, 50)  # upper bounds (inclusive) of source-word buckets; the last is open


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    refs = [list(references)]
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, refs).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, refs).score,
        "bleu_lowercase": sacrebleu.corpus_bleu(hypotheses, refs, lowercase=True).score,
    }


def bucket_label(num_words: int, buckets: Sequence[int] = DEFAULT_BUCKETS) -> str:
    lower = 1
    for upper in buckets:
        if num_words <= upper:
            return f"{lower}-{upper}"
        lower = upper + 1
    return f"{lower}+"


def bleu_by_length(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[str],
    buckets: Sequence[int] = DEFAULT_BUCKETS,
) -> list[dict]:
    """Corpus BLEU of each source-length bucket (length in whitespace words), shortest first."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for src, hyp, ref in zip(sources, hypotheses, references):
        hyps, refs = groups.setdefault(bucket_label(len(src.split()), buckets), ([], []))
        hyps.append(hyp)
        refs.append(ref)
    order = [bucket_label(upper, buckets) for upper in buckets] + [bucket_label(buckets[-1] + 1, buckets)]
    return [
        {"bucket": label, "count": len(groups[label][0]), "bleu": sacrebleu.corpus_bleu(*_as_refs(groups[label])).score}
        for label in order
        if label in groups
    ]


def _as_refs(group: tuple[list[str], list[str]]):
    hyps, refs = group
    return hyps, [refs]

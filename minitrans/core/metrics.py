"""Translation quality through sacrebleu: corpus BLEU (cased, detokenised), chrF, lower-cased
BLEU for comparison with tutorials, and BLEU by source-length bucket.

BLEU's tokenizer is sacrebleu's own choice for the target language (``zh`` for Chinese,
``ja-mecab`` for Japanese, ``ko-mecab`` for Korean, ``13a`` otherwise) unless one is named;
Arabic-script targets (Arabic, Persian, Urdu, ...) get ``intl``, which splits ``؟`` and ``،``
from the word before them, where ``13a`` leaves them attached; every score carries the tokenizer and sacrebleu's signature, so a figure says how it was made.
Japanese and Korean need MeCab (``pip install minitrans[ja]`` / ``[ko]``, sacrebleu's own
extras); without it BLEU falls back to the ``char`` tokenizer, with one warning.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF

DEFAULT_BUCKETS = (10, 20, 30, 40, 50)  # upper bounds (inclusive) of source-word buckets; the last is open
BLEU_TOKENIZERS = tuple(BLEU.TOKENIZERS)  # the names sacrebleu accepts for its tokenize argument
MECAB_FALLBACK = "char"  # BLEU's tokenizer for Japanese or Korean when MeCab is not installed
ARABIC_SCRIPT = ("ar", "fa", "ur", "ps", "ckb", "sd", "ug", "ku", "arz", "apc", "ary", "acm", "prs", "pes")
EXTRAS = {"ja-mecab": "ja", "ko-mecab": "ko"}  # the tokenizers that need an extra, and its name


def primary_language(lang: str | None) -> str:
    """The primary language subtag sacrebleu keys its choice on: ``zh-Hans`` and ``zh_CN`` -> ``zh``."""
    return (lang or "").replace("_", "-").split("-")[0].lower()


def bleu_tokenizer(tgt_lang: str | None = None, tokenize: str | None = None) -> str:
    """The name of BLEU's tokenizer for ``tgt_lang``: ``tokenize`` when given (checked against
    sacrebleu's list), else sacrebleu's choice for the language; a MeCab tokenizer whose package
    is missing becomes :data:`MECAB_FALLBACK` (with one warning)."""
    if tokenize is not None:
        if tokenize not in BLEU_TOKENIZERS:
            raise ValueError(f"unknown BLEU tokenizer {tokenize!r}; choose one of {', '.join(BLEU_TOKENIZERS)}")
        return tokenize
    by_language = getattr(BLEU, "_TOKENIZER_MAP", {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"})  # sacrebleu's table
    if primary_language(tgt_lang) in ARABIC_SCRIPT:
        return "intl"
    return _usable(by_language.get(primary_language(tgt_lang), BLEU.TOKENIZER_DEFAULT))


@functools.cache
def _usable(name: str) -> str:
    if name not in EXTRAS:
        return name
    try:
        BLEU(tokenize=name)
    except (ImportError, RuntimeError) as error:  # sacrebleu raises either when MeCab or its dictionary is missing
        warnings.warn(
            f"BLEU: the {name} tokenizer is unavailable ({error}); scoring with {MECAB_FALLBACK!r} instead "
            f"(pip install 'minitrans[{EXTRAS[name]}]' for {name})",
            stacklevel=3,
        )
        return MECAB_FALLBACK
    return name


def corpus_scores(
    hypotheses: Sequence[str], references: Sequence[str], tgt_lang: str | None = None, tokenize: str | None = None
) -> dict[str, float | str]:
    """BLEU, chrF and lower-cased BLEU of ``hypotheses`` against one reference each, with BLEU's
    tokenizer (``bleu_tokenize``) and both metrics' sacrebleu signatures."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    refs = [list(references)]
    name = bleu_tokenizer(tgt_lang, tokenize)
    bleu, lowercase = BLEU(tokenize=name), BLEU(tokenize=name, lowercase=True)
    chrf = CHRF()
    scores: dict[str, float | str] = {
        "bleu": bleu.corpus_score(hypotheses, refs).score,
        "chrf": chrf.corpus_score(hypotheses, refs).score,
        "bleu_lowercase": lowercase.corpus_score(hypotheses, refs).score,
    }
    scores["bleu_tokenize"] = name
    scores["bleu_signature"] = str(bleu.get_signature())
    scores["chrf_signature"] = str(chrf.get_signature())
    return scores


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
    tgt_lang: str | None = None,
    tokenize: str | None = None,
) -> list[dict]:
    """Corpus BLEU of each source-length bucket (length in whitespace words), shortest first,
    with the tokenizer :func:`corpus_scores` uses for the same target language."""
    name = bleu_tokenizer(tgt_lang, tokenize)
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for src, hyp, ref in zip(sources, hypotheses, references):
        hyps, refs = groups.setdefault(bucket_label(len(src.split()), buckets), ([], []))
        hyps.append(hyp)
        refs.append(ref)
    order = [bucket_label(upper, buckets) for upper in buckets] + [bucket_label(buckets[-1] + 1, buckets)]
    return [
        {
            "bucket": label,
            "count": len(groups[label][0]),
            "bleu": BLEU(tokenize=name).corpus_score(groups[label][0], [groups[label][1]]).score,
        }
        for label in order
        if label in groups
    ]

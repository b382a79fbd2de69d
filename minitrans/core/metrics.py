"""Translation quality through sacrebleu: corpus BLEU (cased, detokenised), chrF, lower-cased
BLEU for comparison with tutorials, and BLEU by source-length bucket.

BLEU's tokenizer is sacrebleu's own choice for the target language (``zh`` for Chinese,
``ja-mecab`` for Japanese, ``ko-mecab`` for Korean, ``13a`` otherwise) unless one is named;
Arabic-script targets (Arabic, Persian, Urdu, ...) get ``intl``, which splits ``؟`` and ``،``
from the word before them, where ``13a`` leaves them attached; every score carries the tokenizer and sacrebleu's signature, so a figure says how it was made.
Japanese and Korean need MeCab (``pip install minitrans[ja]`` / ``[ko]``, sacrebleu's own
extras); without it BLEU falls back to the ``char`` tokenizer, with one warning.

A pre-segmented Japanese or Chinese corpus (words separated by spaces, as some public corpora
come) would be scored on its own segmentation rather than the tokenizer's: when most gaps
between two CJK characters in the references are spaces, those spaces are removed from the
references and the hypotheses before ``ja-mecab`` or ``zh`` tokenise them, and the scores say so
(``cjk_spaces_removed``); ``keep_spaces`` keeps them.

Both sides are scored as the model writes text (:func:`scoring_text`: composed to NFC, every
whitespace character a space, runs of spaces one), so a reference's U+037E (Greek question mark,
which NFC makes ``;``) or decomposed ``ä`` does not count against a model that cannot write it;
the signatures end in ``|norm:nfc``. ``as_written`` scores the texts as they are (``|norm:none``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections.abc import Sequence

from sacrebleu.metrics import BLEU, CHRF

DEFAULT_BUCKETS = (10, 20, 30, 40, 50)  # upper bounds (inclusive) of source-word buckets; the last is open
BLEU_TOKENIZERS = tuple(BLEU.TOKENIZERS)  # the names sacrebleu accepts for its tokenize argument
MECAB_FALLBACK = "char"  # BLEU's tokenizer for Japanese or Korean when MeCab is not installed
ARABIC_SCRIPT = ("ar", "fa", "ur", "ps", "ckb", "sd", "ug", "ku", "arz", "apc", "ary", "acm", "prs", "pes")
EXTRAS = {"ja-mecab": "ja", "ko-mecab": "ko"}  # the tokenizers that need an extra, and its name
# CJK ideographs, kana, CJK symbols and punctuation, full-width forms: the scripts written without spaces
_CJK = "\u2e80-\u2fff\u3000-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_SPACE = re.compile(f"(?<=[{_CJK}]) +(?=[{_CJK}])")  # spaces between two CJK characters
_CJK_NEIGHBOURS = re.compile(f"[{_CJK}](?=[{_CJK}])")  # two CJK characters side by side
SEGMENTING = ("ja-mecab", "zh")  # tokenizers that segment CJK text themselves
PRESEGMENTED = 0.2  # the share of spaced CJK gaps above which a text counts as pre-segmented
NORMALIZED, AS_WRITTEN = "nfc", "none"  # the signatures' norm: field, scored as the model writes or as written


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


def cjk_space_share(texts: Sequence[str]) -> float:
    """The share of the gaps between two CJK characters that are spaces: about 0 for Japanese
    or Chinese as written, most of them for a corpus segmented into words with spaces."""
    spaced = sum(len(_CJK_SPACE.findall(text)) for text in texts)
    joined = sum(len(_CJK_NEIGHBOURS.findall(text)) for text in texts)
    return spaced / (spaced + joined) if spaced + joined else 0.0


def remove_cjk_spaces(text: str) -> str:
    """``text`` without the spaces between two CJK characters (those next to Latin text stay)."""
    return _CJK_SPACE.sub("", text)


def scoring_text(text: str) -> str:
    """``text`` as a model trained here writes it: NFC, its whitespace folded to single spaces,
    none at either end. The same as :func:`minitrans.data.tokenizer.model_text` (a test holds them
    equal), written here because the metrics import nothing else of minitrans; ``str.split``
    splits at exactly the characters the tokenizer makes spaces."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def signed(signature: object, as_written: bool) -> str:
    """sacrebleu's signature with the normalisation both sides were scored in."""
    return f"{signature}|norm:{AS_WRITTEN if as_written else NORMALIZED}"


def as_scored(
    hypotheses: Sequence[str], references: Sequence[str], name: str, keep_spaces: bool, as_written: bool = False
) -> tuple[list[str], list[str], float | None]:
    """The texts BLEU tokenises, and the share of spaced CJK gaps when their spaces were removed."""
    if not as_written:
        hypotheses, references = list(map(scoring_text, hypotheses)), list(map(scoring_text, references))
    share = cjk_space_share(references) if name in SEGMENTING and not keep_spaces else 0.0
    if share < PRESEGMENTED:
        return list(hypotheses), list(references), None
    return [remove_cjk_spaces(h) for h in hypotheses], [remove_cjk_spaces(r) for r in references], share


def corpus_scores(
    hypotheses: Sequence[str],
    references: Sequence[str],
    tgt_lang: str | None = None,
    tokenize: str | None = None,
    keep_spaces: bool = False,
    as_written: bool = False,
) -> dict[str, float | str]:
    """BLEU, chrF and lower-cased BLEU of ``hypotheses`` against one reference each, with BLEU's
    tokenizer (``bleu_tokenize``) and both metrics' sacrebleu signatures (with ``|norm:``); both
    sides as the model writes text unless ``as_written``; for pre-segmented CJK
    references (unless ``keep_spaces``), of the texts without their segmentation spaces, and
    ``cjk_spaces_removed`` says what share of the references' CJK gaps were spaces."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    name = bleu_tokenizer(tgt_lang, tokenize)
    hypotheses, references, removed = as_scored(hypotheses, references, name, keep_spaces, as_written)
    refs = [list(references)]
    bleu, lowercase = BLEU(tokenize=name), BLEU(tokenize=name, lowercase=True)
    chrf = CHRF()
    scores: dict[str, float | str] = {
        "bleu": bleu.corpus_score(hypotheses, refs).score,
        "chrf": chrf.corpus_score(hypotheses, refs).score,
        "bleu_lowercase": lowercase.corpus_score(hypotheses, refs).score,
    }
    scores["bleu_tokenize"] = name
    scores["bleu_signature"] = signed(bleu.get_signature(), as_written)
    scores["chrf_signature"] = signed(chrf.get_signature(), as_written)
    if removed is not None:
        scores["cjk_spaces_removed"] = round(removed, 3)
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
    keep_spaces: bool = False,
    as_written: bool = False,
) -> list[dict]:
    """Corpus BLEU of each source-length bucket (length in whitespace words), shortest first,
    with the tokenizer and the texts :func:`corpus_scores` uses for the same target language."""
    name = bleu_tokenizer(tgt_lang, tokenize)
    hypotheses, references, _ = as_scored(hypotheses, references, name, keep_spaces, as_written)
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

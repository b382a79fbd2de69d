"""What a model knows: a compact record of its training data, and the input it has never seen.

Every checkpoint carries a :class:`TrainingRecord`: the language pair, the corpus and its size,
and the source word forms of the training split with their counts (case-folded, the most
frequent ``MAX_FORMS`` of them), the words it wrote in capitals or mixed case, and its longest
source. A translator checks each input against it: words never seen in training are named in
a warning, and so are words written in a case the sources never used for them (``LOVE`` where
training only had ``love``: other subwords to the model) and a sentence far longer than any
it trained on; when most of a sentence's words are unseen the warning says that its
translation is unlikely to mean anything — a small model answers anything with
fluent-looking output, so this is the only sign a user gets. Each warning is a
:class:`Notice`, so that a summary over many lines can group them by kind.

Checkpoints written before the record existed still load (``record`` is None: coverage
unknown); for the embedded corpus, which is regenerated from its seed, the record can be
rebuilt from the run's configuration (:func:`rebuild_record`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from minitrans.core.languages import language_name  # re-exported: callers import it from here
from minitrans.data.tokenizer import model_text

if TYPE_CHECKING:
    from minitrans.core.config import DataConfig

MAX_FORMS = 50_000  # Multi30k English has ~10k forms: this keeps every one of a corpus that size
MAX_REBUILT_PAIRS = 100_000  # a record is rebuilt from a generated corpus of at most this many pairs (seconds)
MOSTLY_UNSEEN = 0.5  # more than this share of a sentence's words unseen: its output means little
FAR_LONGER = 2  # a sentence of more words than this times the longest training source: never learnt
RECORD_VERSION = 3  # of what a record holds (a rebuilt record cached by an older version is rebuilt)
WORD = re.compile(r"\w+(?:['’-]\w+)*")  # "don't", "well-known" and "Straßenbahn" are one word each


def words(text: str) -> list[str]:
    """The words of a text (letters, digits and inner apostrophes or hyphens), as written."""
    return WORD.findall(text)


def is_oddly_cased(word: str) -> bool:
    """True for a word in capitals or mixed case ("LOVE", "iPhone"): neither lower case nor
    capitalised ("love", "Love", "I"), the two ways every corpus writes its words."""
    cased = [c for c in word if c.lower() != c.upper()]
    return len(cased) > 1 and any(c.isupper() for c in cased[1:])


@dataclass(frozen=True)
class Notice:
    """One warning about a sentence, with what a summary over many lines groups it by."""

    message: str | None  # the warning as shown for one sentence (None: only counted in summaries)
    kind: str  # what a summary says of the lines it holds ("hold words never seen in training")
    items: tuple[str, ...] = ()  # what it names (characters, words), counted by a summary
    label: str = ""  # what one item is called in a summary ("word")


@dataclass(frozen=True)
class TrainingRecord:
    src_lang: str
    tgt_lang: str
    corpus: str  # the corpus name: "generated" (the embedded grammar), "multi30k", ...
    num_pairs: int  # training pairs
    word_counts: dict[str, int]  # case-folded source word form -> occurrences in training
    num_forms: int  # distinct source word forms in training (more than word_counts holds if capped)
    is_rebuilt: bool = False  # rebuilt from the run's configuration, not written at training time
    data_digests: dict[str, str] | None = None  # split -> digest of its pairs (minitrans.data.digest)
    # every character of the training sources (None: not recorded, an older checkpoint); a word
    # record is case-folded, so only this shows that "I" or an emoji was never seen
    characters: str | None = None
    is_lowercase: bool | None = None  # the training sources hold lower-case letters and no capitals
    # the words the sources wrote in capitals or mixed case, as written (None: not recorded)
    odd_cases: tuple[str, ...] | None = None
    longest_source: int | None = None  # words of the longest training source (None: not recorded)

    @classmethod
    def from_sentences(
        cls,
        sources: Iterable[str],
        src_lang: str,
        tgt_lang: str,
        corpus: str,
        num_pairs: int | None = None,
        max_forms: int = MAX_FORMS,
    ) -> TrainingRecord:
        counts: Counter[str] = Counter()
        odd: Counter[str] = Counter()
        characters: set[str] = set()
        pairs = longest = 0
        for sentence in sources:
            found = words(sentence)
            counts.update(word.casefold() for word in found)
            odd.update(word for word in found if is_oddly_cased(word))
            characters.update(sentence)
            longest = max(longest, len(found))
            pairs += 1
        kept = dict(counts.most_common(max_forms))
        has_case = [c for c in characters if c.lower() != c.upper()]
        is_lowercase = bool(has_case) and all(c == c.lower() for c in has_case)
        return cls(
            src_lang,
            tgt_lang,
            corpus,
            pairs if num_pairs is None else num_pairs,
            kept,
            len(counts),
            characters="".join(sorted(characters)),
            is_lowercase=is_lowercase,
            odd_cases=tuple(word for word, _ in odd.most_common(max_forms)),
            longest_source=longest,
        )

    def prepared(self, text: str) -> str:
        """The input as the model should get it: lower-cased when it trained on lower-case
        sources only (a capital would be byte pieces it never saw). "İ" becomes "i", as Turkish
        writes it, not Python's "i" plus a combining dot that no source holds."""
        return text.replace("İ", "i").lower() if self.is_lowercase else text

    def unseen_characters(self, text: str) -> list[str]:
        """The characters of ``text`` (as the model gets it) never seen in the training sources."""
        if self.characters is None:
            return []
        known = set(self.characters)
        return list(dict.fromkeys(c for c in self.prepared(text) if c not in known and not c.isspace()))

    @property
    def is_capped(self) -> bool:
        return self.num_forms > len(self.word_counts)

    def unseen(self, text: str) -> list[str]:
        """The words of ``text`` never seen in training, each once, as written, in order."""
        out: dict[str, None] = {}
        for word in words(text):
            if word.casefold() not in self.word_counts:
                out.setdefault(word)
        return list(out)

    def unseen_cases(self, text: str) -> list[str]:
        """The words of ``text`` (as the model gets it) seen in training, but never written in
        the capitals or mixed case used here ("LOVE" when the sources only had "love"); each
        once, in order."""
        if self.odd_cases is None:
            return []
        known = set(self.odd_cases)
        found = (word for word in words(self.prepared(text)) if is_oddly_cased(word) and word not in known)
        return list(dict.fromkeys(word for word in found if word.casefold() in self.word_counts))

    def warnings(self, text: str) -> list[str]:
        """What a user should be told about ``text``: nothing, unseen words, or that most of
        its words are unseen and the translation is unlikely to mean anything."""
        return [notice.message for notice in self.notices(text) if notice.message is not None]

    def notices(self, text: str) -> list[Notice]:
        """:meth:`warnings` as :class:`Notice` objects (what a summary of many lines groups)."""
        text = model_text(text)  # as the model reads it: a decomposed "ä" is the "ä" it learnt
        notes = []
        if self.is_lowercase and self.prepared(text) != text:
            message = "the model trained on lower-case sources only: the input is lower-cased"
            notes.append(Notice(message, "were lower-cased (the model trained on lower-case sources only)"))
        strange = self.unseen_characters(text)
        if strange:
            message = (
                f"characters never seen in training (spelt as byte pieces the model never learnt): {' '.join(strange)}"
            )
            notes.append(Notice(message, "hold characters never seen in training", tuple(strange), "character"))
        found = words(text)
        if self.longest_source and len(found) > FAR_LONGER * self.longest_source:
            far = f"far longer than the longest training source ({self.longest_source} words)"
            message = (
                f"{len(found)} words, {far}: the model never learnt sentences this long, "
                "so parts of it may be dropped or repeated"
            )
            notes.append(Notice(message, f"are {far}"))
        return notes + self._word_notices(found, self.unseen(text), self.unseen_cases(text))

    def _word_notices(self, found: list[str], unseen: list[str], cases: list[str]) -> list[Notice]:
        never = "never seen in training"
        if self.is_capped:
            never = f"not among the {len(self.word_counts):,} commonest words of training"
        words_notice = Notice(f"words {never}: {', '.join(unseen)}", f"hold words {never}", tuple(unseen), "word")
        cases_notice = Notice(
            "words written in a case the training sources never used for them (other subwords to the model, "
            f"so read as unknown words): {', '.join(cases)}",
            "hold words in a case the training sources never wrote them in",
            tuple(cases),
            "word",
        )
        notes = [notice for notice, named in ((cases_notice, cases), (words_notice, unseen)) if named]
        odd = set(cases)
        missing = sum(word.casefold() not in self.word_counts or word in odd for word in found)
        if missing <= MOSTLY_UNSEEN * len(found):
            return notes
        # one line says it all; the summary of many lines still counts each word
        never += " or never so written" if cases else ""
        message = f"{missing} of {len(found)} words {never} ({', '.join([*unseen, *cases])}): "
        mostly = Notice(
            message + "the translation is unlikely to mean anything",
            f"are mostly words {never}: their translations are unlikely to mean anything",
        )
        return [mostly, *(replace(notice, message=None) for notice in notes)]

    def changed_split(self, split: str, sources: list[str], references: list[str]) -> str | None:
        """Why the pairs of ``split`` are not those the run had under that name (None when they
        are, or when the record holds no digest of it: an older checkpoint, another split)."""
        recorded = (self.data_digests or {}).get(split)
        if recorded is None:
            return None

        from minitrans.data.digest import pairs_digest

        if pairs_digest(pa.table({"src": sources, "tgt": references})) == recorded:
            return None
        return (
            f"the {split!r} pairs ({len(sources):,}) are not those this run had under that name: the corpus "
            "changed since it trained (held-out pairs are drawn from it again, so they may include pairs the "
            "model trained on); scores on them would not be this run's"
        )

    # -- in a checkpoint: plain values, the counts as one string (compact and fast to load) --
    def to_state(self) -> dict:
        return {
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "corpus": self.corpus,
            "num_pairs": self.num_pairs,
            "num_forms": self.num_forms,
            "word_counts": "\n".join(f"{word}\t{count}" for word, count in self.word_counts.items()),
            "data_digests": self.data_digests,
            "characters": self.characters,
            "is_lowercase": self.is_lowercase,
            "odd_cases": None if self.odd_cases is None else "\n".join(self.odd_cases),
            "longest_source": self.longest_source,
        }

    @classmethod
    def from_state(cls, state: dict) -> TrainingRecord:
        counts = {}
        for line in state["word_counts"].split("\n") if state["word_counts"] else []:
            word, _, count = line.rpartition("\t")
            counts[word] = int(count)
        return cls(
            state["src_lang"],
            state["tgt_lang"],
            state["corpus"],
            state["num_pairs"],
            counts,
            state["num_forms"],
            data_digests=state.get("data_digests"),
            characters=state.get("characters"),
            is_lowercase=state.get("is_lowercase"),
            odd_cases=None if state.get("odd_cases") is None else tuple(filter(None, state["odd_cases"].split("\n"))),
            longest_source=state.get("longest_source"),
        )


def check_recorded_split(record: TrainingRecord | None, split: str, sources: list[str], references: list[str]) -> None:
    """Raise ValueError when a split's pairs are not those the run recorded (evaluate.py)."""
    problem = record.changed_split(split, sources, references) if record is not None else None
    if problem is not None:
        raise ValueError(problem)


def rebuild_record(data: DataConfig) -> TrainingRecord | None:
    """The record of a checkpoint written before records existed, rebuilt from its run's
    data configuration when its training corpus can be had offline in seconds: the embedded corpus
    of at most ``MAX_REBUILT_PAIRS`` pairs (regenerated from its seed; cached in ``data.cache_dir``).
    None otherwise."""
    from minitrans.data.corpus import load_split

    if data.name != "generated" or data.num_train > MAX_REBUILT_PAIRS:
        return None  # not to be had offline, or not in seconds (up to 10M pairs: minutes before one sentence)
    cache_dir = data.cache_dir
    what = {k: v for k, v in asdict(data).items() if k != "cache_dir"} | {"record_version": RECORD_VERSION}
    key = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]
    cache = Path(cache_dir).expanduser() / "records" / f"{key}.json" if cache_dir else None
    if cache is not None and cache.is_file():
        try:
            fields = json.loads(cache.read_text(encoding="utf-8"))
            return TrainingRecord(**{**fields, "odd_cases": tuple(fields["odd_cases"]), "is_rebuilt": True})
        except (ValueError, TypeError, KeyError):
            pass  # a damaged cache entry is rebuilt
    try:
        sources, _, _ = load_split(data, "train")
    except (TypeError, ValueError, OSError):
        return None
    record = TrainingRecord.from_sentences(sources, data.src_lang, data.tgt_lang, "generated")
    record = TrainingRecord(**{**record.__dict__, "is_rebuilt": True})
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            fields = {k: v for k, v in record.__dict__.items() if k != "is_rebuilt"}
            cache.write_text(json.dumps(fields), encoding="utf-8")
        except OSError:
            pass  # a read-only cache only costs the rebuild next time
    return record


__all__ = [
    "MAX_FORMS",
    "RECORD_VERSION",
    "Notice",
    "TrainingRecord",
    "check_recorded_split",
    "language_name",
    "rebuild_record",
    "words",
]

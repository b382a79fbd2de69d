"""Lines of text as a user gives them: split into sentences, translated, joined, and checked
against what the model knows.

One line in gives one :class:`LineResult` out, in order, blank lines included (they give no
hypothesis and an empty output line). A line holding several sentences is split (Koehn and
Schroeder's splitter, the one Europarl and Moses use, with the source language's
non-breaking prefixes such as "Mr." or "z.B."), each sentence is translated on its own, and
the results are joined into one line: the k-th hypothesis of a line joins the k-th best of
each of its sentences, its pieces and alignment concatenated (alignment indices count the
line's source pieces), its log-probability the sum, and its score that sum normalised by
the total length as beam search would. A line that is one sentence is translated exactly as
it stands.

Warnings travel as data (plain strings, without the line number; the command line and the web
app add it and print them): a sentence cut to the model's ``max_len``, a translation cut by the
output-length limit before it ended, and what the input holds that training never showed the
model (:mod:`minitrans.inference.coverage`). Nothing here raises a Python warning.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from sentence_splitter import SentenceSplitter, SentenceSplitterException

from minitrans.core.decoding_options import DecodingOptions
from minitrans.inference.base import GREEDY, BaseTranslator, Translation
from minitrans.inference.coverage import Notice
from minitrans.inference.decoding import length_normalizer
from minitrans.inference.translator import require_model

CUT_OUTPUT = "the translation was cut by the output-length limit before it ended: it is incomplete"


@dataclass
class LineResult:
    source: str  # the line as given
    sentences: list[str]  # what it was split into ([] for a blank line)
    source_pieces: list[str]  # the source pieces of every sentence, in order (no EOS)
    hypotheses: list[Translation]  # best first; [] for a blank line
    unseen_words: list[str] | None  # words never seen in training; None: coverage unknown
    warnings: list[str]  # every warning: the notes below, then the unseen words'
    notes: list[str] = field(default_factory=list)  # the warnings not about what training showed
    # (a cut sentence, a cut translation): what a summary over many lines reports by message
    sentence_translations: list[Translation | None] = field(default_factory=list)  # per sentence,
    # its best translation (None: it gave none), as joined into the hypotheses: what attention
    # maps are drawn for (``translate.py --attention``); not part of the JSON
    notices: list[Notice] = field(default_factory=list)  # the coverage warnings of its sentences
    # as notices, each of a kind: what a summary over many lines groups; not part of the JSON

    @property
    def text(self) -> str:
        """The best translation ("" for a blank line): what text mode prints."""
        return self.hypotheses[0].text if self.hypotheses else ""

    def text_lines(self, nbest: int = 1, with_scores: bool = False) -> list[str]:
        """Text mode: ``nbest`` output lines, best first, empty where there is no hypothesis (a
        blank input line), each ``SCORE<tab>text`` ``with_scores``."""
        out = []
        for k in range(nbest):
            hyp = self.hypotheses[k] if k < len(self.hypotheses) else None
            out.append("" if hyp is None else f"{hyp.score:.4f}\t{hyp.text}" if with_scores else hyp.text)
        return out

    def to_json(self) -> dict:
        """The JSON object of this line: one schema for ``translate.py --format jsonl``, the
        Python API and the web API (which adds ``attention``); the README documents it."""
        return {
            "source": self.source,
            "text": self.text,
            "sentences": self.sentences,
            "source_pieces": self.source_pieces,
            "hypotheses": [asdict(hyp) for hyp in self.hypotheses],
            "unseen_words": self.unseen_words,
            "warnings": self.warnings,
        }


@functools.lru_cache(maxsize=8)
def _splitter(language: str):
    try:
        return SentenceSplitter(language=language)
    except SentenceSplitterException:  # no list of non-breaking prefixes for it: English rules
        return SentenceSplitter(language="en")


def split_sentences(line: str, language: str = "en") -> list[str]:
    """The sentences of a line; a line that is one sentence comes back exactly as given, and a
    blank line gives []."""
    if not line.strip():
        return []
    parts = [part for part in _splitter(language).split(line) if part.strip()]
    return parts if len(parts) > 1 else [line]


def join(
    parts: Sequence[Sequence[Translation]], offsets: Sequence[int], length_penalty: float, nbest: int
) -> list[Translation]:
    """The hypotheses of a line from those of its sentences (see the module's description);
    ``offsets`` is where each sentence's pieces start among the line's source pieces."""
    parts = [(hyps, offset) for hyps, offset in zip(parts, offsets) if hyps]
    if len(parts) == 1 and offsets[0] == 0:
        return list(parts[0][0])
    joined = []
    for k in range(min(nbest, max((len(hyps) for hyps, _ in parts), default=0))):
        chosen = [(hyps[min(k, len(hyps) - 1)], offset) for hyps, offset in parts]
        log_prob = sum(hyp.log_prob for hyp, _ in chosen)
        generated = sum(len(hyp.pieces) + int(hyp.is_finished) for hyp, _ in chosen)
        alignments = [hyp.alignment for hyp, _ in chosen]
        alignment = (
            None
            if any(a is None for a in alignments)
            else [index + offset for (hyp, offset) in chosen for index in hyp.alignment]
        )
        joined.append(
            Translation(
                " ".join(hyp.text for hyp, _ in chosen if hyp.text),
                [piece for hyp, _ in chosen for piece in hyp.pieces],
                log_prob / length_normalizer(generated, length_penalty),
                log_prob,
                alignment,
                all(hyp.is_finished for hyp, _ in chosen),
            )
        )
    return joined


def translate_lines(
    translator: BaseTranslator,
    lines: Sequence[str],
    options: DecodingOptions = GREEDY,
    nbest: int = 1,
    split: bool = True,
    align: bool = True,
) -> list[LineResult]:
    """Translate each line (see the module's description): one :class:`LineResult` per line,
    in order. Without ``align`` the hypotheses carry no alignment (one teacher-forced pass
    fewer)."""
    language = translator.source_language or "en"
    sentences = [split_sentences(line, language) if split else ([line] if line.strip() else []) for line in lines]
    flat = [sentence for group in sentences for sentence in group]
    src_ids = translator.encode(flat)
    cut = translator.cut_notes(src_ids)  # reported in the results, never warned about
    notes = [[cut[i]] if i in cut else [] for i in range(len(flat))]
    src_ids = [translator.fit_source(ids) for ids in src_ids]
    found = translator.search_encoded(src_ids, options, nbest=nbest)
    described = translator.describe(src_ids, found, align)
    record = translator.record
    results, start = [], 0
    for line, group in zip(lines, sentences):
        indices = range(start, start + len(group))
        start += len(group)
        pieces = [translator.tokenizer.src_pieces(src_ids[i][:-1]) for i in indices]
        offsets = [sum(len(p) for p in pieces[:j]) for j in range(len(pieces))]
        line_notes, line_coverage, line_notices = [], [], []
        for j, i in enumerate(indices):
            name = f"sentence {j + 1}: " if len(group) > 1 else ""
            line_notes += [name + note for note in notes[i]]
            if described[i] and not described[i][0].is_finished:  # text mode shows no other sign of it
                line_notes.append(name + CUT_OUTPUT)
            found = record.notices(flat[i]) if record is not None else []
            line_notices += found
            line_coverage += [name + notice.message for notice in found if notice.message is not None]
        results.append(
            LineResult(
                source=line,
                sentences=list(group),
                source_pieces=[piece for p in pieces for piece in p],
                hypotheses=join([described[i] for i in indices], offsets or [0], options.length_penalty, nbest),
                unseen_words=None if record is None else record.unseen(line),
                warnings=[*line_notes, *line_coverage],
                notes=line_notes,
                sentence_translations=[described[i][0] if described[i] else None for i in indices],
                notices=line_notices,
            )
        )
    return results


@dataclass
class ScoredLine:
    """A given translation of a line, scored by the model (forced scoring)."""

    source: str
    reference: str
    source_pieces: list[str]  # no EOS
    pieces: list[str]  # the reference's target pieces, then "</s>"
    piece_log_probs: list[float]  # one per piece, EOS last
    log_prob: float
    score: float  # normalised as beam search ranks
    alignment: list[int] | None  # per reference piece (not EOS), its most-attended source piece
    unseen_words: list[str] | None
    warnings: list[str]

    def to_json(self) -> dict:
        return asdict(self)

    def text_line(self) -> str:
        """Text mode: ``SCORE<tab>LOG_PROB<tab>piece=log_prob ...`` (EOS last)."""
        pieces = " ".join(f"{piece}={value:.3f}" for piece, value in zip(self.pieces, self.piece_log_probs))
        return f"{self.score:.4f}\t{self.log_prob:.4f}\t{pieces}"


def score_lines(
    translator: BaseTranslator,
    lines: Sequence[str],
    references: Sequence[str],
    length_penalty: float = DecodingOptions.length_penalty,
) -> list[ScoredLine]:
    """Forced scoring of one given translation per line, each line taken whole (references
    pair with lines, not with the sentences inside them)."""
    translator = require_model(translator, "forced scoring")
    if len(lines) != len(references):
        raise ValueError(f"{len(lines)} input lines but {len(references)} translations to score")
    src_ids = translator.encode(lines)
    tgt_ids = translator.tokenizer.encode_tgt(list(references))
    most = translator.max_len - 1  # the decoder's positions: BOS + pieces
    notes = [
        [
            *([translator.cut_note(len(src), "scoring")] if len(src) > translator.max_len else []),
            *([f"the translation has {len(tgt)} subwords, more than the model's max_len={translator.max_len} "
               f"allows; scoring its first {most} (the score covers only them)"] if len(tgt) > most else []),
        ]
        for src, tgt in zip(src_ids, tgt_ids)
    ]  # fmt: skip
    src_ids = [translator.fit_source(ids) for ids in src_ids]
    scored = translator.score_encoded(src_ids, tgt_ids, length_penalty)  # quiet: the notes say it
    record, eos = translator.record, translator.tokenizer.tgt.id_to_piece(translator.tokenizer.eos_id)
    results = []
    for line, reference, src, tgt, result, note in zip(lines, references, src_ids, tgt_ids, scored, notes):
        coverage = record.warnings(line) if record is not None else []
        results.append(
            ScoredLine(
                line,
                reference,
                translator.tokenizer.src_pieces(src[:-1]),
                [*translator.tokenizer.tgt_pieces(tgt[:most]), eos],
                result.token_log_probs,
                result.log_prob,
                result.score,
                result.alignment,
                None if record is None else record.unseen(line),
                [*note, *coverage],
            )
        )
    return results


__all__ = ["CUT_OUTPUT", "LineResult", "ScoredLine", "join", "score_lines", "split_sentences", "translate_lines"]

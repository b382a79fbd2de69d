"""The translator protocol: what every engine offers (the PyTorch
:class:`~minitrans.inference.translator.Translator`, the CTranslate2
:class:`~minitrans.export.ct2_translator.Ct2Translator`), with its text-level half written once.

An engine implements two things: :meth:`BaseTranslator.search_encoded` (token ids in, the
``nbest`` best :class:`~minitrans.inference.decoding.Hypothesis` of each source out) and
:meth:`BaseTranslator.align` (a hard alignment for given hypotheses). Everything else here is
shared: encoding text, fitting sources to the model, decoding ids to one line of text,
``translate`` (one string per sentence, always), ``translate_nbest`` (the n best
:class:`Translation` records of each sentence), and what the model saw in training.
Engine-specific abilities (forced scoring and attention maps need the PyTorch model) live on
the engine that has them, not as methods that raise on the other.

A source longer than the model is cut to fit, and said so once, where the caller can hear it:
the text methods (``translate``, ``translate_nbest``) and ``translate_encoded`` raise a
UserWarning naming the sentence (:meth:`BaseTranslator.warn_cut`), the Python API's edge; the
line path (:mod:`minitrans.inference.lines`), which the command line and the web app use,
returns it as each line's notes instead. Everything below those edges (fitting, searching,
aligning) is quiet, so nothing has to silence it.
"""

from __future__ import annotations

import functools
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.config import TrainConfig, teaching_switches
from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.saved_config import config_from_dict
from minitrans.core.textio import one_line
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.coverage import TrainingRecord, rebuild_record
from minitrans.inference.decoding import GREEDY, Hypothesis, best_ids

# a model that trained without the decoder's causal mask read each target word while learning
# to predict it: wherever the target is given, it can copy it
CHEATS = (
    "model.causal_mask=false: this model saw the target's future words in training, so it cheats "
    "wherever the words are given: forced scores (--score-reference) are far above what word-by-word "
    "decoding gets, and decoding without the cache (--no-cache) differs from decoding with it"
)


@dataclass(frozen=True)
class Translation:
    """One translation of one sentence, as :meth:`BaseTranslator.translate_nbest` gives it."""

    text: str
    pieces: list[str]  # the target subword pieces (no BOS, no EOS)
    score: float  # log_prob / length_normalizer(generated tokens, length_penalty): what the search ranks by
    log_prob: float  # the model's log-probability of the pieces and the EOS that ended them
    alignment: list[int] | None  # per piece, the index of its most-attended source piece (EOS
    # excluded); from the last decoder layer's cross-attention averaged over heads, the RNN
    # with attention's alignment, None for the fixed-context RNN
    is_finished: bool = True  # False when the length limit cut it before EOS


def length_batches(
    items: dict[int, Sequence[int]],
    beam: int,
    batch_hyp_tokens: int,
    group: Callable[[int], object] | None = None,
) -> list[list[int]]:
    """Keys of ``items`` in batches of similar lengths (sorted), each costing at most about
    ``batch_hyp_tokens`` = beam * rows * longest length (a single row may exceed it); with
    ``group``, a batch also holds only keys of one group (cut where it changes)."""
    order = sorted(items, key=lambda i: len(items[i]))
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order)
            and beam * (end - start + 1) * len(items[order[end]]) <= batch_hyp_tokens
            and (group is None or group(order[end]) == group(order[start]))
        ):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


class BaseTranslator(ABC):
    """Text in, text out, over an engine's search (see the module's description)."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        max_len: int,
        config: dict | None = None,
        record: TrainingRecord | None = None,
        path: Path | None = None,
    ):
        self.tokenizer, self.max_len = tokenizer, max_len
        self.config = config  # the run's configuration as saved (a plain dict), when known
        self.path = path  # the checkpoint file or exported folder it was loaded from
        # the same, typed: rebuilt once here, so nothing reads the run's settings through dict lookups
        self.run_config: TrainConfig | None = None
        if config is not None:
            try:
                self.run_config = config_from_dict(config)
            except ValueError as error:
                raise CheckpointError(f"{path or 'the model'}: {error}") from None
        self._record = record

    # -- what an engine implements -----------------------------------------------------------
    @abstractmethod
    def search_encoded(
        self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY, nbest: int = 1
    ) -> list[list[Hypothesis]]:
        """Token ids in, the ``nbest`` best hypotheses of each source out (best first, with
        their scores), in input order. Sources are fitted to the model quietly (:meth:`fit_source`:
        the callers warn about a cut one, or note it); an empty source ([EOS] or []) gives no
        hypothesis at all. ``options.max_output_len`` caps every output (default and upper
        bound: the model's ``max_len - 1``)."""

    @abstractmethod
    def align(self, sources: Sequence[Sequence[int]], hypotheses: Sequence[Hypothesis]) -> list[list[int] | None]:
        """Per hypothesis (for the fitted source beside it), the index of each piece's
        most-attended source piece; None where the model has no attention."""

    # -- what the model saw ------------------------------------------------------------------
    @property
    def source_language(self) -> str | None:
        """The source language code of the run's corpus ("en", "de", ...), when known."""
        return self.run_config.data.src_lang if self.run_config is not None else None

    @property
    def target_language(self) -> str | None:
        """The target language code of the run's corpus, when known."""
        return self.run_config.data.tgt_lang if self.run_config is not None else None

    @property
    def teaching_switches(self) -> dict[str, str]:
        """The teaching switches the model trained with (:func:`minitrans.core.config.teaching_switches`)."""
        return teaching_switches(self.run_config.model) if self.run_config is not None else {}

    @property
    def model_warnings(self) -> list[str]:
        """What every command that translates or scores with this model says first: that it cheats."""
        return [CHEATS] if self.teaching_switches.get("model.causal_mask") == "false" else []

    @functools.cached_property
    def record(self) -> TrainingRecord | None:
        """What the model saw in training (:mod:`minitrans.inference.coverage`); for a checkpoint
        written before records existed, rebuilt from the run's configuration where that is
        possible offline (the embedded corpus), else None: coverage unknown."""
        if self._record is None and self.run_config is not None:
            return rebuild_record(self.run_config.data)
        return self._record

    def keep_case(self) -> None:
        """Translate input as given, even for a model that trained on lower-case sources only
        (whose capitals are then warned about as characters it never saw)."""
        record = self.record
        if record is not None and record.is_lowercase:
            self.__dict__["record"] = replace(record, is_lowercase=False)

    # -- text and ids ------------------------------------------------------------------------
    def encode(self, sentences: Sequence[str]) -> list[list[int]]:
        """Source ids ending in EOS; a blank sentence is just [EOS] (and is never decoded)."""
        sentences = list(sentences)
        record = self.record
        if record is not None and record.is_lowercase:  # record.warnings says so
            sentences = [record.prepared(text) for text in sentences]
        ids = self.tokenizer.encode_src(sentences)
        return [row if text.strip() else [self.tokenizer.eos_id] for text, row in zip(sentences, ids)]

    def fit_source(self, src_ids: Sequence[int]) -> list[int]:
        """A source longer than the model's positions cut to ``max_len`` ids (EOS kept); quietly:
        :meth:`cut_notes` says which were cut, and the public text methods warn with it."""
        if len(src_ids) <= self.max_len:
            return list(src_ids)
        return [*src_ids[: self.max_len - 1], self.tokenizer.eos_id]

    def fit_sources(self, src_ids: Sequence[Sequence[int]]) -> dict[int, list[int]]:
        """The sources worth decoding, by position, fitted to the model (quietly, as
        :meth:`fit_source`): blank ones ([EOS] or []) are left out."""
        eos = self.tokenizer.eos_id
        return {i: self.fit_source(ids) for i, ids in enumerate(src_ids) if list(ids) not in ([], [eos])}

    def cut_note(self, length: int, doing: str = "translating") -> str:
        """What a source of ``length`` ids longer than the model is told: the one wording of the
        note that the line path returns as data (:mod:`minitrans.inference.lines`) and of the
        warning that the public methods raise."""
        return f"{length} subwords, more than the model's max_len={self.max_len}; {doing} its first {self.max_len - 1}"

    def cut_notes(self, src_ids: Sequence[Sequence[int]]) -> dict[int, str]:
        """Position -> :meth:`cut_note` for each source that :meth:`fit_source` cuts."""
        return {i: self.cut_note(len(ids)) for i, ids in enumerate(src_ids) if len(ids) > self.max_len}

    def warn_cut(self, src_ids: Sequence[Sequence[int]], stacklevel: int = 3) -> None:
        """A UserWarning ``sentence N has ...`` for each source longer than the model (numbered
        from 1 in ``src_ids``): how a caller of :meth:`translate`, :meth:`translate_nbest` or
        :meth:`translate_encoded` learns that a sentence was cut."""
        for i, note in self.cut_notes(src_ids).items():
            warnings.warn(f"sentence {i + 1} has {note}", stacklevel=stacklevel)

    def output_cap(self, options: DecodingOptions) -> int:
        """The most tokens any output may have: the model's ``max_len - 1``, or less if asked."""
        cap = self.max_len - 1
        return cap if options.max_output_len is None else max(1, min(options.max_output_len, cap))

    def decode(self, ids: Sequence[int]) -> str:
        return one_line(self.tokenizer.decode_tgt(ids))

    # -- translating ---------------------------------------------------------------------------
    def translate_encoded(self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY) -> list[list[int]]:
        """Token ids in, the best target ids of each source out (see :meth:`search_encoded`); a
        source longer than the model is cut, with a warning naming it (:meth:`warn_cut`)."""
        self.warn_cut(src_ids)
        return best_ids(self.search_encoded(src_ids, options))

    def translate(self, sentences: Sequence[str], options: DecodingOptions = GREEDY) -> list[str]:
        """One output line per input sentence, in order (the best translation of each). A
        sentence longer than the model's ``max_len`` subwords is cut to fit, and a UserWarning
        (``sentence N has ... subwords``) says so: the one warning of the Python API, which
        :func:`minitrans.inference.lines.translate_lines` returns as each line's notes instead."""
        return [self.decode(ids) for ids in self.translate_encoded(self.encode(sentences), options)]

    def translate_nbest(
        self, sentences: Sequence[str], options: DecodingOptions = GREEDY, nbest: int = 1
    ) -> list[list[Translation]]:
        """The ``nbest`` best translations of each sentence (at most ``options.beam_size``), best
        first, as :class:`Translation` records with their scores and alignments (a blank
        sentence gets none); a cut sentence is warned about as in :meth:`translate`."""
        src_ids = self.encode(sentences)
        self.warn_cut(src_ids, stacklevel=2)
        return self.describe(src_ids, self.search_encoded(src_ids, options, nbest=nbest))

    def describe(
        self, src_ids: Sequence[Sequence[int]], found: Sequence[Sequence[Hypothesis]], align: bool = True
    ) -> list[list[Translation]]:
        """Search results -> :class:`Translation` records: text, pieces, scores, and the hard
        alignment of every hypothesis (skipped, and every alignment None, without ``align``:
        text output needs none)."""
        pairs = [(i, hyp) for i, hyps in enumerate(found) for hyp in hyps]
        alignments: list[list[int] | None] = [None] * len(pairs)
        if align and pairs:
            sources = [self.fit_source(src_ids[i]) for i, _ in pairs]
            alignments = self.align(sources, [hyp for _, hyp in pairs])
        out: list[list[Translation]] = [[] for _ in found]
        for (i, hyp), alignment in zip(pairs, alignments):
            text, pieces = self.decode(hyp.ids), self.tokenizer.tgt_pieces(hyp.ids)
            out[i].append(Translation(text, pieces, hyp.score, hyp.log_prob, alignment, hyp.is_finished))
        return out


__all__ = ["GREEDY", "BaseTranslator", "Translation", "length_batches"]

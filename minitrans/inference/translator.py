"""Translator: a trained model and its tokenizer -> text (and attention), in length-sorted batches.

Input policies, one line in and one line out (the README repeats them; reading text from bytes
is :mod:`minitrans.core.textio`'s):
- An empty or whitespace-only sentence gives an empty translation; nothing is decoded for it.
- A character never seen in training cannot break anything: the tokenizer's byte fallback
  spells it as UTF-8 byte pieces (it may come out mistranslated or dropped).
- A sentence longer than the model's ``max_len`` subwords (EOS included) is cut to its first
  ``max_len - 1`` subwords plus EOS, with a warning naming the sentence; it still gives one output.
- A translation never contains a line break: any the model spells out becomes a space.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import torch

from minitrans.core.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint
from minitrans.core.config import DecodingOptions
from minitrans.core.textio import one_line
from minitrans.core.utils import eval_mode
from minitrans.data.batching import collate
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.coverage import TrainingRecord
from minitrans.inference.decoding import Hypothesis, search
from minitrans.inference.scoring import ForcedScore, force_decode
from minitrans.models.interface import AttentionMaps, Seq2SeqModel

GREEDY = DecodingOptions()


def sentence_tokens(
    tokenizer, src_ids: Sequence[int], tgt_ids: Sequence[int]
) -> tuple[list[str], list[str], list[str]]:
    """The three axes of a sentence pair's maps: source pieces (``src_ids`` end in EOS),
    decoder inputs ``<s>`` + target pieces, and output tokens target pieces + ``</s>``."""
    target = tokenizer.tgt_pieces(tgt_ids)
    return (
        tokenizer.src_pieces(src_ids),
        [tokenizer.tgt.id_to_piece(tokenizer.bos_id), *target],
        [*target, tokenizer.tgt.id_to_piece(tokenizer.eos_id)],
    )


@dataclass
class SentenceAttention:
    """Every attention map of one translated sentence, with the tokens of each axis."""

    maps: AttentionMaps  # {kind: [per-layer (H, Lq, Lk)]}
    src_tokens: list[str]  # source pieces, EOS included
    tgt_in_tokens: list[str]  # decoder inputs: BOS + output pieces (the query rows)
    tgt_out_tokens: list[str]  # what each row predicts: output pieces + EOS


@dataclass(frozen=True)
class Translation:
    """One translation of one sentence, as :meth:`Translator.translate` gives it with ``nbest``."""

    text: str
    pieces: list[str]  # the target subword pieces (no BOS, no EOS)
    score: float  # log_prob / length_normalizer(generated tokens, length_penalty): what the search ranks by
    log_prob: float  # the model's log-probability of the pieces and the EOS that ended them
    alignment: list[int] | None  # per piece, the index of its most-attended source piece (EOS
    # excluded); from the last decoder layer's cross-attention averaged over heads, the RNN
    # with attention's alignment, None for the fixed-context RNN
    is_finished: bool = True  # False when the length limit cut it before EOS


def _length_batches(items: dict[int, Sequence[int]], beam: int, batch_hyp_tokens: int) -> list[list[int]]:
    """Keys of ``items`` in batches of similar lengths (sorted), each costing at most about
    ``batch_hyp_tokens`` = beam * rows * longest length (a single row may exceed it)."""
    order = sorted(items, key=lambda i: len(items[i]))
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and beam * (end - start + 1) * len(items[order[end]]) <= batch_hyp_tokens:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


class Translator:
    def __init__(
        self,
        model: Seq2SeqModel,
        tokenizer: Tokenizer,
        max_len: int,
        device: torch.device | None = None,
        config: dict | None = None,
        record: TrainingRecord | None = None,
        path: Path | None = None,
    ):
        self.model, self.tokenizer, self.max_len = model, tokenizer, max_len
        self.device = device or next(model.parameters()).device
        self.config = config  # the run's configuration (a plain dict), when loaded from a checkpoint
        self.path = path  # the checkpoint file it was loaded from
        self._record = record

    @property
    def source_language(self) -> str | None:
        """The source language code of the run's corpus ("en", "de", ...), when known."""
        return (self.config or {}).get("data", {}).get("src_lang")

    @functools.cached_property
    def record(self) -> TrainingRecord | None:
        """What the model saw in training (:mod:`minitrans.inference.coverage`); for a checkpoint written
        before records existed, rebuilt from the run's configuration where that is possible
        offline (the embedded corpus), else None: coverage unknown."""
        if self._record is None and self.config is not None:
            from minitrans.inference.coverage import rebuild_record

            return rebuild_record(self.config, self.config.get("data", {}).get("cache_dir"))
        return self._record

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device = "auto") -> Translator:
        """Load a ``.pt`` file or a run folder; any unusable checkpoint raises CheckpointError."""
        from minitrans.core.config import model_from_dict
        from minitrans.core.utils import pick_device
        from minitrans.models.build import build_model_for_weights

        device = pick_device(device) if isinstance(device, str) else device
        path = resolve_checkpoint(path)
        payload = load_checkpoint(path)
        try:
            model_cfg = model_from_dict(payload["config"]["model"])
            tokenizer = Tokenizer.from_state(payload["tokenizer"])
            model = build_model_for_weights(model_cfg, tokenizer, payload["model"])
            model.load_state_dict(payload["model"])
            record = TrainingRecord.from_state(payload["training_data"]) if "training_data" in payload else None
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise CheckpointError(f"{path} does not hold a usable model ({type(error).__name__}: {reason})") from None
        return cls(model.to(device).eval(), tokenizer, model_cfg.max_len, device, payload["config"], record, path)

    # -- text and ids ----------------------------------------------------------------------
    def encode(self, sentences: Sequence[str]) -> list[list[int]]:
        """Source ids ending in EOS; a blank sentence is just [EOS] (and is never decoded)."""
        sentences = list(sentences)
        ids = self.tokenizer.encode_src(sentences)
        return [row if text.strip() else [self.tokenizer.eos_id] for text, row in zip(sentences, ids)]

    def fit_source(self, src_ids: Sequence[int], number: int | None = None) -> list[int]:
        """Cut a source longer than the model's positions to ``max_len`` ids (EOS kept), warning."""
        if len(src_ids) <= self.max_len:
            return list(src_ids)
        name = f"sentence {number}" if number is not None else "a sentence"
        warnings.warn(
            f"{name} has {len(src_ids)} subwords, more than the model's max_len={self.max_len}; "
            f"translating its first {self.max_len - 1}",
            stacklevel=3,
        )
        return [*src_ids[: self.max_len - 1], self.tokenizer.eos_id]

    @torch.no_grad()
    def search_encoded(
        self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY, nbest: int = 1
    ) -> list[list[Hypothesis]]:
        """Token ids in, the ``nbest`` best hypotheses of each source out (best first, with
        their scores), in input order; batches are built from sorted lengths.

        Sources are fitted to the model (:meth:`fit_source`); an empty source ([EOS] or [])
        gives no hypothesis at all. ``options.max_output_len`` caps every output (default and
        upper bound: the model's ``max_len - 1``).
        """
        cap = self.max_len - 1
        if options.max_output_len is not None:
            cap = max(1, min(options.max_output_len, cap))
        fitted = {
            i: self.fit_source(ids, i + 1)
            for i, ids in enumerate(src_ids)
            if list(ids) not in ([], [self.tokenizer.eos_id])
        }
        outputs: list[list[Hypothesis]] = [[] for _ in src_ids]
        beam = options.beam_size
        with eval_mode(self.model):
            # a batch of beam hypotheses costs about beam * rows * longest length tokens
            for rows in _length_batches(fitted, beam, options.batch_hyp_tokens):
                src = collate([fitted[i] for i in rows], [[] for _ in rows]).src.to(self.device)  # (B, S)
                found = search(
                    self.model,
                    src,
                    beam,
                    options.length_penalty,
                    options.max_output_ratio,
                    cap,
                    options.use_cache,
                    nbest,
                )
                for row, hyps in zip(rows, found):
                    outputs[row] = hyps
        return outputs

    def translate_encoded(self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY) -> list[list[int]]:
        """Token ids in, the best target ids of each source out (see :meth:`search_encoded`)."""
        return [hyps[0].ids if hyps else [] for hyps in self.search_encoded(src_ids, options)]

    def decode(self, ids: Sequence[int]) -> str:
        return one_line(self.tokenizer.decode_tgt(ids))

    @overload
    def translate(
        self, sentences: Sequence[str], options: DecodingOptions = GREEDY, nbest: None = None
    ) -> list[str]: ...
    @overload
    def translate(
        self, sentences: Sequence[str], options: DecodingOptions = GREEDY, *, nbest: int
    ) -> list[list[Translation]]: ...
    def translate(self, sentences, options=GREEDY, nbest=None):
        """One output line per input sentence, in order (see the module's input policies).

        With ``nbest=K`` (at most ``options.beam_size``), each sentence gets its K best
        translations instead, best first, as :class:`Translation` records with their scores
        and alignments (a blank sentence gets none)."""
        src_ids = self.encode(sentences)
        if nbest is None:
            return [self.decode(ids) for ids in self.translate_encoded(src_ids, options)]
        found = self.search_encoded(src_ids, options, nbest=nbest)
        return self.describe(src_ids, found, options.length_penalty)

    def describe(
        self,
        src_ids: Sequence[Sequence[int]],
        found: Sequence[Sequence[Hypothesis]],
        length_penalty: float = DecodingOptions.length_penalty,
        align: bool = True,
    ) -> list[list[Translation]]:
        """Search results -> :class:`Translation` records: text, pieces, scores, and the hard
        alignment from one teacher-forced pass over every hypothesis (skipped, and every
        alignment None, without ``align``: text output needs none)."""
        pairs = [(i, hyp) for i, hyps in enumerate(found) for hyp in hyps]
        alignments: list[list[int] | None] = [None] * len(pairs)
        if align and pairs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the search has already warned about a cut sentence
                forced = self.score_encoded(
                    [src_ids[i] for i, _ in pairs], [hyp.ids for _, hyp in pairs], length_penalty,
                    with_eos=[hyp.is_finished for _, hyp in pairs],
                )  # fmt: skip
            alignments = [scored.alignment for scored in forced]
        out: list[list[Translation]] = [[] for _ in found]
        for (i, hyp), alignment in zip(pairs, alignments):
            text, pieces = self.decode(hyp.ids), self.tokenizer.tgt_pieces(hyp.ids)
            out[i].append(Translation(text, pieces, hyp.score, hyp.log_prob, alignment, hyp.is_finished))
        return out

    # -- forced scoring --------------------------------------------------------------------
    @torch.no_grad()
    def score_encoded(
        self,
        src_ids: Sequence[Sequence[int]],
        tgt_ids: Sequence[Sequence[int]],
        length_penalty: float = DecodingOptions.length_penalty,
        batch_hyp_tokens: int = DecodingOptions.batch_hyp_tokens,
        with_eos: Sequence[bool] | bool = True,
    ) -> list[ForcedScore]:
        """The log-probability the model gives each target (ids without BOS/EOS) for its
        source, per piece and in all, with the hard alignment; see :mod:`minitrans.inference.scoring`.
        Sources are fitted to the model; targets are cut to ``max_len - 1`` pieces."""
        src_ids = [self.fit_source(ids, i + 1) if ids else [self.tokenizer.eos_id] for i, ids in enumerate(src_ids)]
        tgt_ids = [list(ids)[: self.max_len - 1] for ids in tgt_ids]
        ends = [with_eos] * len(tgt_ids) if isinstance(with_eos, bool) else list(with_eos)
        cost = {i: [*src_ids[i], *tgt_ids[i]] for i in range(len(src_ids))}
        outputs: list[ForcedScore | None] = [None] * len(src_ids)
        for rows in _length_batches(cost, 1, batch_hyp_tokens):
            src = collate([src_ids[i] for i in rows], [[] for _ in rows]).src.to(self.device)  # (B, S)
            scored = force_decode(self.model, src, [tgt_ids[i] for i in rows], length_penalty, [ends[i] for i in rows])
            for row, result in zip(rows, scored):
                outputs[row] = result
        return outputs  # type: ignore[return-value]

    def score(
        self,
        sentences: Sequence[str],
        translations: Sequence[str],
        length_penalty: float = DecodingOptions.length_penalty,
    ) -> list[ForcedScore]:
        """Forced scoring of text: how likely the model finds each given translation of each
        sentence, per target piece (``token_log_probs``, EOS last) and in all (``log_prob``,
        and ``score``, normalised as beam search ranks). ``translations`` pairs with
        ``sentences`` one to one."""
        if len(sentences) != len(translations):
            raise ValueError(f"{len(sentences)} sentences but {len(translations)} translations")
        tgt_ids = self.tokenizer.encode_tgt(list(translations))
        tgt_ids = [[i for i in ids if i != self.tokenizer.eos_id] for ids in tgt_ids]
        return self.score_encoded(self.encode(sentences), tgt_ids, length_penalty)

    # -- attention -------------------------------------------------------------------------
    @torch.no_grad()
    def attention_maps(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> AttentionMaps:
        """Every attention map of the model for one sentence pair, by teacher forcing the given
        target (e.g. a translation the model produced, greedy or beam).

        Returns ``{kind: [per-layer (H, Lq, Lk)]}``. Source axes are ``src_ids`` (with EOS);
        decoder query rows are the decoder inputs ``[BOS] + tgt_ids``, whose row t predicts
        output token t of ``tgt_ids + [EOS]``.
        """
        src = torch.as_tensor([list(src_ids)], dtype=torch.long, device=self.device)  # (1, S)
        tgt_in = torch.as_tensor([[self.tokenizer.bos_id, *tgt_ids]], dtype=torch.long, device=self.device)  # (1, T)
        with eval_mode(self.model):
            enc, enc_maps = self.model.encode(src, need_weights=True)
            _, dec_maps = self.model.decode(enc, tgt_in, need_weights=True)
        return {kind: [layer[0].cpu() for layer in layers] for kind, layers in {**enc_maps, **dec_maps}.items()}

    def attention(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> SentenceAttention:
        """:meth:`attention_maps` with the tokens that label each axis (source fitted to the model)."""
        src_ids = self.fit_source(src_ids)
        return SentenceAttention(
            self.attention_maps(src_ids, tgt_ids), *sentence_tokens(self.tokenizer, src_ids, tgt_ids)
        )


__all__ = ["SentenceAttention", "Translation", "Translator", "sentence_tokens"]

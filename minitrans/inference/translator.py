"""Translator: a trained model and its tokenizer -> text (and attention), in length-sorted batches;
the PyTorch engine of the translator protocol (:mod:`minitrans.inference.base`).

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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from minitrans.core.checkpoint import CheckpointError, load_checkpoint, resolve_checkpoint
from minitrans.core.checks import first_line
from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.saved_config import model_from_dict
from minitrans.core.utils import eval_mode, pick_device
from minitrans.data.batching import collate
from minitrans.data.tokenizer import PAD_ID, Tokenizer
from minitrans.inference.base import GREEDY, BaseTranslator, length_batches
from minitrans.inference.coverage import TrainingRecord
from minitrans.inference.decoding import Hypothesis, search
from minitrans.inference.hf_folder import is_hf_export, read_hf_folder
from minitrans.inference.scoring import ForcedScore, force_decode
from minitrans.models.build import build_model_for_weights
from minitrans.models.interface import AttentionMaps, Seq2SeqModel


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


def require_model(translator: BaseTranslator, what: str) -> Translator:
    """The translator, if it has the PyTorch model that ``what`` needs (forced scoring,
    attention maps); else CheckpointError saying so."""
    if not isinstance(translator, Translator):
        raise CheckpointError(f"{what} needs the PyTorch checkpoint, not a CTranslate2 export")
    return translator


class Translator(BaseTranslator):
    """The PyTorch engine: a trained model and its tokenizer, with forced scoring and attention."""

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
        super().__init__(tokenizer, max_len, config, record, path)
        self.model = model
        self.device = device or next(model.parameters()).device

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device = "auto") -> Translator:
        """Load a ``.pt`` file or a run folder; any unusable checkpoint raises CheckpointError.
        (Every other format a path may hold is told apart in one place:
        :func:`minitrans.export.loading.load_translator`.)"""
        if is_hf_export(path):  # another format, which from_checkpoint does not guess at
            raise CheckpointError(
                f"{path} is a shareable folder (export.py --to hf): load it with Translator.from_pretrained, "
                "or with minitrans.export.loading.load_translator, which tells every format apart"
            )
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
            reason = first_line(error) if str(error).strip() else type(error).__name__
            raise CheckpointError(f"{path} does not hold a usable model ({type(error).__name__}: {reason})") from None
        return cls(model.to(device).eval(), tokenizer, model_cfg.max_len, device, payload["config"], record, path)

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | torch.device = "auto") -> Translator:
        """Load a shareable folder (``scripts/export.py RUN --to hf DIR``: safetensors weights, no
        ``torch.load``), or its ``model.safetensors``; raises CheckpointError."""
        device = pick_device(device) if isinstance(device, str) else device
        folder = read_hf_folder(path)
        model = folder.model.to(device).eval()
        return cls(model, folder.tokenizer, folder.max_len, device, folder.run_config, folder.record, folder.weights)

    # -- search ------------------------------------------------------------------------------
    @torch.no_grad()
    def search_encoded(
        self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY, nbest: int = 1
    ) -> list[list[Hypothesis]]:
        """See :meth:`BaseTranslator.search_encoded`; batches are built from sorted lengths."""
        fitted = self.fit_sources(src_ids)
        outputs: list[list[Hypothesis]] = [[] for _ in src_ids]
        for rows in self.decoding_batches(fitted, options):
            for row, hyps in zip(rows, self.search_batch([fitted[i] for i in rows], options, nbest)):
                outputs[row] = hyps
        return outputs

    @staticmethod
    def decoding_batches(fitted: dict[int, list[int]], options: DecodingOptions = GREEDY) -> list[list[int]]:
        """The keys of fitted sources (:meth:`fit_sources`) in the batches :meth:`search_encoded`
        decodes them in: sorted by length, a batch of beam hypotheses costing about
        beam * rows * longest length tokens (``options.batch_hyp_tokens``)."""
        return length_batches(fitted, options.beam_size, options.batch_hyp_tokens)

    @torch.no_grad()
    def search_batch(
        self,
        sources: Sequence[Sequence[int]],
        options: DecodingOptions = GREEDY,
        nbest: int = 1,
        width: int | None = None,
    ) -> list[list[Hypothesis]]:
        """One decoding batch of fitted sources, padded to ``width`` positions (at least the
        longest): a part of a batch padded to the whole batch's width is decoded as in the whole
        batch (the training processes share validation's batches so)."""
        options = replace(options, max_output_len=self.output_cap(options))
        src = collate(sources, [[] for _ in sources]).src  # (B, S)
        if width is not None and width > src.shape[1]:
            src = F.pad(src, (0, width - src.shape[1]), value=PAD_ID)  # (B, width)
        with eval_mode(self.model):
            return search(self.model, src.to(self.device), options, nbest)

    def align(self, sources: Sequence[Sequence[int]], hypotheses: Sequence[Hypothesis]) -> list[list[int] | None]:
        """One teacher-forced pass over every hypothesis (see :meth:`score_encoded`)."""
        forced = self.score_encoded(
            sources, [hyp.ids for hyp in hypotheses], with_eos=[h.is_finished for h in hypotheses]
        )
        return [scored.alignment for scored in forced]

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
        Sources are fitted to the model and targets cut to ``max_len - 1`` pieces (the decoder's
        positions), quietly: :meth:`score` warns, :func:`~minitrans.inference.lines.score_lines`
        notes it."""
        src_ids = [self.fit_source(ids) if ids else [self.tokenizer.eos_id] for ids in src_ids]
        tgt_ids = [list(ids)[: self.max_len - 1] for ids in tgt_ids]
        ends = [with_eos] * len(tgt_ids) if isinstance(with_eos, bool) else list(with_eos)
        cost = {i: [*src_ids[i], *tgt_ids[i]] for i in range(len(src_ids))}
        outputs: list[ForcedScore | None] = [None] * len(src_ids)
        for rows in length_batches(cost, 1, batch_hyp_tokens):
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
        ``sentences`` one to one. A sentence or translation longer than the model allows is cut
        to fit, with a UserWarning naming it."""
        if len(sentences) != len(translations):
            raise ValueError(f"{len(sentences)} sentences but {len(translations)} translations")
        src_ids = self.encode(sentences)
        tgt_ids = self.tokenizer.encode_tgt(list(translations))
        tgt_ids = [[i for i in ids if i != self.tokenizer.eos_id] for ids in tgt_ids]
        for i, length in enumerate(map(len, src_ids)):
            if length > self.max_len:
                warnings.warn(f"sentence {i + 1} has {self.cut_note(length, 'scoring')}", stacklevel=2)
        for number, ids in enumerate(tgt_ids, 1):
            if len(ids) > self.max_len - 1:
                warnings.warn(
                    f"target {number} has {len(ids)} subwords, more than the model's max_len={self.max_len} "
                    f"allows; scoring its first {self.max_len - 1}",
                    stacklevel=2,
                )
        return self.score_encoded(src_ids, tgt_ids, length_penalty)

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


__all__ = ["SentenceAttention", "Translator", "require_model", "sentence_tokens"]

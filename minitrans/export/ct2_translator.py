"""Translate with a CTranslate2 export (``scripts/export.py RUN --to ctranslate2 DIR``).

:class:`Ct2Translator` is the second engine of the translator protocol
(:mod:`minitrans.inference.base`: ``translate``, ``translate_nbest``, ``translate_encoded``,
``encode``, ``decode``, ``config``) with the same input policies, the search done by
CTranslate2's C++ engine; forced scoring and attention maps need the PyTorch checkpoint. :func:`minitrans.export.loading.load_translator`
picks the engine by what a path holds: an exported folder (it has ``minitrans.json``) or a
checkpoint / run folder.

The search is made to be ours, so that both engines give the same output:

- output length: each sentence may produce ``max_output_ratio · source length + 10`` tokens
  (EOS included), capped at ``max_len - 1``; CTranslate2 takes one ``max_decoding_length`` per
  call, so each batch holds sentences of one limit (length-sorted batches, cut where it changes);
- PAD and BOS are never generated (suppressed before the softmax, as ours); EOS may come first
  (``min_decoding_length=0``); sources are fitted to ``max_len`` here, never cut by the engine;
- beam search: CTranslate2 takes the 2K best extensions, ends a hypothesis on an EOS among the
  top K and keeps the K best non-EOS extensions open, as ours does; it stops after K finished
  hypotheses when a length penalty is set (with a penalty of 0 it would stop when the top beam
  finishes), and normalises by ``length ** alpha``, not GNMT's ``((5 + length) / 6) ** alpha``.
  So it runs with a negligible penalty (``1e-7``: the K-finished stopping rule, scores unchanged
  to float precision), returns all K finished hypotheses with their log-probabilities, and the
  best under our GNMT normalisation (EOS counted in the length, as ours) is picked here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.checks import first_line
from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.textio import read_json
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.base import GREEDY, BaseTranslator, length_batches
from minitrans.inference.coverage import TrainingRecord
from minitrans.inference.decoding import Hypothesis, length_limits, length_normalizer
from minitrans.inference.scoring import hard_alignment

METADATA = "minitrans.json"  # marks an exported folder
INSTALL_HINT = "pip install 'minitrans[export]' (or: pip install ctranslate2)"
STOP_AFTER_K = 1e-7  # a length penalty CTranslate2 treats as "stop after K finished", too small to rank by


class Ct2Error(CheckpointError):
    """An exported folder that cannot be used, or ctranslate2 missing; one line says why."""


def import_ctranslate2():
    """The ``ctranslate2`` module, or :class:`Ct2Error` saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise Ct2Error(f"ctranslate2 is not installed: {INSTALL_HINT}") from None
    return ctranslate2


def is_exported(path: str | Path) -> bool:
    """True for a folder written by the exporter (it holds ``minitrans.json``)."""
    return (Path(path) / METADATA).is_file()


def _reason(error: Exception) -> str:
    return first_line(error) if str(error).strip() else type(error).__name__


class Ct2Translator(BaseTranslator):
    """Text in, text out through a ``ctranslate2.Translator``; no PyTorch model, no attention maps."""

    def __init__(
        self,
        engine,
        tokenizer: Tokenizer,
        max_len: int,
        config: dict | None = None,
        metadata: dict | None = None,
        path: Path | None = None,
    ):
        metadata = metadata or {}
        state = metadata.get("training_data")  # the training corpus' record, as the checkpoint had it
        record = TrainingRecord.from_state(state) if state else None
        super().__init__(tokenizer, max_len, config, record, path)
        self.engine, self.metadata = engine, metadata
        self._suppress = [[tokenizer.tgt.id_to_piece(i)] for i in (tokenizer.pad_id, tokenizer.bos_id)]

    @classmethod
    def from_folder(
        cls, path: str | Path, device: str | torch.device = "cpu", compute_type: str = "default", threads: int = 0
    ) -> Ct2Translator:
        """Load an exported folder. ``threads``: CTranslate2's intra-op threads (0: its default);
        ``compute_type``: as exported by default, or e.g. int8 / float32 / int8_float32."""
        ctranslate2 = import_ctranslate2()
        path = Path(path)
        device = getattr(device, "type", device)  # torch.device("cuda:0") -> "cuda"
        if device not in ("auto", "cpu", "cuda"):
            raise Ct2Error(f"CTranslate2 runs on cpu or cuda, not {device}")
        try:
            metadata = read_json(path / METADATA)
            tokenizer = Tokenizer.load(path)
            max_len = int(metadata["max_len"])
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
            raise Ct2Error(f"{path} is not a usable export ({type(error).__name__}: {_reason(error)})") from None
        try:
            engine = ctranslate2.Translator(str(path), device=device, compute_type=compute_type, intra_threads=threads)
        except (RuntimeError, ValueError) as error:
            raise Ct2Error(f"{path}: CTranslate2 cannot load it ({_reason(error)})") from None
        return cls(engine, tokenizer, max_len, metadata.get("config"), metadata, path)

    def search_encoded(
        self, src_ids: Sequence[Sequence[int]], options: DecodingOptions = GREEDY, nbest: int = 1
    ) -> list[list[Hypothesis]]:
        """As :meth:`BaseTranslator.search_encoded`: the ``nbest`` best hypotheses of each source,
        best first, scored as ours (log-probability with EOS, over GNMT's length penalty).
        ``options.use_cache`` is ignored: the engine always caches."""
        beam = options.beam_size
        if not 1 <= nbest <= beam:
            raise ValueError(f"nbest must be between 1 and the beam size {beam}, got {nbest}")
        fitted = self.fit_sources(src_ids)
        order = sorted(fitted, key=lambda i: len(fitted[i]))
        lengths = torch.tensor([len(fitted[i]) for i in order], dtype=torch.long)
        limits = dict(zip(order, length_limits(lengths, options.max_output_ratio, self.output_cap(options)).tolist()))
        outputs: list[list[Hypothesis]] = [[] for _ in src_ids]
        # one max_decoding_length per call: a batch holds sentences of one output limit
        for rows in length_batches(fitted, beam, options.batch_hyp_tokens, group=limits.__getitem__):
            found = self._search([fitted[i] for i in rows], limits[rows[0]], beam, nbest, options.length_penalty)
            for row, hyps in zip(rows, found):
                outputs[row] = hyps
        return outputs

    def _search(self, sources, limit: int, beam: int, nbest: int, length_penalty: float) -> list[list[Hypothesis]]:
        """One batch of sources sharing one output limit -> the n best hypotheses of each."""
        results = self.engine.translate_batch(
            self._pieces(sources),
            beam_size=beam,
            num_hypotheses=beam,
            length_penalty=STOP_AFTER_K if beam > 1 else 0.0,
            return_scores=True,
            return_end_token=True,
            max_input_length=0,
            max_decoding_length=limit,
            min_decoding_length=0,
            suppress_sequences=self._suppress,
        )
        tgt_id, eos = self.tokenizer.tgt.piece_to_id, self.tokenizer.eos_id
        found = []
        for result in results:
            hyps = []
            for tokens, score in zip(result.hypotheses, result.scores):
                ids = [tgt_id(token) for token in tokens]
                log_prob = score * len(ids) ** STOP_AFTER_K if beam > 1 else score  # undo the engine's penalty
                is_finished = bool(ids) and ids[-1] == eos
                ids = ids[:-1] if is_finished else ids
                hyps.append(
                    Hypothesis(
                        ids, log_prob, log_prob / length_normalizer(len(ids) + is_finished, length_penalty), is_finished
                    )
                )
            hyps.sort(key=lambda hyp: -hyp.score)  # stable: equal scores keep the engine's order
            found.append(hyps[:nbest])
        return found

    def _pieces(self, sources: Sequence[Sequence[int]]) -> list[list[str]]:
        return [[self.tokenizer.src.id_to_piece(int(i)) for i in ids] for ids in sources]

    def align(self, sources: Sequence[Sequence[int]], hypotheses: Sequence[Hypothesis]) -> list[list[int] | None]:
        """The engine's last decoder layer's attention, averaged over heads, with each hypothesis
        forced as a target prefix."""
        if not sources:
            return []
        targets = [hyp.ids for hyp in hypotheses]
        results = self.engine.translate_batch(
            self._pieces(sources),
            target_prefix=[self.tokenizer.tgt_pieces(ids) for ids in targets],
            beam_size=1,
            return_attention=True,
            max_input_length=0,
            max_decoding_length=max(len(ids) for ids in targets) + 1,
            min_decoding_length=0,
        )
        alignments = []
        for result, source, target in zip(results, sources, targets):
            cross = torch.tensor(result.attention[0][: len(target)]).reshape(1, 1, len(target), len(source))
            alignments.append(hard_alignment(cross, torch.tensor([source]))[0].tolist())
        return alignments


__all__ = ["METADATA", "Ct2Error", "Ct2Translator", "import_ctranslate2", "is_exported"]

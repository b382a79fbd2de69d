"""The gold alignments behind the web page: for a run trained on the embedded (generated)
corpus, its test sentences to pick from and, for a picked one, the gold word links on the
cross-attention maps' pieces and each head's AER on that sentence.

AER is measured as :mod:`minitrans.analysis.alignment` measures it for a run: by teacher forcing
the reference, so it does not depend on the translation found. The links are drawn on the
translation's maps only when the translation is the reference, piece for piece (the gold
belongs to the reference's words); otherwise the answer says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from minitrans.analysis.alignment import GoldAlignment, gold_cells, gold_split, measure_alignment
from minitrans.inference.translator import Translator, sentence_tokens

GOLD_SPLIT = "test"


@dataclass
class CorpusGold:
    """A run's test pairs with their gold alignments, by source sentence."""

    pairs: dict[str, tuple[str, GoldAlignment]]  # source -> (reference, gold oriented source to target)

    @classmethod
    def of(cls, translator: Translator) -> CorpusGold | None:
        """The gold of the corpus a checkpoint trained on; None for any corpus but the
        generated one, or a checkpoint whose data config cannot be read."""
        if translator.run_config is None:
            return None
        data = translator.run_config.data
        rows = gold_split(data, GOLD_SPLIT)
        if rows is None:
            return None
        return cls({source: (target, gold) for source, target, gold in rows})

    @property
    def sources(self) -> list[str]:
        return list(self.pairs)

    def explain(self, translator: Translator, source: str, translation_tokens: list[str]) -> dict | None:
        """For a test sentence: its reference, the reference's output tokens, the gold links as
        ``[row, column, sure]`` cells of a cross-attention map, whether they apply to the
        translation shown (``translation_tokens``, its output tokens), and the AER of each head
        ``[layer][head]`` and of each layer's heads averaged. None for a sentence not in the
        split, one longer than the model's positions, or a model without cross-attention."""
        found = self.pairs.get(source.strip())
        if found is None:
            return None
        reference, gold = found
        src_ids = translator.encode([source.strip()])[0]
        tgt_ids = translator.tokenizer.encode_tgt([reference])[0]
        if len(src_ids) > translator.max_len or len(tgt_ids) >= translator.max_len:
            return None
        report = measure_alignment(
            translator.model, translator.tokenizer, [src_ids], [tgt_ids], [gold], translator.device
        )
        if report is None or not report.sentences:
            return None
        reference_tokens = sentence_tokens(translator.tokenizer, src_ids, tgt_ids)[2]
        return {
            "split": GOLD_SPLIT,
            "reference": reference,
            "reference_tokens": reference_tokens,
            "matches_translation": reference_tokens == translation_tokens,
            "cells": [list(cell) for cell in gold_cells(translator.tokenizer, src_ids, tgt_ids, gold)],
            "aer_by_head": report.aer_grid(),
            "aer_by_layer": [counts.aer for counts in report.layers],
        }


__all__ = ["GOLD_SPLIT", "CorpusGold"]

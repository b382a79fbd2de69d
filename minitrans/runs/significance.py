"""Whether two systems' BLEU and chrF on one test set differ by more than chance: sacrebleu's
paired bootstrap resampling (:class:`sacrebleu.significance.PairedTest`, ``test_type="bs"``, its
1,000 resamples and fixed seed), which gives the p-value of the difference, and the 95 % interval
of the difference itself, from the same resamples and sacrebleu's own scoring and interval
(:func:`sacrebleu.significance.estimate_ci`). Both systems are scored as
:func:`minitrans.core.metrics.corpus_scores` scores one: BLEU's tokenizer for the target
language, a pre-segmented CJK target without its spaces unless they are kept, both sides as the
model writes text unless scored as written.

A difference is called larger than chance when its p-value is under :data:`LEVEL` and its
interval leaves out zero; compare.py and evaluate.py print it in words (:meth:`Difference.line`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest, estimate_ci

from minitrans.core.metrics import as_scored, bleu_tokenizer, signed

LEVEL = 0.05  # a p-value under this, with an interval that leaves out zero: larger than chance
RESAMPLES = 1000  # sacrebleu's default for the paired bootstrap


@dataclass(frozen=True)
class Difference:
    """One metric's difference between a system and the baseline (system minus baseline)."""

    metric: str  # "BLEU" or "chrF"
    baseline: float
    system: float
    low: float  # the 95 % interval of the difference: bootstrap mean -/+ sacrebleu's half-width
    high: float
    p_value: float
    signature: str  # sacrebleu's, with the resamples and the seed

    @property
    def difference(self) -> float:
        return self.system - self.baseline

    @property
    def is_larger_than_chance(self) -> bool:
        return self.p_value < LEVEL and not self.low <= 0.0 <= self.high

    def verdict(self) -> str:
        """The difference in words: larger than chance or not, and why not."""
        if self.is_larger_than_chance:
            return f"larger than chance (p < {LEVEL:g}, an interval without 0)"
        if self.low == self.high == self.difference == 0.0:
            return "not larger than chance (no difference on any resample)"
        if self.p_value >= LEVEL:
            return f"not larger than chance (p >= {LEVEL:g})"
        return "not larger than chance (its interval holds 0)"

    def line(self) -> str:
        """One line: ``BLEU B vs A: ±D, 95 % interval L to H, p = P: <verdict>``."""
        return (
            f"{self.metric} {self.system:.2f} vs {self.baseline:.2f}: {self.difference:+.2f}, 95 % interval "
            f"{self.low:+.2f} to {self.high:+.2f}, p = {self.p_value:.3f}: {self.verdict()}"
        )


def paired_differences(
    baseline: Sequence[str],
    system: Sequence[str],
    references: Sequence[str],
    tgt_lang: str | None = None,
    tokenize: str | None = None,
    keep_spaces: bool = False,
    as_written: bool = False,
    resamples: int = RESAMPLES,
) -> list[Difference]:
    """BLEU's and chrF's :class:`Difference` of ``system`` against ``baseline`` (hypotheses line
    for line with ``references``); ValueError when the three do not have one line each."""
    if not len(baseline) == len(system) == len(references):
        raise ValueError(
            f"{len(baseline)} and {len(system)} hypotheses for {len(references)} references: "
            "a paired test needs one line of each per sentence"
        )
    if not references:
        raise ValueError("no sentences to compare")
    name = bleu_tokenizer(tgt_lang, tokenize)
    baseline, refs, _ = as_scored(baseline, references, name, keep_spaces, as_written)
    system, _, _ = as_scored(system, references, name, keep_spaces, as_written)
    metrics = {"BLEU": BLEU(tokenize=name), "chrF": CHRF()}
    test = PairedTest([("baseline", baseline), ("system", system)], metrics, [refs], "bs", resamples)
    signatures, results = test()
    # the resamples PairedTest drew (its seed, its draw) give the interval of the difference
    draw = np.random.default_rng(test._seed if test._seed else None)
    rows = draw.choice(len(refs), size=(test.n_samples, len(refs)), replace=True)
    found = []
    for (label, metric), key in zip(metrics.items(), signatures):  # sacrebleu's names: BLEU, chrF2
        samples = [np.array(metric._extract_corpus_statistics(h, [refs]), dtype="float32") for h in (baseline, system)]
        base_scores, system_scores = (
            np.array([metric._compute_score_from_stats(stats[row].sum(0)).score for row in rows]) for stats in samples
        )
        differences = system_scores - base_scores
        mean, half = estimate_ci(differences)
        base_result, system_result = results[key]
        # sacrebleu counts resamples whose difference exceeds the observed one strictly, so two
        # systems that differ on no sentence would get its smallest p-value: no difference at all
        # is as likely as chance gets
        p_value = 1.0 if not differences.any() and system_result.score == base_result.score else system_result.p_value
        found.append(
            Difference(
                label,
                base_result.score,
                system_result.score,
                float(mean - half),
                float(mean + half),
                float(p_value),
                signed(signatures[key], as_written),
            )
        )
    return found


__all__ = ["LEVEL", "RESAMPLES", "Difference", "paired_differences"]

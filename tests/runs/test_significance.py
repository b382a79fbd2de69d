"""minitrans.runs.significance: sacrebleu's paired bootstrap, with the interval of the difference
drawn from the resamples sacrebleu's own test draws, and a verdict that a system against itself
is never larger than chance."""

from __future__ import annotations

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from minitrans.runs.significance import Difference, paired_differences

REFERENCES = [
    "the cat sat on the mat",
    "a dog runs in the park",
    "she reads a long book",
    "we walk home after school",
    "the children play in the garden",
    "he drinks a cup of tea",
] * 5
BETTER = [r if i % 3 else r.replace("the", "a") for i, r in enumerate(REFERENCES)]
WORSE = [" ".join(r.split()[:3]) for r in REFERENCES]


def test_a_better_system_beats_chance_by_sacrebleus_own_p_value_and_resamples():
    found = {d.metric: d for d in paired_differences(WORSE, BETTER, REFERENCES)}
    assert list(found) == ["BLEU", "chrF"]
    signatures, oracle = PairedTest(
        [("worse", WORSE), ("better", BETTER)], {"BLEU": BLEU(), "chrF": CHRF()}, [REFERENCES], "bs", 1000
    )()
    for name, key in (("BLEU", "BLEU"), ("chrF", "chrF2")):
        baseline, system = oracle[key]
        difference = found[name]
        assert (difference.baseline, difference.system) == (baseline.score, system.score)
        assert difference.p_value == system.p_value  # sacrebleu's, not a second bootstrap
        # the interval's centre is the mean difference over the resamples sacrebleu scored
        assert (difference.low + difference.high) / 2 == pytest.approx(system.mean - baseline.mean, abs=1e-3)
        assert difference.low <= difference.difference <= difference.high and difference.low > 0
        assert difference.is_larger_than_chance and "bs:1000" in difference.signature
        assert ": larger than chance" in difference.line() and "95 % interval +" in difference.line()
    assert found["BLEU"].difference > 0


def test_a_system_against_itself_is_a_difference_of_zero_not_larger_than_chance():
    for difference in paired_differences(BETTER, list(BETTER), REFERENCES):
        assert (difference.difference, difference.low, difference.high) == (0.0, 0.0, 0.0)
        assert difference.p_value == 1.0 and not difference.is_larger_than_chance
        assert "not larger than chance" in difference.line()


def test_a_small_difference_on_few_sentences_is_not_larger_than_chance():
    one_word = [r.replace("book", "novel") for r in REFERENCES[:6]]
    differences = paired_differences(REFERENCES[:6], one_word, REFERENCES[:6])
    assert not any(d.is_larger_than_chance for d in differences)
    assert all("not larger than chance" in d.line() for d in differences)


def test_the_verdict_needs_both_a_small_p_value_and_an_interval_without_zero():
    assert Difference("BLEU", 30.0, 31.0, 0.2, 1.8, 0.01, "").is_larger_than_chance
    assert not Difference("BLEU", 30.0, 31.0, -0.2, 2.2, 0.01, "").is_larger_than_chance
    assert not Difference("BLEU", 30.0, 31.0, 0.2, 1.8, 0.2, "").is_larger_than_chance


def test_systems_of_other_lengths_are_refused():
    with pytest.raises(ValueError, match="a paired test needs one line of each per sentence"):
        paired_differences(BETTER[:-1], WORSE, REFERENCES)

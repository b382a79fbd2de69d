"""BLEU and chrF come from sacrebleu; these tests hold our wrappers to it."""

import pytest
import sacrebleu

from minitrans.core.metrics import bleu_by_length, bucket_label, corpus_scores


def test_scores_agree_with_sacrebleu_on_known_strings():
    hyps = ["The cat sat on the mat.", "A man rides a bike."]
    refs = ["The cat sat on the mat.", "A man is riding a bicycle."]
    scores = corpus_scores(hyps, refs)
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    assert corpus_scores(refs, refs)["bleu"] == pytest.approx(100.0)
    # casing counts in the cased score, not in the lower-cased one
    shouted = [h.upper() for h in refs]
    assert corpus_scores(shouted, refs)["bleu"] < 10
    assert corpus_scores(shouted, refs)["bleu_lowercase"] == pytest.approx(100.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError):
        corpus_scores(["a"], ["a", "b"])


def test_bleu_by_length_buckets():
    assert [bucket_label(n) for n in (1, 10, 11, 50, 51)] == ["1-10", "1-10", "11-20", "41-50", "51+"]
    short_src, long_src = "a b c", " ".join(["w"] * 25)
    rows = bleu_by_length(
        [short_src, long_src, long_src],
        ["the cat sat on the mat", "a totally wrong output here", "a dog ran in the park today"],
        ["the cat sat on the mat", "the cat sat on the mat", "a dog ran in the park today"],
    )
    assert [(row["bucket"], row["count"]) for row in rows] == [("1-10", 1), ("21-30", 2)]
    assert rows[0]["bleu"] == pytest.approx(100.0)
    assert rows[1]["bleu"] < 100.0

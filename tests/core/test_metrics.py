"""BLEU and chrF come from sacrebleu; these tests hold our wrappers to it."""

import math

import pytest
import sacrebleu

from minitrans.core.metrics import (
    bleu_by_length,
    bleu_tokenizer,
    bucket_label,
    cjk_space_share,
    corpus_scores,
    remove_cjk_spaces,
)
from minitrans.core.saved_config import config_from_dict
from minitrans.runs.evaluation import bleu_settings


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


# Hand-computed BLEU: a hypothesis that is the reference less its end matches every n-gram, so
# BLEU is the brevity penalty alone, exp(1 - ref_len / hyp_len), in the target language's tokens.
CHINESE_HYP, CHINESE_REF = "猫坐在垫子上。", "猫坐在垫子上了。"  # zh: one token per character, 7 vs 8
JAPANESE_HYP, JAPANESE_REF = "私は猫が好き", "私は猫が好きです"  # MeCab: 私 は 猫 が 好き (です), 5 vs 6


def test_chinese_target_is_scored_with_the_zh_tokenizer():
    scores = corpus_scores([CHINESE_HYP], [CHINESE_REF], tgt_lang="zh")
    # precisions 7/7, 5/6, 4/5, 3/4 (the hypothesis' last n-gram of each order ends in 。, not 了。)
    assert scores["bleu"] == pytest.approx(100 * math.exp(1 - 8 / 7) * (5 / 6 * 4 / 5 * 3 / 4) ** 0.25)
    assert scores["bleu_tokenize"] == "zh" and "tok:zh" in scores["bleu_signature"]
    # the language's region or script does not change the choice
    assert corpus_scores([CHINESE_HYP], [CHINESE_REF], tgt_lang="zh-Hans")["bleu"] == pytest.approx(scores["bleu"])
    # 13a sees one token per sentence: the score the issue reported as wrong
    assert corpus_scores([CHINESE_HYP], [CHINESE_REF])["bleu"] == pytest.approx(0.0)
    assert corpus_scores([CHINESE_HYP], [CHINESE_REF], tgt_lang="zh", tokenize="13a")["bleu_tokenize"] == "13a"


def test_japanese_target_is_scored_with_mecab():
    pytest.importorskip("MeCab", reason="ja-mecab needs the ja extra: pip install 'minitrans[ja]'")
    pytest.importorskip("ipadic", reason="ja-mecab needs the ja extra: pip install 'minitrans[ja]'")
    scores = corpus_scores([JAPANESE_HYP], [JAPANESE_REF], tgt_lang="ja")
    assert scores["bleu"] == pytest.approx(100 * math.exp(1 - 6 / 5))
    assert scores["bleu_tokenize"] == "ja-mecab" and "tok:ja-mecab" in scores["bleu_signature"]
    # characters would give exp(1 - 8/6): the figure depends on the tokenizer, which is why it is recorded
    char = corpus_scores([JAPANESE_HYP], [JAPANESE_REF], tgt_lang="ja", tokenize="char")
    assert char["bleu"] == pytest.approx(100 * math.exp(1 - 8 / 6))


def test_other_languages_keep_13a_and_chrf_is_unchanged():
    hyps, refs = ["Der Hund läuft."], ["Der Hund läuft schnell."]
    scores = corpus_scores(hyps, refs, tgt_lang="de")
    assert scores["bleu_tokenize"] == "13a"
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    for lang in ("zh", "ja", "de", None):
        assert corpus_scores([CHINESE_HYP], [CHINESE_REF], tgt_lang=lang)["chrf"] == pytest.approx(
            sacrebleu.corpus_chrf([CHINESE_HYP], [[CHINESE_REF]]).score
        )


def test_a_missing_mecab_falls_back_to_characters_with_a_warning(monkeypatch):
    import minitrans.core.metrics as metrics

    def no_mecab(*args, **kwargs):
        raise ImportError("no module named MeCab")

    metrics._usable.cache_clear()
    monkeypatch.setattr(metrics, "BLEU", type("NoMecabBLEU", (sacrebleu.BLEU,), {"__init__": no_mecab}))
    try:
        with pytest.warns(UserWarning, match=r"minitrans\[ja\]"):
            assert metrics.bleu_tokenizer("ja") == "char"
    finally:
        metrics._usable.cache_clear()


def test_bleu_settings_and_an_unknown_tokenizer():
    assert bleu_settings(config_from_dict({"data": {"tgt_lang": "zh"}, "trainer": {"bleu_tokenize": "char"}})) == (
        "zh",
        "char",
    )
    assert bleu_settings(None) == (None, None)
    assert bleu_tokenizer("zh") == "zh" and bleu_tokenizer("fr") == "13a" and bleu_tokenizer(None) == "13a"
    with pytest.raises(ValueError, match="unknown BLEU tokenizer 'nope'"):
        bleu_tokenizer("zh", "nope")


def test_bleu_by_length_uses_the_target_languages_tokenizer():
    rows = bleu_by_length(["a b"], [CHINESE_HYP], [CHINESE_REF], tgt_lang="zh")
    assert rows[0]["bleu"] == pytest.approx(corpus_scores([CHINESE_HYP], [CHINESE_REF], tgt_lang="zh")["bleu"])


def test_trainer_bleu_tokenize_is_checked():
    from minitrans.core.checks import ConfigError
    from minitrans.core.config import TrainerConfig

    assert TrainerConfig(bleu_tokenize="zh").bleu_tokenize == "zh"
    with pytest.raises(ConfigError, match="trainer.bleu_tokenize: must be one of"):
        TrainerConfig(bleu_tokenize="nope")


def test_a_runs_evaluation_scores_bleu_for_its_target_language():
    """evaluate_split (validation, the final test and so summary.json) tokenises BLEU for the
    run's data.tgt_lang, or with trainer.bleu_tokenize, and says which."""
    import datasets

    from minitrans.core.decoding_options import DecodingOptions
    from minitrans.runs.evaluation import evaluate_split

    class EchoTranslator:  # "translates" each source into the hypothesis whose index it holds
        def __init__(self, config):
            self.run_config = config_from_dict(config)
            self.tokenizer = type("T", (), {"decode_tgt": staticmethod(lambda ids: [CHINESE_HYP][ids[0]])})()

        def translate_encoded(self, src_ids, options):
            return src_ids

    split = datasets.Dataset.from_dict({"src": ["the cat"], "tgt": [CHINESE_REF], "src_ids": [[0]]})
    scores, hyps = evaluate_split(EchoTranslator({"data": {"tgt_lang": "zh"}}), split, DecodingOptions())
    assert hyps == [CHINESE_HYP] and scores["bleu_tokenize"] == "zh"
    assert scores["bleu"] == pytest.approx(corpus_scores(hyps, [CHINESE_REF], "zh")["bleu"]) and scores["bleu"] > 50
    config = {"data": {"tgt_lang": "zh"}, "trainer": {"bleu_tokenize": "13a"}}
    assert evaluate_split(EchoTranslator(config), split, DecodingOptions())[0]["bleu_tokenize"] == "13a"


def test_arabic_script_targets_are_scored_with_intl():
    """13a leaves ؟ and ، on the word before them: a right word with its question mark is a miss."""
    assert bleu_tokenizer("ar") == bleu_tokenizer("fa") == bleu_tokenizer("ur-PK") == "intl"
    assert bleu_tokenizer("de") == "13a" and bleu_tokenizer("ar", "13a") == "13a"
    hyp, ref = ["هل أنت بخير ؟"], ["هل أنت بخير؟"]
    assert corpus_scores(hyp, ref, tgt_lang="ar")["bleu"] == pytest.approx(100.0)
    assert corpus_scores(hyp, ref, tgt_lang="ar", tokenize="13a")["bleu"] < 100.0


# A pre-segmented Japanese corpus (words separated by spaces, as small_parallel_enja comes)
SPACED_JA_HYP, SPACED_JA_REF = "私 は 猫 が 好き", "私 は 猫 が 好き です"


def test_the_share_of_spaced_cjk_gaps_tells_a_segmented_corpus_from_written_text():
    assert cjk_space_share([SPACED_JA_REF]) == pytest.approx(5 / 7)  # 5 spaced gaps, 好き and です joined
    assert cjk_space_share([JAPANESE_REF, CHINESE_REF]) == 0.0
    assert cjk_space_share(["Der Hund läuft schnell."]) == 0.0  # no CJK gap at all
    assert remove_cjk_spaces("Tom は 猫 が 好き です 。") == "Tom は猫が好きです。"  # the space after Latin stays


def test_a_pre_segmented_japanese_target_is_scored_as_written_and_says_so():
    pytest.importorskip("MeCab", reason="ja-mecab needs the ja extra: pip install 'minitrans[ja]'")
    pytest.importorskip("ipadic", reason="ja-mecab needs the ja extra: pip install 'minitrans[ja]'")
    spaced = corpus_scores([SPACED_JA_HYP], [SPACED_JA_REF], tgt_lang="ja")
    written = corpus_scores([JAPANESE_HYP], [JAPANESE_REF], tgt_lang="ja")
    assert spaced["bleu"] == pytest.approx(written["bleu"]) and spaced["cjk_spaces_removed"] == pytest.approx(0.714)
    assert "cjk_spaces_removed" not in written
    kept = corpus_scores([SPACED_JA_HYP], [SPACED_JA_REF], tgt_lang="ja", keep_spaces=True)
    assert "cjk_spaces_removed" not in kept
    by_length = bleu_by_length(["I like cats"], [SPACED_JA_HYP], [SPACED_JA_REF], tgt_lang="ja")
    assert by_length[0]["bleu"] == pytest.approx(written["bleu"])


def test_segmentation_spaces_are_removed_only_for_tokenizers_that_segment_cjk():
    hyps, refs = ["猫 が 好き"], ["猫 が 好き です"]
    assert "cjk_spaces_removed" in corpus_scores(hyps, refs, tgt_lang="zh")
    assert "cjk_spaces_removed" not in corpus_scores(hyps, refs, tgt_lang="zh", tokenize="13a")
    assert "cjk_spaces_removed" not in corpus_scores(hyps, refs, tgt_lang="de")


def test_a_pre_segmented_target_is_reported_once_at_preparation(tiny_config):
    import datasets

    from minitrans.data.corpus import PreparedCorpus
    from minitrans.training.run_data import segmentation_note

    pairs = {"src": ["I like cats", "a cat"], "tgt": ["私 は 猫 が 好き です", "猫 です"]}
    corpus = PreparedCorpus(datasets.DatasetDict({"train": datasets.Dataset.from_dict(pairs)}), {}, "key")
    share, line = segmentation_note(tiny_config("data.tgt_lang=zh"), corpus)
    assert share == pytest.approx(0.667) and "pre-segmented (67% of the gaps" in line and "removed before zh" in line
    kept = segmentation_note(tiny_config("data.tgt_lang=zh", "trainer.bleu_keep_spaces=true"), corpus)
    assert "kept, as trainer.bleu_keep_spaces asks" in kept[1]
    assert segmentation_note(tiny_config(), corpus) is None  # German: not a CJK target
    written = {"src": pairs["src"], "tgt": ["私は猫が好きです", "猫です"]}
    corpus.splits["train"] = datasets.Dataset.from_dict(written)
    assert segmentation_note(tiny_config("data.tgt_lang=zh"), corpus) is None


# the Greek question mark U+037E, which NFC makes ";", the character the model writes
GREEK_REF = ["Πού είναι ο σταθμός\u037e", "Τι ώρα είναι\u037e"]
GREEK_HYP = ["Πού είναι ο σταθμός;", "Τι ώρα είναι;"]


def test_both_sides_are_scored_as_the_model_writes_text_unless_as_written():
    scores = corpus_scores(GREEK_HYP, GREEK_REF, tgt_lang="el")
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)
    assert scores["bleu_signature"].endswith("|norm:nfc") and scores["chrf_signature"].endswith("|norm:nfc")
    written = corpus_scores(GREEK_HYP, GREEK_REF, tgt_lang="el", as_written=True)
    assert written["bleu"] < 100.0 and written["chrf"] < 100.0
    assert written["bleu_signature"].endswith("|norm:none") and written["chrf_signature"].endswith("|norm:none")
    assert written["bleu"] == pytest.approx(sacrebleu.corpus_bleu(GREEK_HYP, [GREEK_REF]).score)
    rows = bleu_by_length(GREEK_REF, GREEK_HYP, GREEK_REF, tgt_lang="el")
    assert [row["bleu"] for row in rows] == [pytest.approx(100.0)]
    assert bleu_by_length(GREEK_REF, GREEK_HYP, GREEK_REF, tgt_lang="el", as_written=True)[0]["bleu"] < 100.0


def test_scoring_text_is_the_text_the_model_reads():
    from minitrans.core.metrics import scoring_text
    from minitrans.data.tokenizer import _whitespace, model_text

    spaces = "".join(map(chr, _whitespace()))
    for text in [f"{spaces}Ma\u0308dchen{spaces}und\u00a0\u3000Junge\u037e ", "a\u200bb  c", "", " \t\n"]:
        assert scoring_text(text) == model_text(text)


def test_preparation_says_when_the_references_hold_characters_the_model_rewrites(tiny_config):
    import datasets

    from minitrans.data.corpus import PreparedCorpus
    from minitrans.training.run_data import rewritten_note

    cfg = tiny_config()
    split = {"src": ["Where is it?", "What time is it?", "Good."], "tgt": [*GREEK_REF, "Καλά."]}
    splits = {
        name: datasets.Dataset.from_dict(split) for name in ["train", cfg.data.valid_split, *cfg.data.test_splits]
    }
    corpus = PreparedCorpus(datasets.DatasetDict(splits), {}, "key")
    report, line = rewritten_note(cfg, corpus)
    lines = 3 * len({cfg.data.valid_split, *cfg.data.test_splits})
    assert report == {"lines": 2 * lines // 3, "of": lines, "characters": ["U+037E"]}
    assert f"{2 * lines // 3:,} of {lines:,} reference lines" in line and "U+037E GREEK QUESTION MARK" in line
    assert "norm:nfc" in line and "\n" not in line
    written = rewritten_note(tiny_config("trainer.bleu_as_written=true"), corpus)[1]
    assert "scored as written" in written
    plain = {"src": split["src"], "tgt": GREEK_HYP + ["Καλά."]}
    corpus.splits.update({name: datasets.Dataset.from_dict(plain) for name in splits})
    assert rewritten_note(cfg, corpus) is None

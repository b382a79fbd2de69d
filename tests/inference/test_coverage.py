"""What a model knows: the record of its training data, unseen words, and the model card."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minitrans.core.config import DataConfig
from minitrans.data.generated import coverage_summary, example_pairs, generate_corpus
from minitrans.inference.coverage import TrainingRecord, rebuild_record, words


@pytest.fixture(scope="module")
def grammar_record() -> TrainingRecord:
    """The record of a 3,000-pair embedded corpus (English → German)."""
    pairs = generate_corpus(num_train=3000, num_valid=0, num_test=0)["train"]
    return TrainingRecord.from_sentences([en for en, _ in pairs], "en", "de", "generated")


def test_words_keep_inner_apostrophes_and_hyphens_and_drop_punctuation():
    assert words("Don't stop, well-known Straßenbahn! 3 times?") == [
        "Don't",
        "stop",
        "well-known",
        "Straßenbahn",
        "3",
        "times",
    ]


def test_the_record_counts_case_folded_forms_and_names_unseen_words_as_written():
    record = TrainingRecord.from_sentences(["The dog sees the cat.", "the DOG sleeps"], "en", "de", "toy")
    assert record.word_counts == {"the": 3, "dog": 2, "sees": 1, "cat": 1, "sleeps": 1}
    assert (record.num_pairs, record.num_forms, record.is_capped) == (2, 5, False)
    assert record.unseen("The Cat sees a bird, a BIRD.") == ["a", "bird", "BIRD"]
    # every word was seen (case-folded), but capitals the sources never held are byte pieces to the model
    assert record.warnings("THE CAT SLEEPS.") == [
        "characters never seen in training (spelt as byte pieces the model never learnt): H E C A S L P",
        "3 of 3 words never seen in training or never so written (THE, CAT, SLEEPS): "
        "the translation is unlikely to mean anything",
    ]
    assert record.warnings("The cat sees a bird.")[-1] == "words never seen in training: a, bird"  # after b, i, r
    mostly = record.warnings("A bird sees the fish")[-1]
    assert mostly.startswith("3 of 5 words never seen in training (A, bird, fish)")
    assert "unlikely to mean anything" in mostly


def test_the_record_survives_a_checkpoint_round_trip_and_a_cap_says_so():
    record = TrainingRecord.from_sentences(["a a a b b c"], "de", "en", "toy", max_forms=2)
    assert record.word_counts == {"a": 3, "b": 2} and record.num_forms == 3 and record.is_capped
    state = record.to_state()
    assert isinstance(state["word_counts"], str)  # compact: one string, not a dict of thousands
    assert TrainingRecord.from_state(state) == record
    assert record.warnings("a c") == ["words not among the 2 commonest words of training: c"]


def test_the_issues_out_of_grammar_sentences_name_their_unseen_words(grammar_record):
    assert grammar_record.unseen("I love you.") == ["I", "you"]
    assert "unlikely to mean anything" in grammar_record.warnings("I love you.")[0]
    assert grammar_record.unseen("Where is the train station?") == ["Where", "is"]
    assert grammar_record.unseen("The old man who reads a book sees the small dog") == ["who"]


def test_sentences_of_the_grammar_get_no_warning(grammar_record):
    for en, _ in example_pairs(3):
        assert grammar_record.warnings(en) == []


def test_an_old_embedded_corpus_checkpoint_gets_its_record_rebuilt_and_cached(tmp_path, monkeypatch):
    data = {"name": "generated", "src_lang": "en", "tgt_lang": "de", "num_train": 50, "num_valid": 5, "num_test": 5,
            "min_words": 3, "max_words": 8, "corpus_seed": 7, "cache_dir": str(tmp_path)}  # fmt: skip
    data = DataConfig(**data)  # the run's data configuration, typed as a translator rebuilds it
    record = rebuild_record(data)
    assert record.is_rebuilt and record.num_pairs == 50 and record.corpus == "generated"
    assert list((tmp_path / "records").glob("*.json"))
    monkeypatch.setattr("minitrans.data.corpus.load_split", lambda *a, **k: pytest.fail("not rebuilt twice"))
    assert rebuild_record(data) == record
    assert rebuild_record(replace(data, name="multi30k")) is None  # coverage unknown


def test_the_grammar_summary_names_what_it_leaves_out():
    text = coverage_summary()
    assert "no pronouns" in text and "present tense" in text and '"that"' in text


def test_a_lower_cased_model_warns_of_capitals_and_emoji_and_lower_cases_its_input():
    """The word record is case-folded: "I" looked seen, though the model only ever saw "i"
    and spells "I" as a byte piece it never learnt; an emoji likewise."""
    record = TrainingRecord.from_sentences(["i have a dog .", "i see a cat ."], "en", "ja", "parallel")
    assert record.is_lowercase
    assert record.prepared("I have a cat.") == "i have a cat."
    assert record.unseen_characters("I have a cat 🐱") == ["🐱"]  # "I" is lower-cased, so it is seen
    messages = record.warnings("I have a cat 🐱")
    assert messages[0] == "the model trained on lower-case sources only: the input is lower-cased"
    assert "🐱" in messages[1] and "never seen" in messages[1]
    assert record.prepared("İ have a cat") == "i have a cat" and record.unseen_characters("İ have a cat") == []
    kept = TrainingRecord(**{**record.__dict__, "is_lowercase": False})  # translate.py --keep-case
    assert kept.unseen_characters("I have a cat 🐱") == ["I", "🐱"]
    again = TrainingRecord.from_state(record.to_state())
    assert again.characters == record.characters and again.is_lowercase
    cased = TrainingRecord.from_sentences(["The dog runs ."], "en", "de", "parallel")
    assert not cased.is_lowercase and cased.warnings("The dog runs .") == []


def test_a_translator_lower_cases_input_for_a_lower_cased_model():
    from minitrans.data.tokenizer import Tokenizer
    from minitrans.inference.base import BaseTranslator

    class Echo(BaseTranslator):
        def search_encoded(self, src_ids, options=None, nbest=1):
            return []

        def align(self, sources, hypotheses):
            return []

    sources = ["i have a dog .", "i see a cat ."] * 20
    tokenizer = Tokenizer.train(sources, ["犬がいます。", "猫を見ます。"] * 20, vocab_size=300)
    record = TrainingRecord.from_sentences(sources, "en", "ja", "parallel")
    translator = Echo(tokenizer, 64, record=record)
    assert translator.encode(["I have a dog ."]) == tokenizer.encode_src(["i have a dog ."])
    translator.keep_case()
    assert translator.encode(["I have a dog ."]) == tokenizer.encode_src(["I have a dog ."])


def test_a_loaded_config_never_chooses_where_the_record_is_cached(tmp_path, monkeypatch):
    from minitrans.core.saved_config import config_from_dict

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    monkeypatch.setenv("MINITRANS_CACHE_DIR", str(ours))
    data = {"name": "generated", "src_lang": "en", "tgt_lang": "de", "num_train": 50, "num_valid": 5, "num_test": 5,
            "min_words": 3, "max_words": 8, "corpus_seed": 7, "cache_dir": str(theirs)}  # fmt: skip
    loaded = config_from_dict({"data": data}).data  # what a translator reads back from a checkpoint or folder
    assert loaded.cache_dir == str(ours)
    record = rebuild_record(loaded)
    assert record is not None and record.num_pairs == 50
    assert list((ours / "records").glob("*.json")) and not theirs.exists()  # nothing written where the file said


# a cased corpus as one comes: capitalised sentences, words in capitals (every capital letter
# seen, so only the words can tell), five words at most
CASED = [
    "I love Greek food!",
    "Where is the train station?",
    "The UN meets in Geneva.",
    "The station is old.",
    "Its code: ABCDEFGHIJKLMNOPQRSTUVWXYZ.",
]


def test_capitals_never_so_written_in_training_are_named_ordinary_text_is_not():
    """The word check is case-folded, the model is not: "I LOVE GREEK FOOD!" used to pass it
    and come out as nonsense with nothing said."""
    record = TrainingRecord.from_sentences(CASED, "en", "el", "parallel")
    for ordinary in ("I love Greek food.", "Where is the UN station?", "the train is old", "The UN meets."):
        assert record.warnings(ordinary) == [], ordinary
    (shouted,) = record.warnings("I LOVE GREEK FOOD!")
    assert shouted.startswith("3 of 4 words never seen in training or never so written (LOVE, GREEK, FOOD)")
    assert "unlikely to mean anything" in shouted
    assert "unlikely to mean anything" in record.warnings("WHERE IS THE TRAIN STATION?")[0]
    (one,) = record.warnings("The train station is OLD.")
    assert one.startswith("words written in a case the training sources never used for them") and one.endswith(": OLD")
    assert record.unseen_cases("I love gReek food, UN") == ["gReek"]  # mixed case too; UN was written so
    assert "unlikely to mean anything" in record.warnings("LOVE LOVE LOVE food")[0]  # each time it is written
    assert TrainingRecord.from_state(record.to_state()) == record


def test_a_sentence_far_longer_than_any_training_source_says_so():
    record = TrainingRecord.from_sentences(CASED, "en", "el", "parallel")
    assert record.longest_source == 5
    assert record.warnings("The station is old the train is old the station") == []  # 10 words: twice
    long = " ".join(["The train station is old."] * 4)
    (note,) = record.warnings(long)
    assert note.startswith("20 words, far longer than the longest training source (5 words)")
    older = TrainingRecord(**{**record.__dict__, "longest_source": None, "odd_cases": None})  # an older checkpoint
    assert older.warnings(long) == [] and older.warnings("I LOVE GREEK FOOD!") == []


def test_a_decomposed_input_to_a_model_of_composed_text_warns_of_nothing():
    """The tokenizer composes its input (NFC), so a decomposed "Mädchen" is the word the model
    learnt: no "characters never seen" for its combining mark, no "words never seen" for its halves."""
    import unicodedata

    record = TrainingRecord.from_sentences(["Das Mädchen sieht den Hund.", "Der Hund schläft."], "de", "en", "parallel")
    decomposed = unicodedata.normalize("NFD", "Das Mädchen sieht den Hund.")
    assert decomposed != "Das Mädchen sieht den Hund."
    assert record.warnings(decomposed) == []
    assert record.warnings(unicodedata.normalize("NFD", "Das Mädchen schläft.")) == []

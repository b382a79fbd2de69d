"""Training on one's own data: a folder of {split}.{lang}[.gz] files (data=parallel, with
Multi30k as its preset) and anything ``datasets`` loads (data=hf); held-out splits, the
cached preparation, and one clear ConfigError for each kind of bad input."""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import replace
from pathlib import Path

import datasets
import numpy as np
import pytest

from minitrans.core.checks import ConfigError
from minitrans.core.config import CleanConfig, DataConfig
from minitrans.data.corpus import describe, load_split, overlap_warnings, prepare_corpus, seen_in_training
from minitrans.runs.evaluation import unseen_scores

EN = [f"the dog number {i} runs home ." for i in range(60)]
FR = [f"le chien numéro {i} rentre à la maison ." for i in range(60)]


def write(path: Path, lines: list[str], compress: bool = False) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if compress else data)


@pytest.fixture
def folder(tmp_path) -> Path:
    """train in plain text, dev and tst2020 gzipped: any split names, both file forms."""
    root = tmp_path / "en-fr"
    root.mkdir()
    write(root / "train.en", EN[:40])
    write(root / "train.fr", FR[:40])
    write(root / "dev.en.gz", EN[40:50], compress=True)
    write(root / "dev.fr.gz", FR[40:50], compress=True)
    write(root / "tst2020.en", EN[50:])
    write(root / "tst2020.fr", FR[50:])
    return root


def config(tmp_path, **values) -> DataConfig:
    base = {"name": "parallel", "src_lang": "en", "tgt_lang": "fr", "num_valid": 5, "num_test": 5}
    return DataConfig(**(base | {"cache_dir": str(tmp_path / "cache")} | values))


def pairs(dataset) -> list[tuple[str, str]]:
    return list(zip(dataset["src"], dataset["tgt"]))


# ---- data=parallel ----------------------------------------------------------------------------
def test_a_folder_of_files_with_any_split_names(folder, tmp_path):
    cfg = config(tmp_path, root=str(folder), test_splits=["tst2020"])
    corpus = prepare_corpus(cfg)
    assert pairs(corpus.splits["train"]) == list(zip(EN[:40], FR[:40]))
    assert pairs(corpus.splits["valid"]) == list(zip(EN[40:50], FR[40:50]))  # "dev" stands in for "valid"
    assert pairs(corpus.splits["tst2020"]) == list(zip(EN[50:], FR[50:]))
    assert corpus.report["splits"]["valid"] == {"pairs": 10, "from": "dev", "sources_in_train": 0}
    assert corpus.report["held_out"] == {}
    reverse = prepare_corpus(replace(cfg, src_lang="fr", tgt_lang="en"))
    assert pairs(reverse.splits["train"])[0] == (FR[0], EN[0])


def test_multi30k_is_a_preset_of_the_same_loader(folder, tmp_path):
    for name in ("train", "val", "test_2016_flickr"):
        for lang, lines in (("de", FR), ("en", EN)):
            write(folder / f"{name}.{lang}.gz", lines[:20], compress=True)
    cfg = DataConfig(
        name="multi30k",
        root=str(folder),
        src_lang="de",
        tgt_lang="en",
        valid_split="val",
        test_splits=["test_2016_flickr"],
        cache_dir=str(tmp_path / "cache"),
    )
    corpus = prepare_corpus(cfg)
    assert sorted(corpus.splits) == ["test_2016_flickr", "train", "val"]
    assert corpus.splits["val"][0] == {"src": FR[0], "tgt": EN[0]}
    with pytest.raises(ConfigError, match=r"data\.root: no folder .*prepare\.py"):
        prepare_corpus(replace(cfg, root=str(tmp_path / "nowhere")))


def test_missing_splits_are_held_out_deterministically_and_disjoint(tmp_path):
    root = tmp_path / "only-train"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    cfg = config(tmp_path, root=str(root), num_valid=7, num_test=9)
    corpus = prepare_corpus(cfg)
    train, valid, test = (set(pairs(corpus.splits[n])) for n in ("train", "valid", "test"))
    assert (len(train), len(valid), len(test)) == (44, 7, 9)
    assert train | valid | test == set(zip(EN, FR)) and not (train & valid or train & test or valid & test)
    assert corpus.report["held_out"]["pairs"] == {"valid": 7, "test": 9}
    assert corpus.report["splits"]["test"]["from"] == "held out of training"
    again = prepare_corpus(replace(cfg, cache_dir=str(tmp_path / "other-cache")))  # recomputed, not cached
    assert pairs(again.splits["valid"]) == pairs(corpus.splits["valid"])
    other_seed = prepare_corpus(replace(cfg, corpus_seed=99))
    assert set(pairs(other_seed.splits["valid"])) != valid
    # evaluate.py draws the held-out split again, exactly
    assert load_split(cfg, "test")[:2] == (list(corpus.splits["test"]["src"]), list(corpus.splits["test"]["tgt"]))


def test_repeats_of_held_out_pairs_leave_training(tmp_path):
    root = tmp_path / "repeats"
    root.mkdir()
    write(root / "train.en", EN + EN)
    write(root / "train.fr", FR + FR)
    corpus = prepare_corpus(config(tmp_path, root=str(root), num_valid=5, num_test=5))
    held = set(pairs(corpus.splits["valid"])) | set(pairs(corpus.splits["test"]))
    assert not held & set(pairs(corpus.splits["train"]))
    removed = corpus.report["held_out"]["repeats_removed_from_train"]
    assert removed > 0 and len(corpus.splits["train"]) == 2 * len(EN) - 10 - removed


def test_a_held_out_source_leaves_training_with_all_its_translations(tmp_path):
    """Tatoeba gives one source several translations: holding out pairs leaves the other
    translations of a held-out source in training, and the model recites them on the test."""
    root = tmp_path / "two-translations"
    root.mkdir()
    write(root / "train.en", EN + EN)  # each source twice, with two different translations
    write(root / "train.fr", FR + [f.replace("le chien", "ce chien") for f in FR])
    corpus = prepare_corpus(config(tmp_path, root=str(root), num_valid=5, num_test=5))
    train_sources = set(corpus.splits["train"]["src"])
    for name in ("valid", "test"):
        assert not set(corpus.splits[name]["src"]) & train_sources
        assert corpus.report["splits"][name]["sources_in_train"] == 0
    held = corpus.report["held_out"]
    assert held["by"] == "source sentence" and held["repeats_removed_from_train"] == 0
    removed = held["translations_removed_from_train"]
    assert removed > 0 and len(corpus.splits["train"]) == 2 * len(EN) - 10 - removed
    assert any("other translations of held-out sources" in line for line in describe(corpus.report))


def test_the_held_out_split_is_unchanged_when_no_source_repeats(tmp_path):
    """Holding out by source is holding out by pair when every source is unique: the same split."""
    root = tmp_path / "unique"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    corpus = prepare_corpus(config(tmp_path, root=str(root), num_valid=7, num_test=9))
    rng_order = np.random.default_rng(corpus.report["held_out"]["seed"]).permutation(len(EN))
    assert corpus.splits["valid"]["src"] == [EN[i] for i in rng_order[:7]]
    assert corpus.splits["test"]["src"] == [EN[i] for i in rng_order[7:16]]
    assert corpus.splits["train"]["src"] == [EN[i] for i in sorted(rng_order[16:])]


def test_a_corpus_test_split_whose_sources_occur_in_training_is_counted(tmp_path):
    root = tmp_path / "own-test"
    root.mkdir()
    write(root / "train.en", EN[:40])
    write(root / "train.fr", FR[:40])
    write(root / "test.en", [*EN[:3], *EN[50:55]])  # three sources the model trains on
    write(root / "test.fr", [*(f"autre {f}" for f in FR[:3]), *FR[50:55]])
    corpus = prepare_corpus(config(tmp_path, root=str(root)))
    assert corpus.report["splits"]["test"]["sources_in_train"] == 3
    assert overlap_warnings(corpus.report) == [
        "split test: 3 of 8 source sentences also occur in training (with this or another translation): a model "
        "may repeat what it learnt for them; BLEU on the unseen ones is reported beside the whole"
    ]
    seen = seen_in_training(corpus.splits["train"], corpus.splits["test"])
    assert seen.tolist() == [True] * 3 + [False] * 5
    hyps = list(corpus.splits["test"]["tgt"])
    hyps[3:] = ["rien"] * 5  # recites the seen ones, gets the unseen ones wrong
    scores = unseen_scores(hyps, corpus.splits["test"]["tgt"], seen)
    assert scores["seen_in_train"] == 3 and scores["unseen"]["sentences"] == 5
    assert scores["unseen"]["bleu"] == pytest.approx(0.0)
    assert unseen_scores(hyps, hyps, [False] * 8) == {}


def test_the_prepared_corpus_is_cached_and_follows_its_files(folder, tmp_path):
    cfg = config(tmp_path, root=str(folder), test_splits=["tst2020"])
    first = prepare_corpus(cfg)
    assert prepare_corpus(cfg).key == first.key
    assert len(list((tmp_path / "cache" / "corpora").iterdir())) == 1
    write(folder / "train.en", [line + " !" for line in EN[:40]])  # the user edits a file
    changed = prepare_corpus(cfg)
    assert changed.key != first.key and changed.splits["train"][0]["src"].endswith("!")
    cleaner = prepare_corpus(replace(cfg, clean=CleanConfig(drop_duplicates=True)))
    assert cleaner.key != changed.key


# ---- data=hf --------------------------------------------------------------------------------
def test_json_lines_in_the_hub_translation_layout(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"translation": {"en": e, "fr": f}}) + "\n" for e, f in zip(EN, FR)))
    cfg = config(tmp_path, name="hf", path=str(path), num_valid=6, num_test=4, valid_split="validation")
    corpus = prepare_corpus(cfg)
    assert len(corpus.splits["train"]) == 50 and len(corpus.splits["validation"]) == 6
    assert set(pairs(corpus.splits["train"])) | set(pairs(corpus.splits["validation"])) | set(
        pairs(corpus.splits["test"])
    ) == set(zip(EN, FR))
    with pytest.raises(ConfigError, match=r"data\.tgt_lang: .*translation.*no 'de'.*it has: en, fr"):
        prepare_corpus(replace(cfg, tgt_lang="de"))


@pytest.mark.parametrize("form", ["csv", "tsv", "parquet", "folder", "save_to_disk"])
def test_flat_columns_in_every_local_form(tmp_path, form):
    table = datasets.Dataset.from_dict({"id": list(range(60)), "english": EN, "french": FR})
    target = tmp_path / f"corpus.{form}"
    if form == "csv":
        table.to_csv(str(target), index=False)
    elif form == "tsv":
        table.to_csv(str(target), index=False, sep="\t")
    elif form == "parquet":
        table.to_parquet(str(target))
    elif form == "folder":  # one file per split
        target.mkdir()
        table.select(range(50)).to_json(str(target / "train.jsonl"))
        table.select(range(50, 60)).to_json(str(target / "test.jsonl"))
    else:
        datasets.DatasetDict({"train": table}).save_to_disk(str(target))
    cfg = config(tmp_path, name="hf", path=str(target), src_field="english", tgt_field="french", num_valid=5)
    corpus = prepare_corpus(cfg)
    expected_test = 10 if form == "folder" else 5
    assert len(corpus.splits["test"]) == expected_test
    assert len(corpus.splits["train"]) == 60 - 5 - expected_test
    assert all(pair in set(zip(EN, FR)) for pair in pairs(corpus.splits["train"]))
    with pytest.raises(ConfigError, match=r"data\.src_field: .*no field 'inglés'; its fields are: id, english, french"):
        prepare_corpus(replace(cfg, src_field="inglés"))


def test_columns_named_by_the_language_codes_need_no_fields(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"en": e, "fr": f}) + "\n" for e, f in zip(EN, FR)))
    corpus = prepare_corpus(config(tmp_path, name="hf", path=str(path)))
    assert len(corpus.splits["train"]) == 50
    with pytest.raises(ConfigError, match=r"data\.src_field: .*its fields are: en, fr"):
        prepare_corpus(config(tmp_path, name="hf", path=str(path), src_lang="de"))


# ---- bad input: one ConfigError each, naming what to fix ------------------------------------
def test_a_split_with_one_language_missing(folder, tmp_path):
    (folder / "dev.fr.gz").unlink()
    with pytest.raises(ConfigError, match=r"data\.root: split 'dev' has .*dev\.en\.gz but no dev\.fr"):
        prepare_corpus(config(tmp_path, root=str(folder), test_splits=["tst2020"]))


def test_line_counts_that_differ_name_both_files(folder, tmp_path):
    write(folder / "train.fr", FR[:39])
    with pytest.raises(ConfigError, match=r"train\.en has 40 lines but \S*train\.fr has 39"):
        prepare_corpus(config(tmp_path, root=str(folder), test_splits=["tst2020"]))


def test_invalid_utf8_names_file_and_line(folder, tmp_path):
    (folder / "train.en").write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(ConfigError, match=r"train\.en, line 3: not valid UTF-8"):
        prepare_corpus(config(tmp_path, root=str(folder), test_splits=["tst2020"]))


def test_a_corpus_emptied_by_cleaning_names_the_filter(folder, tmp_path):
    cfg = config(tmp_path, root=str(folder), test_splits=["tst2020"], clean=CleanConfig(max_chars=10))
    with pytest.raises(ConfigError, match=r"data\.clean: cleaning dropped all 40 .*data\.clean\.max_chars=10"):
        prepare_corpus(cfg)
    assert not (tmp_path / "cache" / "corpora").exists() or not any((tmp_path / "cache" / "corpora").iterdir())


def test_missing_folder_and_too_few_pairs_to_hold_out(tmp_path, folder):
    with pytest.raises(ConfigError, match=r"data\.root: no folder .*nowhere"):
        prepare_corpus(config(tmp_path, root=str(tmp_path / "nowhere")))
    with pytest.raises(ConfigError, match=r"data\.num_valid: cannot hold out 40 pairs for test from 40 training"):
        prepare_corpus(config(tmp_path, root=str(folder), num_test=40))
    with pytest.raises(ConfigError, match=r"data\.tgt_lang: source and target are both 'en'"):
        config(tmp_path, root=str(folder), tgt_lang="en")


# ---- a training run on a folder of files, in process ------------------------------------------
def test_a_run_on_a_folder_reports_its_data_and_holds_ids_compactly(tmp_path, tiny_config):
    from minitrans.data.generated import generate_corpus
    from minitrans.data.token_ids import TokenIds
    from minitrans.training.trainer import Trainer

    corpus = generate_corpus(num_train=120, num_valid=1, num_test=1, min_words=3, max_words=8, seed=3)["train"]
    root = tmp_path / "de-en"
    root.mkdir()
    write(root / "train.en", [en for en, _ in corpus])
    write(root / "train.de", [de for _, de in corpus])
    write(root / "test.en", [en for en, _ in corpus[:10]])
    write(root / "test.de", [de for _, de in corpus[:10]])
    cfg = tiny_config(
        "data=parallel",
        f"data.root={root}",
        "data.src_lang=de",
        "data.tgt_lang=en",
        "data.num_valid=10",
        "trainer.max_steps=3",
        "trainer.eval_every=3",
    )
    trainer = Trainer(cfg, tmp_path / "run")
    assert isinstance(trainer.src_ids, TokenIds) and len(trainer.src_ids) == 110
    summary = trainer.fit()
    # the corpus's own test split is ten training pairs: counted, and scored as seen
    assert summary.data["splits"]["test"] == {"pairs": 10, "from": "test", "sources_in_train": 10}
    assert summary.test["seen_in_train"] == 10 and "unseen" not in summary.test
    assert summary.data["splits"]["valid"] == {"pairs": 10, "from": "held out of training", "sources_in_train": 0}
    assert summary.data["too_many_subwords"] == 0 and summary.test["sentences"] == 10
    assert trainer.record.num_pairs == 110 and trainer.record.src_lang == "de"


def test_damaged_cache_entries_are_rebuilt(folder, tmp_path):
    from minitrans.data.tokenize import tokenize_pairs
    from minitrans.data.tokenizer import Tokenizer

    cfg = config(tmp_path, root=str(folder), test_splits=["tst2020"])
    corpus = prepare_corpus(cfg)
    tokenizer = Tokenizer.train(EN, FR, vocab_size=300)
    src, tgt = tokenize_pairs(corpus.splits["train"], tokenizer, cfg.cache_dir, corpus.key)
    expected, expected_pairs = [row.tolist() for row in src], pairs(corpus.splits["train"])
    for path in (tmp_path / "cache").rglob("*"):  # damage every cached file of the corpus and its ids
        if path.is_file() and path.suffix in (".npy", ".arrow", ".json"):
            path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.warns(UserWarning, match="rebuilding the damaged cache"):
        again = prepare_corpus(cfg)
    assert pairs(again.splits["train"]) == expected_pairs
    with pytest.warns(UserWarning, match="rebuilding the damaged cache"):
        src, _ = tokenize_pairs(again.splits["train"], tokenizer, cfg.cache_dir, again.key)
    assert [row.tolist() for row in src] == expected


def test_a_hub_id_offline_is_one_line_asking_for_a_local_path(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1 does (CI sets it)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cfg = config(tmp_path, name="hf", path="wmt/wmt14", subset="de-en", src_lang="de", tgt_lang="en")
    with pytest.raises(ConfigError, match=r"^data\.path: 'wmt/wmt14' is not a local file .*pass a local path"):
        prepare_corpus(cfg)


def test_languages_not_in_the_folder_name_the_ones_that_are(folder, tmp_path):
    with pytest.raises(ConfigError, match=r"data\.src_lang: no \*\.de files in \S+ \(languages present: en, fr\)"):
        prepare_corpus(config(tmp_path, root=str(folder), src_lang="de"))


# ---- holding out by source, as the model sees the source ------------------------------------
DE_NFC = [f"das Mädchen Nummer {i} läuft über die Straße ." for i in range(60)]


def nfd(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize(
    "twin",
    [nfd, lambda text: text.replace(" ", "\u00a0", 1), lambda text: nfd(text).replace(" ", "  ")],
    ids=["decomposed", "no-break-space", "decomposed-and-two-spaces"],
)
def test_a_held_out_source_leaves_training_in_every_form_the_model_reads_alike(twin, tmp_path):
    """A corpus may hold a source composed with one translation and decomposed (or with other
    spaces) with another: the model reads both as the same token ids, so both leave training."""
    from minitrans.data.tokenizer import Tokenizer

    root = tmp_path / "twins"
    root.mkdir()
    twins = [twin(text) for text in DE_NFC]
    assert twins != DE_NFC
    write(root / "train.de", DE_NFC + twins)
    write(root / "train.fr", FR + [f.replace("le chien", "ce chien") for f in FR])
    cfg = config(tmp_path, root=str(root), src_lang="de", num_valid=5, num_test=10, clean=CleanConfig(normalize=False))
    corpus = prepare_corpus(cfg)
    train = corpus.splits["train"]
    tok = Tokenizer.train(train["src"], train["tgt"], vocab_size=300)
    train_ids = {tuple(ids) for ids in tok.encode_src(train["src"])}
    for name in ("valid", "test"):
        assert not {tuple(ids) for ids in tok.encode_src(corpus.splits[name]["src"])} & train_ids
        assert corpus.report["splits"][name]["sources_in_train"] == 0
    held = corpus.report["held_out"]
    assert held["translations_removed_from_train"] == 15
    assert len(train) == 2 * len(DE_NFC) - 15 - 15


def test_a_decomposed_source_of_a_training_pair_counts_as_seen(tmp_path):
    train = datasets.Dataset.from_dict({"src": DE_NFC[:3], "tgt": FR[:3]})
    assert seen_in_training(train, [nfd(DE_NFC[0]), DE_NFC[1].replace(" ", "\u3000"), DE_NFC[5]]).tolist() == [
        True,
        True,
        False,
    ]


def test_a_decomposed_repeat_of_a_held_out_pair_is_a_repeat(tmp_path):
    root = tmp_path / "repeats"
    root.mkdir()
    write(root / "train.de", DE_NFC + [nfd(text) for text in DE_NFC])
    write(root / "train.fr", [nfd(text) for text in FR] + FR)
    corpus = prepare_corpus(config(tmp_path, root=str(root), src_lang="de", num_valid=5, num_test=5))
    held = corpus.report["held_out"]
    assert (held["repeats_removed_from_train"], held["translations_removed_from_train"]) == (10, 0)


def test_holding_out_every_source_of_training_is_one_config_error(tmp_path):
    """Every pair a translation of one source (in two forms): holding it out leaves nothing."""
    root = tmp_path / "one-source"
    root.mkdir()
    write(root / "train.de", [DE_NFC[0] if i % 2 else nfd(DE_NFC[0]) for i in range(30)])
    write(root / "train.fr", FR[:30])
    with pytest.raises(ConfigError, match=r"^data\.num_valid: holding out .*leaves no training pair") as error:
        prepare_corpus(config(tmp_path, root=str(root), src_lang="de", num_valid=2, num_test=1))
    assert "\n" not in str(error.value)


def test_the_record_of_decomposed_sources_holds_the_letters_the_model_reads(tmp_path):
    """Decomposed training sources are the composed letters to the model: a composed input has
    no character nor word the model never saw."""
    from minitrans.training.run_data import training_record

    root = tmp_path / "decomposed"
    root.mkdir()
    write(root / "train.de", [nfd(text) for text in DE_NFC])
    write(root / "train.fr", FR)
    cfg = config(tmp_path, root=str(root), src_lang="de")
    record = training_record(cfg, prepare_corpus(cfg))
    assert "\u0308" not in record.characters and "ä" in record.characters
    assert "mädchen" in record.word_counts and "ma" not in record.word_counts
    assert record.warnings("das Mädchen läuft über die Straße .") == []


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (DataConfig(name="hf", path="corpora/ell.jsonl", src_lang="en", tgt_lang="el"), "hf: corpora/ell.jsonl;"),
        (DataConfig(name="hf", path="wmt/wmt14", subset="de-en", src_lang="en"), "hf: wmt/wmt14 (de-en);"),
        (DataConfig(name="parallel", root="corpora/en-el", src_lang="en", tgt_lang="el"), "parallel: corpora/en-el;"),
    ],
)
def test_the_model_card_names_the_corpus_file_not_only_its_kind(tmp_path, data, named):
    from helpers.checkpoints import build_cased_checkpoint

    from minitrans.export.loading import load_translator
    from minitrans.inference.model_card import model_card

    path = build_cased_checkpoint(tmp_path / "best.pt", data)
    (line,) = [line for line in model_card(load_translator(path, "cpu")).splitlines() if line.startswith("corpus:")]
    assert line.startswith(f"corpus:     {named}"), line


def test_a_max_len_that_leaves_out_most_training_pairs_is_a_warning_naming_it(tiny_config, caplog):
    from minitrans.training.run_data import prepare_training_data

    with caplog.at_level(logging.INFO, logger="minitrans.training.run_data"):
        data = prepare_training_data(tiny_config("model.max_len=12"))
    (line,) = [r for r in caplog.records if "left out" in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert "model.max_len" in line.getMessage() and "data.max_tokens" not in line.getMessage()
    assert f"trains on {len(data.src_ids):,} of 120" in line.getMessage()

"""The corpus layouts people already have load as they come (a Tatoeba-like tab-separated file
without a header, OpenNMT's src-/tgt- files, one file per language), and each bad file is one
ConfigError naming the file, the line and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minitrans.core.checks import ConfigError
from minitrans.core.config import DataConfig
from minitrans.data.corpus import load_split, prepare_corpus
from minitrans.data.parallel import available_splits, corpus_files, half_splits, split_paths

EN = [f"the dog number {i} runs home ." for i in range(40)]
ZH = [f"第{i}号狗跑回家。" for i in range(40)]
DE = [f"der Hund Nummer {i} läuft nach Hause ." for i in range(40)]
ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #538123 (CM) & #891077 (Martha)"


def config(tmp_path, **values) -> DataConfig:
    base = {"name": "hf", "src_lang": "en", "tgt_lang": "zh", "num_valid": 4, "num_test": 4}
    return DataConfig(**(base | {"cache_dir": str(tmp_path / "cache")} | values))


def pairs(dataset) -> set[tuple[str, str]]:
    return set(zip(dataset["src"], dataset["tgt"]))


def all_pairs(corpus) -> set[tuple[str, str]]:
    return set().union(*(pairs(split) for split in corpus.splits.values()))


@pytest.fixture
def tatoeba(tmp_path) -> Path:
    """Tatoeba's cmn.txt: English<TAB>Chinese<TAB>attribution, no header, a .txt suffix."""
    path = tmp_path / "cmn.txt"
    path.write_text("".join(f"{e}\t{z}\t{ATTRIBUTION}\n" for e, z in zip(EN, ZH)), encoding="utf-8")
    return path


# ---- tab-separated files, with or without a header ------------------------------------------
def test_a_tatoeba_file_trains_as_is_first_two_columns_in_order(tatoeba, tmp_path, caplog):
    caplog.set_level("INFO")
    corpus = prepare_corpus(config(tmp_path, path=str(tatoeba)))
    assert all_pairs(corpus) == set(zip(EN, ZH))  # the first row is a pair, not column names
    assert sum(map(len, corpus.splits.values())) == 40
    assert "no header" in caplog.text and "column 1 is read as en and column 2 as zh, column 3 ignored" in caplog.text


def test_positions_name_other_columns_of_a_headerless_file(tatoeba, tmp_path):
    corpus = prepare_corpus(
        config(tmp_path, path=str(tatoeba), src_lang="zh", tgt_lang="en", src_field="2", tgt_field="1")
    )
    assert all_pairs(corpus) == set(zip(ZH, EN))
    with pytest.raises(
        ConfigError, match=r"^data\.src_field: .*no field .english.*not a header.*data\.src_field=1 data\.tgt_field=2"
    ):
        prepare_corpus(config(tmp_path, path=str(tatoeba), src_field="english", tgt_field="chinese"))


@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.txt", "pairs", "pairs.tsv.gz", "pairs.dat"])
def test_a_header_of_language_codes_is_a_header_under_any_suffix(tmp_path, name):
    import gzip

    text = "en\tzh\tsource\n" + "".join(f"{e}\t{z}\tx\n" for e, z in zip(EN, ZH))
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    corpus = prepare_corpus(config(tmp_path, path=str(path)))
    assert all_pairs(corpus) == set(zip(EN, ZH))


@pytest.mark.parametrize("header", [False, True])
def test_a_carriage_return_inside_a_crlf_tab_separated_line_keeps_its_pair_whole(tmp_path, header):
    """Lines end at "\\n" as data=parallel's do (a CRLF's "\\r" stripped): a lone "\\r" inside
    a target neither cuts the pair nor makes the attribution column a target."""
    targets = [*ZH[:7], "part one\rpart two", *ZH[8:]]
    rows = [f"{e}\t{z}\t{ATTRIBUTION}\r\n" for e, z in zip(EN, targets)]
    path = tmp_path / "cmn.txt"
    path.write_bytes(("en\tzh\tnote\r\n" * header + "".join(rows)).encode())
    corpus = prepare_corpus(config(tmp_path, path=str(path)))
    assert corpus.report["cleaning"]["pairs"] == 40
    read = dict(all_pairs(corpus))
    assert set(read) == set(EN) and not any(target.endswith("\r") or target == ATTRIBUTION for target in read.values())
    assert read[EN[7]].startswith("part one") and read[EN[7]].endswith("part two")
    assert {read[e] for e in EN if e != EN[7]} == set(ZH) - {ZH[7]}


@pytest.mark.parametrize("name", ["pairs.dat", "pairs.tsv"])
def test_a_headerless_file_under_any_suffix_and_a_huge_first_field_load(tmp_path, name):
    """A first field past csv's 128 KB field limit (in the header sniffing) is data like any
    other: read, then dropped by cleaning as too long; a .dat suffix reads as tab-separated."""
    huge = "x" * 200_000
    path = tmp_path / name
    path.write_text(f"{huge}\tzu lang\n" + "".join(f"{e}\t{z}\n" for e, z in zip(EN, ZH)), encoding="utf-8")
    corpus = prepare_corpus(config(tmp_path, path=str(path)))
    assert all_pairs(corpus) == set(zip(EN, ZH)) and corpus.report["cleaning"]["dropped"]["too_long"] == 1


def test_a_txt_file_of_one_sentence_per_line_says_what_was_expected(tmp_path):
    path = tmp_path / "english.txt"
    path.write_text("".join(e + "\n" for e in EN))
    with pytest.raises(ConfigError) as error:
        prepare_corpus(config(tmp_path, path=str(path)))
    message = str(error.value)
    assert message.startswith("data.path: ") and message.count("data.path:") == 1
    assert "not tab-separated" in message and "data=parallel" in message and "no suffix" not in message


# ---- folders of plain-text files ------------------------------------------------------------
def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def opennmt(tmp_path) -> Path:
    """OpenNMT-py's data/ folder as it comes: src-/tgt- train and val, a test side with no target."""
    root = tmp_path / "data"
    root.mkdir()
    write(root / "src-train.txt", EN[:30])
    write(root / "tgt-train.txt", DE[:30])
    write(root / "src-val.txt", EN[30:35])
    write(root / "tgt-val.txt", DE[30:35])
    write(root / "src-test.txt", EN[35:])
    return root


def test_opennmt_src_and_tgt_files_are_the_two_languages(opennmt, tmp_path):
    assert available_splits(opennmt, "en", "de") == ["train", "val"]
    assert half_splits(opennmt, "en", "de") == {}  # src-test.txt alone: sources to translate, no split
    cfg = config(tmp_path, name="parallel", root=str(opennmt), tgt_lang="de")
    corpus = prepare_corpus(cfg)
    assert pairs(corpus.splits["valid"]) == set(zip(EN[30:35], DE[30:35]))  # val is the validation split
    assert corpus.report["splits"]["test"]["from"] == "held out of training"
    assert pairs(corpus.splits["train"]) | pairs(corpus.splits["test"]) == set(zip(EN[:30], DE[:30]))
    # the other direction reads the same files the other way round
    assert available_splits(opennmt, "de", "en") == ["train", "val"]
    sources, references, _ = load_split(DataConfig(**(cfg.__dict__ | {"src_lang": "de", "tgt_lang": "en"})), "val")
    assert sources == EN[30:35] and references == DE[30:35]  # src- is always data.src_lang


def test_the_cache_follows_opennmt_files(opennmt, tmp_path):
    cfg = config(tmp_path, name="parallel", root=str(opennmt), tgt_lang="de")
    first = prepare_corpus(cfg).key
    assert {p.name for p in split_paths(opennmt, "en", "de", "train")} == {"src-train.txt", "tgt-train.txt"}
    write(opennmt / "tgt-train.txt", [d + " !" for d in DE[:30]])
    assert prepare_corpus(cfg).key != first


@pytest.mark.parametrize("names", [("en.txt", "de.txt"), ("europarl.en", "europarl.de")])
def test_one_file_per_language_and_no_splits_is_the_training_split(tmp_path, names):
    root = tmp_path / "corpus"
    root.mkdir()
    write(root / names[0], EN)
    write(root / names[1], DE)
    assert available_splits(root, "en", "de") == ["train"]
    corpus = prepare_corpus(config(tmp_path, name="parallel", root=str(root), tgt_lang="de"))
    assert {split["from"] for split in corpus.report["splits"].values()} == {"train", "held out of training"}
    assert all_pairs(corpus) == set(zip(EN, DE))


def test_a_lone_test_split_stays_a_test_split(tmp_path):
    root = tmp_path / "eval"
    root.mkdir()
    write(root / "test.en", EN[:3])
    write(root / "test.de", DE[:3])
    assert available_splits(root, "en", "de") == ["test"]  # evaluate.py --data-root on test files only
    assert set(corpus_files(root)) == {("test", "en"), ("test", "de")}


def test_a_folder_without_corpus_files_lists_the_layouts_under_data_root(tmp_path):
    root = tmp_path / "junk"
    root.mkdir()
    (root / "README.md").write_text("hello")
    with pytest.raises(ConfigError) as error:
        prepare_corpus(config(tmp_path, name="parallel", root=str(root), tgt_lang="de"))
    message = str(error.value)
    assert message.startswith("data.root: no corpus files for en-de") and "README.md" in message
    assert "src-{split}.txt" in message and "{split}.{lang}" in message and message.count("data.root") == 1


def test_languages_absent_from_an_opennmt_folder_cannot_be(opennmt, tmp_path):
    # src-/tgt- files take the configured languages: the folder never lacks them
    assert available_splits(opennmt, "fr", "it") == ["train", "val"]


# ---- bad files: one ConfigError naming file and line ---------------------------------------
@pytest.mark.parametrize("value", [123, 1.5, True, ["a"], {"a": "b"}])
def test_a_json_value_that_is_not_text_names_its_line(tmp_path, value):
    path = tmp_path / "train.jsonl"
    rows = [{"en": e, "zh": z} for e, z in zip(EN, ZH)]
    rows[6]["en"] = value
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^data\.path: {path}, line 7: en is .*not text"):
        prepare_corpus(config(tmp_path, path=str(path)))


def test_a_nested_translation_value_that_is_not_text_names_its_line(tmp_path):
    path = tmp_path / "train.jsonl"
    rows = [{"translation": {"en": e, "zh": z}} for e, z in zip(EN, ZH)]
    rows[2]["translation"]["zh"] = 7
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^data\.path: {path}, line 3: translation\.zh is 7 \(int\)"):
        prepare_corpus(config(tmp_path, path=str(path)))


def _jsonl(rows: list[str]) -> bytes:
    return b"".join(row + b"\n" for row in rows)


GOOD = [json.dumps({"en": e, "zh": z}, ensure_ascii=False).encode() for e, z in zip(EN, ZH)]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("train.jsonl", _jsonl([*GOOD[:4], b'{"en": "a", "zh": ', *GOOD[4:]]), r"train\.jsonl, line 5: not valid JSON"),
        (
            "train.jsonl",
            _jsonl([*GOOD[:2], b'{"en": "a\xff", "zh": "b"}', *GOOD[2:]]),
            r"train\.jsonl, line 3: not valid UTF-8",
        ),
        ("train.jsonl", b"", r"train\.jsonl is empty"),
        (
            "train.tsv",
            ("".join(f"{e}\t{z}\n" for e, z in zip(EN, ZH)) + "a\tb\tc\td\n").encode(),
            r"train\.tsv, line 41: 4 tab-separated fields where the first row has 2",
        ),
    ],
)
def test_a_bad_file_is_one_error_naming_file_and_line(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as error:
        prepare_corpus(config(tmp_path, path=str(path)))
    message = str(error.value)
    assert message.startswith("data.path: ") and message.count("data.path:") == 1, message
    assert __import__("re").search(expected, message), message


@pytest.mark.parametrize("path", ["./typo.jsonl", "typo.tsv", "../corpora/typo", "~/typo.jsonl"])
def test_a_missing_local_path_says_no_such_file(tmp_path, path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^data\.path: no such file or folder: " + path.replace(".", r"\.")):
        prepare_corpus(config(tmp_path, path=path))

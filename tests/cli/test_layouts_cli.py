"""End to end: a Tatoeba-like English-Chinese file and an OpenNMT-like folder train with no
hand conversion, and a bad file is one ``error:`` line naming file and line."""

from __future__ import annotations

import json

import pytest
from helpers.scripts import assert_one_error_line

from minitrans.data.generated import generate_corpus

pytestmark = pytest.mark.slow  # every test here starts scripts/train.py

TINY_STEPS = ["trainer.max_steps=6", "trainer.eval_every=3", "data.num_valid=8", "data.num_test=8"]
ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org"


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return generate_corpus(num_train=150, num_valid=1, num_test=1, min_words=3, max_words=8, seed=5)["train"]


def chinese(sentence: str) -> str:
    """A stand-in Chinese side: one CJK character per letter, no spaces, a full stop."""
    return "".join(chr(0x4E00 + ord(c) % 500) for c in sentence if c.isalpha()) + "。"


def own_data(tiny_overrides, tmp_path, *args) -> list[str]:
    run = tmp_path / "run"
    return [*tiny_overrides, *TINY_STEPS, f"data.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={run}", *args]


def test_a_tatoeba_file_trains_as_is_and_is_scored_with_the_zh_tokenizer(tmp_path, pairs, tiny_overrides, run_train):
    path = tmp_path / "cmn.txt"  # English<TAB>Chinese<TAB>attribution, no header
    path.write_text("".join(f"{en}\t{chinese(en)}\t{ATTRIBUTION}\n" for en, _ in pairs), encoding="utf-8")
    args = own_data(tiny_overrides, tmp_path, "data=hf", f"data.path={path}", "data.src_lang=en", "data.tgt_lang=zh")
    result = run_train(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["data"]["cleaning"]["pairs"] == len(pairs)  # the first row is a pair, not a header
    assert summary["test"]["bleu_tokenize"] == "zh" and "tok:zh" in summary["test"]["bleu_signature"]
    assert summary["valid"]["bleu_tokenize"] == "zh"
    assert "column 1 is read as en and column 2 as zh, column 3 ignored" in (run / "train.log").read_text()


def test_an_opennmt_folder_trains_as_it_comes(tmp_path, pairs, tiny_overrides, run_train):
    root = tmp_path / "data"
    root.mkdir()
    train, val, test = pairs[:130], pairs[130:140], pairs[140:]
    for name, rows, side in [
        ("src-train.txt", train, 0),
        ("tgt-train.txt", train, 1),
        ("src-val.txt", val, 0),
        ("tgt-val.txt", val, 1),
        ("src-test.txt", test, 0),  # OpenNMT's test sources: no target side
    ]:
        (root / name).write_text("".join(pair[side] + "\n" for pair in rows), encoding="utf-8")
    args = own_data(
        tiny_overrides, tmp_path, "data=parallel", f"data.root={root}", "data.src_lang=en", "data.tgt_lang=de"
    )
    result = run_train(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    splits = json.loads((tmp_path / "run" / "summary.json").read_text())["data"]["splits"]
    assert splits["valid"] == {"pairs": 10, "from": "val", "sources_in_train": 0}  # its own split: counted, none seen
    assert splits["test"]["from"] == "held out of training"


@pytest.mark.parametrize(
    ("name", "content", "names"),
    [
        ("corpus.jsonl", '{"en": "a b", "de": "c d"}\n{"en": 123, "de": "x"}\n', ["data.path", "line 2", "123"]),
        ("corpus.tsv", "a b\tc d\na\tb\tc\n", ["data.path", "corpus.tsv, line 2", "tab"]),
        ("typo.jsonl", None, ["data.path", "no such file", "typo.jsonl"]),
    ],
)
def test_a_bad_file_is_one_error_line(tmp_path, tiny_overrides, run_train, name, content, names):
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    args = own_data(tiny_overrides, tmp_path, "data=hf", f"data.path={path}", "data.src_lang=en", "data.tgt_lang=de")
    last = assert_one_error_line(run_train(*args), *names)
    assert last.count("data.path:") == 1


def test_the_opennmt_folder_of_an_unprepared_run_says_what_was_expected(tmp_path, tiny_overrides, run_train):
    root = tmp_path / "data"
    root.mkdir()
    (root / "notes.csv").write_text("x\n")
    args = own_data(tiny_overrides, tmp_path, "data=parallel", f"data.root={root}")
    assert_one_error_line(run_train(*args), "data.root", "src-{split}.txt", "notes.csv")

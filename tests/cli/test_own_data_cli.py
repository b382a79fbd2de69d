"""scripts/train.py on one's own data, end to end: a folder of files and a JSON Lines file,
then evaluate.py on a held-out split; and each bad input is one ``error:`` line, exit 2,
with nothing half-written (no tokenizer, checkpoint or cache entry)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, script_env
from helpers.scripts import assert_one_error_line

from minitrans.data.generated import generate_corpus

pytestmark = pytest.mark.slow  # every test here starts scripts/train.py

TINY_STEPS = ["trainer.max_steps=6", "trainer.eval_every=3", "data.num_valid=8", "data.num_test=8"]


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return generate_corpus(num_train=150, num_valid=1, num_test=1, min_words=3, max_words=8, seed=5)["train"]


@pytest.fixture
def folder(tmp_path, pairs) -> Path:
    root = tmp_path / "en-de"
    root.mkdir()
    (root / "train.en").write_text("".join(en + "\n" for en, _ in pairs), encoding="utf-8")
    (root / "train.de.gz").write_bytes(gzip.compress("".join(de + "\n" for _, de in pairs).encode()))
    return root


def own_data(tiny_overrides, tmp_path, *args) -> list[str]:
    run = tmp_path / "run"
    return [*tiny_overrides, *TINY_STEPS, f"data.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={run}", *args]


def test_a_folder_of_files_trains_and_evaluates_on_its_held_out_test_split(folder, tmp_path, tiny_overrides, run_train):
    args = own_data(
        tiny_overrides, tmp_path, "data=parallel", f"data.root={folder}", "data.src_lang=en", "data.tgt_lang=de"
    )
    result = run_train(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    data = summary["data"]
    assert data["splits"]["valid"] == {"pairs": 8, "from": "held out of training", "sources_in_train": 0}
    held = data["held_out"]
    removed = held["repeats_removed_from_train"] + held["translations_removed_from_train"]
    assert data["splits"]["train"]["pairs"] == 150 - 16 - removed
    assert set(data["cleaning"]["dropped"]) == {"empty", "too_long", "length_ratio", "duplicate"}
    assert "held out of training by source sentence (seed 1234)" in (run / "train.log").read_text()
    assert summary["test"]["sentences"] == 8
    evaluated = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "evaluate.py"), str(run), "--split", "test", "--device", "cpu"],
        cwd=REPO,
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads((run / "eval" / "test.beam1.ratio1.5.tok13a.json").read_text())
    assert report["sentences"] == 8 and report["bleu"] == pytest.approx(summary["test"]["bleu"], abs=1e-6)


def test_a_json_lines_file_in_the_hub_layout_trains(tmp_path, pairs, tiny_overrides, run_train):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"translation": {"en": e, "de": d}}) + "\n" for e, d in pairs))
    args = own_data(tiny_overrides, tmp_path, "data=hf", f"data.path={path}", "data.src_lang=de", "data.tgt_lang=en")
    result = run_train(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["data"]["splits"]["validation"]["from"] == "held out of training"


def assert_nothing_written(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for name in ("tokenizer", "checkpoints", "summary.json"):
        assert not (run / name).exists(), name
    cache = tmp_path / "cache"
    for part in ("corpora", "ids", "spm"):
        assert not (cache / part).exists() or not any((cache / part).iterdir()), part


def test_a_hub_id_offline_says_to_pass_a_local_path(tmp_path, tiny_overrides):
    args = own_data(
        tiny_overrides,
        tmp_path,
        "data=hf",
        "data.path=wmt/wmt14",
        "data.subset=de-en",
        "data.src_lang=de",
        "data.tgt_lang=en",
    )
    env = script_env() | {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "train.py"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_error_line(result, "data.path", "wmt/wmt14", "local path")
    assert_nothing_written(tmp_path)


def _break(kind: str, folder: Path, tmp_path: Path) -> list[str]:
    """Damage the corpus one way; return the extra overrides."""
    langs = ["data.src_lang=en", "data.tgt_lang=de"]
    if kind == "missing folder":
        return [f"data.root={tmp_path / 'nowhere'}", *langs]
    if kind == "one language missing":
        (folder / "test.en").write_text("a\n")
    if kind == "line counts":
        (folder / "train.en").write_text("one line\n")
    if kind == "invalid utf-8":
        (folder / "train.en").write_bytes(b"ok\n\xc3\x28 broken\n")
    if kind == "emptied by cleaning":
        return [f"data.root={folder}", *langs, "data.clean.max_chars=3"]
    if kind == "same language":
        return [f"data.root={folder}", "data.src_lang=en", "data.tgt_lang=en"]
    if kind == "field missing":
        path = tmp_path / "flat.jsonl"
        path.write_text(json.dumps({"english": "a", "german": "b"}) + "\n")
        return ["data=hf", f"data.path={path}", *langs, "data.src_field=en_text", "data.tgt_field=german"]
    return [f"data.root={folder}", *langs]


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("missing folder", ["data.root", "nowhere"]),
        ("one language missing", ["data.root", "test.en", "no test.de"]),
        ("line counts", ["train.en has 1 lines", "train.de.gz has 150"]),
        ("invalid utf-8", ["train.en, line 2", "UTF-8"]),
        ("emptied by cleaning", ["data.clean", "data.clean.max_chars=3"]),
        ("same language", ["data.tgt_lang", "'en'"]),
        ("field missing", ["data.src_field", "en_text", "english, german"]),
    ],
)
def test_each_bad_input_is_one_error_line_and_writes_nothing(kind, names, folder, tmp_path, tiny_overrides, run_train):
    extra = _break(kind, folder, tmp_path)
    data = [] if "data=hf" in extra else ["data=parallel"]
    result = run_train(*own_data(tiny_overrides, tmp_path, *data, *extra))
    assert_one_error_line(result, *names)
    assert_nothing_written(tmp_path)

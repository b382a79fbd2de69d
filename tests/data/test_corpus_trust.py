"""A corpus is never silently the wrong one: caches keyed by content in an unambiguous
encoding, stale or damaged preparations rebuilt, partial folders of killed runs cleaned, and
the training data a checkpoint records compared with the data it is evaluated or resumed on."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import datasets
import pytest
from helpers import REPO

from minitrans.core.config import DataConfig
from minitrans.data.digest import pairs_digest
from minitrans.data.tokenize import tokenize_corpus
from minitrans.data.tokenizer import Tokenizer

EN = [f"the dog number {i} runs home ." for i in range(60)]
FR = [f"le chien numéro {i} rentre à la maison ." for i in range(60)]


def write(path: Path, lines: list[str]) -> None:
    path.write_bytes("".join(line + "\n" for line in lines).encode())


def config(tmp_path, **values) -> DataConfig:
    base = {"name": "parallel", "src_lang": "en", "tgt_lang": "fr", "num_valid": 5, "num_test": 5}
    return DataConfig(**(base | {"cache_dir": str(tmp_path / "cache")} | values))


def pairs(src: list[str], tgt: list[str]) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"src": src, "tgt": tgt})


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.train(EN, FR, vocab_size=300)


# ---- the tokenised-split cache key -----------------------------------------------------------
@pytest.mark.parametrize(
    "first, second",
    [
        ((["big dog\tred cat"], ["hund"]), (["big dog"], ["red cat\thund"])),  # a tab moved across the pair
        ((["a"], ["b\nc\td"]), (["a", "c"], ["b", "d"])),  # one row with a newline, or two rows
    ],
)
def test_pairs_a_separator_would_join_get_their_own_cached_ids(first, second, tokenizer, tmp_path):
    assert pairs_digest(pairs(*first)) != pairs_digest(pairs(*second))
    tokenize_corpus(datasets.DatasetDict({"valid": pairs(*first)}), tokenizer, tmp_path)
    again = tokenize_corpus(datasets.DatasetDict({"valid": pairs(*second)}), tokenizer, tmp_path)["valid"]
    assert again["src_ids"] == tokenizer.encode_src(second[0])
    assert again["tgt_ids"] == tokenizer.encode_tgt(second[1])


def test_the_pairs_digest_follows_content_not_chunking():
    import pyarrow as pa

    table = pa.table({"src": EN[:10], "tgt": FR[:10]})
    chunked = pa.concat_tables([table.slice(0, 3), table.slice(3)])
    assert pairs_digest(chunked) == pairs_digest(table) == pairs_digest(pairs(EN[:10], FR[:10]))
    assert pairs_digest(table.slice(1)) != pairs_digest(table)
    assert pairs_digest(pairs(EN[:10], FR[:9] + [FR[9] + "."])) != pairs_digest(table)


# ---- byte-order marks ------------------------------------------------------------------------
def test_a_byte_order_mark_leaves_the_first_line_of_validation_and_test_files(tmp_path):
    from minitrans.data.corpus import load_split, prepare_corpus

    root = tmp_path / "bom"
    root.mkdir()
    write(root / "train.en", EN[:40])
    write(root / "train.fr", FR[:40])
    for split, lines in (("dev", slice(40, 50)), ("test", slice(50, 60))):
        write(root / f"{split}.en", ["\ufeff" + EN[lines][0], *EN[lines][1:]])  # as Windows editors save
        write(root / f"{split}.fr", ["\ufeff" + FR[lines][0], *FR[lines][1:]])
    cfg = config(tmp_path, root=str(root))
    corpus = prepare_corpus(cfg)
    assert corpus.splits["valid"][0] == {"src": EN[40], "tgt": FR[40]}
    assert corpus.splits["test"][0] == {"src": EN[50], "tgt": FR[50]}
    sources, references, _ = load_split(cfg, "dev")
    assert (sources[0], references[0]) == (EN[40], FR[40]) and sources[1:] == EN[41:50]


# ---- one clear error, at the start ---------------------------------------------------------------
@pytest.mark.parametrize(
    "values, message",
    [
        ({"valid_split": "train"}, r"^data\.valid_split: 'train' is the training split"),
        ({"test_splits": ["test", "train"]}, r"^data\.test_splits: 'train' is the training split"),
        ({"valid_split": "test"}, r"^data\.valid_split: 'test' is also in data\.test_splits"),
        ({"test_splits": ["test", "test"]}, r"^data\.test_splits: 'test' named twice"),
    ],
)
def test_validating_or_testing_on_the_training_split_is_refused_at_once(values, message, tmp_path):
    from minitrans.core.checks import ConfigError
    from minitrans.data.corpus import prepare_corpus

    with pytest.raises(ConfigError, match=message):
        prepare_corpus(DataConfig(cache_dir=str(tmp_path), **values))
    assert not (tmp_path / "corpora").exists()  # refused before anything was generated


def test_lengths_the_grammar_cannot_give_are_a_config_error(tmp_path, monkeypatch):
    from minitrans.core.checks import ConfigError
    from minitrans.data.corpus import prepare_corpus

    def generate_corpus(**sizes):  # what the grammar says after its attempts at 1000-word sentences
        raise RuntimeError(f"could only generate 0 of {sizes['num_test']} distinct pairs")

    monkeypatch.setattr("minitrans.data.generated.generate_corpus", generate_corpus)
    cfg = DataConfig(cache_dir=str(tmp_path), min_words=1000, max_words=1000)
    with pytest.raises(ConfigError, match=r"^data\.min_words: could only generate 0 of 1000 .* 1000 to 1000 words"):
        prepare_corpus(cfg)


@pytest.mark.slow
def test_lengths_the_grammar_cannot_give_are_a_config_error_without_stubs(tmp_path):
    from minitrans.core.checks import ConfigError
    from minitrans.data.corpus import prepare_corpus

    cfg = DataConfig(cache_dir=str(tmp_path), min_words=1000, max_words=1000, num_train=2, num_valid=1, num_test=1)
    with pytest.raises(ConfigError, match=r"^data\.min_words: .*lower data\.min_words"):
        prepare_corpus(cfg)


# ---- folders left by killed runs -------------------------------------------------------------------
NO_SUCH_PID = 2**22 + 4321  # above Linux's largest pid_max


def partial_folder(parent: Path, name: str, mark: str | None) -> Path:
    path = parent / name
    (path / "splits").mkdir(parents=True)
    (path / "splits" / "data-00000-of-00001.arrow").write_bytes(b"half of it")
    if mark is not None:
        (path / ".minitrans-partial").write_text(mark)
    return path


@pytest.mark.skipif(os.name != "posix", reason="a dead writer is told by its pid on POSIX only")
def test_partial_folders_of_killed_runs_are_removed_and_nothing_else(tmp_path):
    import socket

    from minitrans.data.corpus import prepare_corpus

    corpora = tmp_path / "cache" / "corpora"
    host = socket.gethostname()
    dead = partial_folder(corpora, ".0123456789abcdef.k1ll3d", f"{host} {NO_SUCH_PID}")
    alive = partial_folder(corpora, ".0123456789abcdef.wr1t1ng", f"{host} {os.getppid()}")  # still saving
    elsewhere = partial_folder(corpora, ".0123456789abcdef.0th3r", f"another-machine {NO_SUCH_PID}")
    unmarked = partial_folder(corpora, ".not-ours.folder", None)
    old = partial_folder(corpora, ".0123456789abcdef.01d", f"another-machine {NO_SUCH_PID}")
    os.utime(old / ".minitrans-partial", (0, 0))
    root = tmp_path / "files"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    corpus = prepare_corpus(config(tmp_path, root=str(root)))
    assert not dead.exists() and not old.exists()
    assert alive.exists() and elsewhere.exists() and unmarked.exists()
    finished = corpora / corpus.key
    assert finished.is_dir() and not (finished / ".minitrans-partial").exists()


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_corpus_save_killed_by_sigkill_is_cleaned_by_the_next_run(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from minitrans.data.corpus import prepare_corpus

    corpora = tmp_path / "cache" / "corpora"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from minitrans.data.token_ids import save_atomically\n"
        "def write(tmp):\n"
        "    (tmp / 'splits').mkdir(); print('writing', flush=True); time.sleep(60)\n"
        "save_atomically(Path(sys.argv[1]) / 'abcdef0123456789', write)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(corpora)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = list(corpora.glob(".abcdef0123456789.*"))
    assert len(left) == 1
    time.sleep(0.1)
    root = tmp_path / "files"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    prepare_corpus(config(tmp_path, root=str(root)))
    assert not left[0].exists()


# ---- stale preparations ----------------------------------------------------------------------------
def edit_in_place(path: Path, old: str, new: str) -> None:
    """Change the file's text, then give it back its modification time (as rsync -t or a restore would)."""
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode()))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_an_edit_that_keeps_size_and_time_of_parallel_files_is_seen(tmp_path):
    from minitrans.data.corpus import prepare_corpus

    root = tmp_path / "files"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    cfg = config(tmp_path, root=str(root))
    first = prepare_corpus(cfg)
    size = (root / "train.en").stat().st_size
    edit_in_place(root / "train.en", "the dog", "one cat")  # same length
    assert (root / "train.en").stat().st_size == size
    again = prepare_corpus(cfg)
    assert again.key != first.key
    sources = [text for name in ("train", "valid", "test") for text in again.splits[name]["src"]]
    assert sources and all(text.startswith("one cat") for text in sources)


def test_an_edit_that_keeps_the_time_of_a_json_lines_file_is_seen(tmp_path):
    import json

    from minitrans.data.corpus import prepare_corpus

    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"en": e, "fr": f}) + "\n" for e, f in zip(EN, FR)))
    cfg = config(tmp_path, name="hf", path=str(path))
    first = prepare_corpus(cfg)
    edit_in_place(path, "the dog", "a big cat")  # longer: only the time is kept
    again = prepare_corpus(cfg)
    assert again.key != first.key
    assert all(text.startswith("a big cat") for text in again.splits["train"]["src"])


def change_while_loading(monkeypatch, owner, name: str, path: Path) -> None:
    """Make ``owner.name`` (the loader) replace the file's "the dog" before it reads it."""
    real = getattr(owner, name)

    def load(*args, **kwargs):
        edit_in_place(path, "the dog", "one cat")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, load)


@pytest.mark.parametrize("layout", ["parallel", "hf"])
def test_a_file_changed_while_it_is_read_never_poisons_the_corpus_cache(layout, tmp_path, monkeypatch):
    """Digested, then changed before the loader reads it: read again, the pairs cached only under
    the key of what was read (the changed files), so a run on the original files trains on their
    pairs; a file that changes at every read is one error line."""
    import json
    import shutil

    import minitrans.data.sources
    from minitrans.core.checks import ConfigError
    from minitrans.data.corpus import prepare_corpus
    from minitrans.data.sources import ParallelSource

    original = tmp_path / "original"
    original.mkdir()
    if layout == "parallel":
        (root := tmp_path / "files").mkdir()
        write(root / "train.en", EN)
        write(root / "train.fr", FR)
        cfg, changing = config(tmp_path, root=str(root)), root / "train.en"
        change_while_loading(monkeypatch, ParallelSource, "load", changing)
    else:
        changing = tmp_path / "corpus.jsonl"
        changing.write_text("".join(json.dumps({"en": e, "fr": f}) + "\n" for e, f in zip(EN, FR)))
        cfg = config(tmp_path, name="hf", path=str(changing))
        change_while_loading(monkeypatch, minitrans.data.sources, "load_hf", changing)  # where it is called
    shutil.copy2(changing, original / changing.name)
    changed = prepare_corpus(cfg)
    assert all(text.startswith("one cat") for name in ("train", "valid") for text in changed.splits[name]["src"])
    monkeypatch.undo()
    shutil.copy2(original / changing.name, changing)  # the original bytes and time again
    corpus = prepare_corpus(cfg)
    sources = [text for name in ("train", "valid", "test") for text in corpus.splits[name]["src"]]
    assert sorted(sources) == sorted(EN) and corpus.key != changed.key

    def grow(*args, **kwargs):  # a file still being written: it changes at every read
        changing.write_text(changing.read_text().replace("home", "home again", 1))
        return real_load(*args, **kwargs)

    owner, name = (ParallelSource, "load") if layout == "parallel" else (minitrans.data.sources, "load_hf")
    real_load = getattr(owner, name)
    monkeypatch.setattr(owner, name, grow)
    with pytest.raises(ConfigError, match=r"^data\.(root|path): .* changed each time it was read \(3 reads\)"):
        prepare_corpus(replace(cfg, num_valid=6))  # not cached yet


# ---- the record of the pairs a run had ---------------------------------------------------------------
def test_a_grown_corpus_draws_other_held_out_pairs_and_the_record_says_so(tmp_path):
    from minitrans.data.corpus import load_split, prepare_corpus
    from minitrans.inference.coverage import TrainingRecord, check_recorded_split

    root = tmp_path / "only-train"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    cfg = config(tmp_path, root=str(root))
    corpus = prepare_corpus(cfg)
    record = TrainingRecord.from_sentences(corpus.splits["train"]["src"], "en", "fr", "parallel")
    state = {**record.to_state(), "data_digests": corpus.report["digests"]}
    record = TrainingRecord.from_state(state)  # as a checkpoint holds it
    for split in ("train", "valid", "test"):
        check_recorded_split(record, *load_split(cfg, split)[2:], *load_split(cfg, split)[:2])
    write(root / "train.en", EN + [f"a cat number {i} sleeps ." for i in range(100)])  # 100 more pairs
    write(root / "train.fr", FR + [f"un chat numéro {i} dort ." for i in range(100)])
    sources, references, name = load_split(cfg, "test")
    assert set(zip(sources, references)) != set(zip(corpus.splits["test"]["src"], corpus.splits["test"]["tgt"]))
    with pytest.raises(ValueError, match=r"the 'test' pairs \(5\) are not those this run had"):
        check_recorded_split(record, name, sources, references)


@pytest.fixture
def trained_on_a_folder(tmp_path, tiny_config):
    """A tiny run on a folder holding only training files (validation and test held out)."""
    from minitrans.data.generated import generate_corpus
    from minitrans.training.trainer import train

    generated = generate_corpus(num_train=260, num_valid=1, num_test=1, min_words=3, max_words=8, seed=3)["train"]
    root = tmp_path / "de-en"
    root.mkdir()
    write(root / "train.en", [en for en, _ in generated[:160]])
    write(root / "train.de", [de for _, de in generated[:160]])
    overrides = ["data=parallel", f"data.root={root}", "data.src_lang=de", "data.tgt_lang=en", "data.num_valid=8"]
    overrides += ["data.num_test=8", "trainer.eval_every=1000"]
    run = tmp_path / "run"
    train(tiny_config(*overrides, "trainer.max_steps=2"), run)

    def replace_files(count: int) -> None:  # the user's corpus, grown or replaced
        write(root / "train.en", [en for en, _ in generated[-count:]])
        write(root / "train.de", [de for _, de in generated[-count:]])

    return run, overrides, replace_files


def test_evaluate_refuses_a_test_split_drawn_from_a_changed_corpus(trained_on_a_folder, capsys):
    import importlib.util

    run, _, replace_files = trained_on_a_folder
    spec = importlib.util.spec_from_file_location("evaluate_script", REPO / "scripts/evaluate.py")
    evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluate)
    assert evaluate.main([str(run), "--split", "test", "--device", "cpu", "--no-progress"]) == 0
    written = {path.name: path.read_bytes() for path in (run / "eval").iterdir()}
    capsys.readouterr()
    replace_files(260)  # the same 160 pairs and 100 more
    assert evaluate.main([str(run), "--split", "test", "--device", "cpu", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the 'test' pairs (8) are not those this run had")
    assert {path.name: path.read_bytes() for path in (run / "eval").iterdir()} == written  # nothing overwritten


def test_resuming_on_replaced_training_files_is_refused(trained_on_a_folder, tiny_config):
    from minitrans.core.checks import ConfigError
    from minitrans.training.trainer import Trainer

    run, overrides, replace_files = trained_on_a_folder
    Trainer(tiny_config(*overrides, "trainer.max_steps=4"), run)  # the same files: resumes
    replace_files(140)
    with pytest.raises(ConfigError, match=r"^data: the corpus changed since the checkpoint was written .*resume=false"):
        Trainer(tiny_config(*overrides, "trainer.max_steps=4"), run)


# ---- damaged caches of the right size ----------------------------------------------------------------
def damage_in_place(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data and len(old) == len(new)
    path.write_bytes(data.replace(old, new))


@pytest.fixture
def prepared(tmp_path):
    from minitrans.data.corpus import prepare_corpus

    root = tmp_path / "files"
    root.mkdir()
    write(root / "train.en", EN)
    write(root / "train.fr", FR)
    cfg = config(tmp_path, root=str(root))
    return cfg, prepare_corpus(cfg)


def test_a_prepared_corpus_damaged_in_place_is_rebuilt(prepared, tmp_path):
    from minitrans.data.corpus import prepare_corpus

    cfg, corpus = prepared
    expected = list(zip(corpus.splits["train"]["src"], corpus.splits["train"]["tgt"]))
    for path in (tmp_path / "cache" / "corpora" / corpus.key).rglob("*.arrow"):
        damage_in_place(path, b"dog", b"cat")  # same size, valid text: loads without complaint
    with pytest.warns(UserWarning, match="rebuilding the damaged cache"):
        again = prepare_corpus(cfg)
    assert list(zip(again.splits["train"]["src"], again.splits["train"]["tgt"])) == expected


def test_token_ids_damaged_in_place_are_rebuilt(prepared, tokenizer, tmp_path):
    import numpy as np

    from minitrans.data.tokenize import tokenize_pairs

    cfg, corpus = prepared
    src, tgt = tokenize_pairs(corpus.splits["train"], tokenizer, cfg.cache_dir, corpus.key)
    expected = [row.tolist() for row in src], [row.tolist() for row in tgt]
    (folder,) = (tmp_path / "cache" / "ids").iterdir()
    offsets = np.load(folder / "src.offsets.npy")
    np.save(folder / "src.offsets.npy", offsets[::-1].copy())  # same size, same last-but-reversed values
    flat = np.load(folder / "tgt.flat.npy")
    np.save(folder / "tgt.flat.npy", flat + 100_000)  # same size, ids no vocabulary has
    for _ in range(2):  # the offsets, then the ids: each found and rebuilt
        with pytest.warns(UserWarning, match="rebuilding the damaged cache"):
            src, tgt = tokenize_pairs(corpus.splits["train"], tokenizer, cfg.cache_dir, corpus.key)
        assert ([row.tolist() for row in src], [row.tolist() for row in tgt]) == expected
        np.save(folder / "tgt.flat.npy", np.load(folder / "tgt.flat.npy") + 100_000)


def test_a_tokenised_split_damaged_in_place_is_rebuilt(prepared, tokenizer, tmp_path):
    cfg, corpus = prepared
    splits = datasets.DatasetDict({"valid": corpus.splits["valid"]})
    expected = [list(ids) for ids in tokenize_corpus(splits, tokenizer, cfg.cache_dir)["valid"]["src_ids"]]
    (path,) = (tmp_path / "cache" / "tokenized").glob("*.arrow")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64  # same size: ids or offsets garbled
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="rebuilding the damaged cache"):
        again = tokenize_corpus(splits, tokenizer, cfg.cache_dir)["valid"]
    assert [list(ids) for ids in again["src_ids"]] == expected


# ---- runs read elsewhere ----------------------------------------------------------------------------------
def test_a_relative_data_root_read_from_another_folder_names_data_root(tmp_path, monkeypatch):
    from dataclasses import asdict

    from minitrans.data.corpus import load_run_split

    (tmp_path / "corpora" / "en-fr").mkdir(parents=True)
    write(tmp_path / "corpora" / "en-fr" / "train.en", EN)
    write(tmp_path / "corpora" / "en-fr" / "train.fr", FR)
    data = config(tmp_path, root="corpora/en-fr")  # as trained from tmp_path
    run_config = {"data": asdict(data)}
    monkeypatch.chdir(tmp_path)
    assert len(load_run_split(run_config, "test")[0]) == 5
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(
        ValueError, match=r"data\.root=corpora/en-fr is relative: read from \S+elsewhere\).*--data-root"
    ):
        load_run_split(run_config, "test")
    assert len(load_run_split(run_config, "test", tmp_path / "corpora" / "en-fr")[0]) == 5


def test_a_huge_generated_corpus_is_not_regenerated_to_name_unseen_words(monkeypatch):
    from minitrans.inference.coverage import rebuild_record

    monkeypatch.setattr("minitrans.data.corpus.load_split", lambda *a, **k: pytest.fail("regenerated"))
    from minitrans.core.config import DataConfig

    data = DataConfig(name="generated", num_train=10_000_000, src_lang="en", tgt_lang="de")
    assert rebuild_record(data) is None  # coverage unknown, said once, instead of minutes of generation


# ---- a fair validation sample ---------------------------------------------------------------------------
def sorted_by_length(count: int) -> tuple[list[str], list[str]]:
    """A corpus sorted by length, as Tatoeba's files are: the first lines are the shortest."""
    en = [" ".join(["dog"] * (1 + i // 4)) + f" {i}" for i in range(count)]
    fr = [" ".join(["chien"] * (1 + i // 4)) + f" {i}" for i in range(count)]
    return en, fr


def test_held_out_pairs_are_a_seeded_random_sample_in_random_order(tmp_path):
    from minitrans.data.corpus import load_split, prepare_corpus

    en, fr = sorted_by_length(400)
    root = tmp_path / "sorted"
    root.mkdir()
    write(root / "train.en", en)
    write(root / "train.fr", fr)
    cfg = config(tmp_path, root=str(root), num_valid=100, num_test=50)
    corpus = prepare_corpus(cfg)
    valid = [en.index(text) for text in corpus.splits["valid"]["src"]]
    assert valid != sorted(valid)  # not the corpus' order: any first N is a fair sample
    first = valid[:20]
    assert abs(sum(first) / len(first) - 200) < 60  # around the corpus' middle, not its shortest lines
    assert "valid" in corpus.report["in_random_order"] and "test" in corpus.report["in_random_order"]
    again = prepare_corpus(replace(cfg, cache_dir=str(tmp_path / "other")))
    assert list(again.splits["valid"]["src"]) == list(corpus.splits["valid"]["src"])  # seeded
    assert load_split(cfg, "valid")[0] == list(corpus.splits["valid"]["src"])  # evaluate.py draws them again


def test_a_validation_file_sorted_by_length_is_sampled_at_random_and_says_so(tokenizer):
    from minitrans.training.run_data import validation_sample

    en, fr = sorted_by_length(400)
    ids = datasets.Dataset.from_dict({"src": en, "tgt": fr, "src_ids": [[1] * (1 + i // 4) for i in range(400)]})
    valid, sample = validation_sample(ids, 40, seed=7, is_random_order=False)
    positions = [en.index(text) for text in valid["src"]]
    assert sorted(positions) == list(range(400)) and positions != sorted(positions)
    assert sample["pairs"] == 40 and sample["of"] == 400 and "seeded random sample (seed 7)" in sample["drawn"]
    assert sample["split_mean_src_subwords"] == 50.5
    assert abs(sample["mean_src_subwords"] - 50.5) < 15  # the first 40 of the file would average 5.5
    assert list(validation_sample(ids, 40, seed=7, is_random_order=False)[0]["src"]) == list(valid["src"])  # seeded
    kept, sample = validation_sample(ids, 40, seed=7, is_random_order=True)  # held out or drawn: as it is
    assert list(kept["src"]) == en and sample["mean_src_subwords"] == 5.5

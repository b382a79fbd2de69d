"""Multi30k: the prepare script (local copy, download, failures) and the loader.

Everything runs offline on tiny corpora the tests write themselves; the test
on the real corpus uses the read-only local copy and skips when it is absent.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
from pathlib import Path
from urllib.error import HTTPError, URLError

import pytest
from helpers import REPO

from minitrans.data.multi30k import available_splits, load_multi30k, read_lines

PREPARE_PATH = REPO / "data" / "multi30k" / "prepare.py"
REAL_SOURCE = Path(os.environ.get("MINITRANS_MULTI30K_SOURCE") or REPO.parent / "shared" / "data" / "multi30k")

TINY = {
    "train": {
        "en": ["A dog runs.", "Two men  talk .", "A child plays."],
        "de": ["Ein Hund rennt.", "Zwei Männer  reden .", "Ein Kind spielt."],
    },
    "val": {"en": ["A cat sleeps."], "de": ["Eine Katze schläft."]},
    "test_2016_flickr": {"en": ["A bird sings.", "Rain."], "de": ["Ein Vogel singt.", "Regen."]},
}


@pytest.fixture(scope="module")
def prepare():
    spec = importlib.util.spec_from_file_location("multi30k_prepare", PREPARE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_text(path: Path, lines: list[str], compress: bool) -> None:
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)


def stored_lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")[:-1]


@pytest.fixture
def source(tmp_path) -> Path:
    """A tiny raw folder: train and test gzipped, val uncompressed, no 2017/2018 tests."""
    folder = tmp_path / "raw"
    folder.mkdir()
    for split, by_lang in TINY.items():
        for lang, lines in by_lang.items():
            compress = split != "val"
            write_text(folder / f"{split}.{lang}{'.gz' if compress else ''}", lines, compress)
    return folder


def run_prepare(prepare, *args: str) -> int:
    return prepare.main([*args, "--langs", "en", "de", "--no-check-counts"])


# ---- prepare: from a local folder ----------------------------------------------------


def test_prepare_copies_and_compresses_a_local_folder(prepare, source, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_prepare(prepare, "--source", str(source), "--out", str(out)) == 0
    names = sorted(path.name for path in out.iterdir())
    assert names == sorted(f"{split}.{lang}.gz" for split in TINY for lang in ("en", "de"))
    for split, by_lang in TINY.items():
        for lang, lines in by_lang.items():
            assert stored_lines(out / f"{split}.{lang}.gz") == lines  # val was plain, now gzipped
    assert "test_2017_flickr: not available, skipped" in capsys.readouterr().out


def test_prepare_twice_keeps_valid_files(prepare, source, tmp_path, capsys):
    out = tmp_path / "out"
    run_prepare(prepare, "--source", str(source), "--out", str(out))
    before = {path.name: path.stat().st_mtime_ns for path in out.iterdir()}
    capsys.readouterr()
    assert run_prepare(prepare, "--source", str(source), "--out", str(out)) == 0
    assert {path.name: path.stat().st_mtime_ns for path in out.iterdir()} == before
    assert "already present en de" in capsys.readouterr().out


def test_prepare_replaces_a_truncated_file(prepare, source, tmp_path):
    out = tmp_path / "out"
    run_prepare(prepare, "--source", str(source), "--out", str(out))
    broken = out / "train.de.gz"
    broken.write_bytes(broken.read_bytes()[:20])  # as if a copy had been cut short
    run_prepare(prepare, "--source", str(source), "--out", str(out))
    assert stored_lines(broken) == TINY["train"]["de"]
    assert not [path for path in out.iterdir() if path.name.startswith(".")]  # no temp files


def test_source_missing_train_fails_clearly(prepare, source, tmp_path, capsys):
    (source / "train.de.gz").unlink()
    with pytest.raises(SystemExit) as exit_info:
        run_prepare(prepare, "--source", str(source), "--out", str(tmp_path / "out"))
    assert exit_info.value.code != 0
    err = capsys.readouterr().err
    assert "train.de.gz" in err and "lacks required" in err
    assert "Traceback" not in err


def test_mismatched_line_counts_fail_and_store_nothing_of_that_split(prepare, source, tmp_path, capsys):
    write_text(source / "val.de", [*TINY["val"]["de"], "Noch eine Zeile."], compress=False)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        run_prepare(prepare, "--source", str(source), "--out", str(out))
    assert exit_info.value.code != 0
    assert "val: line counts differ across languages (en: 1, de: 2)" in capsys.readouterr().err
    assert not list(out.glob("val.*"))


def test_official_counts_are_checked_by_default(prepare, source, tmp_path, capsys):
    with pytest.raises(SystemExit):
        prepare.main(["--source", str(source), "--out", str(tmp_path / "out"), "--langs", "en"])
    err = capsys.readouterr().err
    assert "train: expected 29000 lines" in err and "--no-check-counts" in err


def test_invalid_utf8_is_reported_with_file_and_line(prepare, source, tmp_path, capsys):
    (source / "val.de").write_bytes(b"Eine Katze.\nGr\xfc\xdfe\n")
    with pytest.raises(SystemExit):
        run_prepare(prepare, "--source", str(source), "--out", str(tmp_path / "out"))
    assert "val.de.gz, line 2: not valid UTF-8" in capsys.readouterr().err


def test_a_gzip_bomb_is_refused_while_streaming_without_decompressing_it_whole(prepare, source, tmp_path, capsys):
    import tracemalloc

    bomb = gzip.compress(b"A dog runs.\n" * (3 * 2**20))  # 36 MiB of text in ~100 KiB
    tracemalloc.start()
    try:
        with pytest.raises(prepare.PrepareError, match=r"^bomb\.gz decompresses to more than 16 MiB; refused"):
            prepare.count_lines("bomb.gz", bomb, limit=16 * 2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # a few chunks, not the 36 MiB (nor even the 16 MiB limit)
    assert prepare.count_lines("ok.gz", gzip.compress(b"a\nb\n") + gzip.compress(b"c")) == 3  # multi-member
    (source / "train.de.gz").write_bytes(bomb)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(prepare, "MAX_TEXT_BYTES", 8 * 2**20)
    monkeypatch.setattr(prepare.count_lines, "__defaults__", (8 * 2**20,))
    try:
        with pytest.raises(SystemExit):
            run_prepare(prepare, "--source", str(source), "--out", str(tmp_path / "out"))
    finally:
        monkeypatch.undo()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "train.de" in err[0] and "more than 8 MiB; refused" in err[0]


# ---- prepare: download (the URL opener is replaced; no network) ------------------------


def test_download_stores_the_served_files(prepare, source, tmp_path, monkeypatch):
    requested = []

    def fake_urlopen(url, timeout):
        requested.append((url, timeout))
        name = url.rsplit("/", 1)[1]
        if not (source / name).exists() and not (source / name.removesuffix(".gz")).exists():
            raise HTTPError(url, 404, "Not Found", None, None)
        return io.BytesIO(prepare.read_source(source, *name.removesuffix(".gz").split(".")))

    monkeypatch.setattr(prepare, "urlopen", fake_urlopen)
    out = tmp_path / "out"
    assert run_prepare(prepare, "--out", str(out), "--timeout", "7") == 0
    for split, by_lang in TINY.items():
        for lang, lines in by_lang.items():
            assert stored_lines(out / f"{split}.{lang}.gz") == lines
    assert (f"{prepare.BASE_URL}/train.en.gz", 7.0) in requested
    assert all(url.startswith(prepare.BASE_URL) for url, _ in requested)


def test_offline_download_gives_one_clear_message(prepare, tmp_path, monkeypatch, capsys):
    def offline_urlopen(url, timeout):
        raise URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(prepare, "urlopen", offline_urlopen)
    with pytest.raises(SystemExit) as exit_info:
        run_prepare(prepare, "--out", str(tmp_path / "out"))
    assert exit_info.value.code != 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert "could not download" in lines[0] and "train.en.gz" in lines[0]
    assert "--source DIR" in lines[0]


def test_missing_required_file_upstream_fails_clearly(prepare, tmp_path, monkeypatch, capsys):
    def not_found(url, timeout):
        raise HTTPError(url, 404, "Not Found", None, None)

    monkeypatch.setattr(prepare, "urlopen", not_found)
    with pytest.raises(SystemExit):
        run_prepare(prepare, "--out", str(tmp_path / "out"))
    assert "required file(s) not available: train.en, train.de" in capsys.readouterr().err


# ---- prepare + load: the real corpus ---------------------------------------------------


def test_prepare_and_load_the_real_corpus(prepare, tmp_path):
    if not (REAL_SOURCE / "train.de.gz").is_file():
        pytest.skip(f"no local Multi30k copy at {REAL_SOURCE} (set MINITRANS_MULTI30K_SOURCE)")
    out = tmp_path / "out"
    present = prepare.prepare(out, ["de", "en"], source=REAL_SOURCE, log=lambda message: None)
    expected = {"train": 29000, "val": 1014, "test_2016_flickr": 1000}
    for split, count in expected.items():
        assert present[split] == {"de": count, "en": count}

    corpus = load_multi30k(out, "de", "en")
    assert {split: corpus[split].num_rows for split in expected} == expected
    assert corpus["val"][0] == {
        "src": "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen",
        "tgt": "A group of men are loading cotton onto a truck",
    }


# ---- loader ----------------------------------------------------------------------------


@pytest.fixture
def corpus_dir(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split in ("train", "val"):
        for lang in ("de", "en", "fr"):
            write_text(folder / f"{split}.{lang}.gz", [f"{split} {lang} {i}" for i in range(3)], True)
    write_text(folder / "mysplit.de", [" Ein  Satz ", "", "Zwei\tTabs"], compress=False)
    write_text(folder / "mysplit.en.gz", [" A  sentence ", "", "Two\ttabs"], compress=True)
    write_text(folder / "onlyfr.fr.gz", ["seul"], compress=True)
    (folder / "README.md").write_text("not a split\n")
    return folder


def test_loads_an_arbitrary_split_and_keeps_inner_text(corpus_dir):
    corpus = load_multi30k(corpus_dir, "de", "en", splits=["mysplit"])
    assert list(corpus) == ["mysplit"]
    assert corpus["mysplit"].column_names == ["src", "tgt"]
    assert corpus["mysplit"]["src"] == [" Ein  Satz ", "", "Zwei\tTabs"]
    assert corpus["mysplit"]["tgt"] == [" A  sentence ", "", "Two\ttabs"]


def test_all_available_splits_load_in_order(corpus_dir):
    assert available_splits(corpus_dir, "de", "en") == ["train", "val", "mysplit"]
    assert list(load_multi30k(corpus_dir)) == ["train", "val", "mysplit"]


def test_language_pair_selects_the_columns(corpus_dir):
    corpus = load_multi30k(corpus_dir, src_lang="en", tgt_lang="fr", splits="val")
    assert corpus["val"][1] == {"src": "val en 1", "tgt": "val fr 1"}
    assert available_splits(corpus_dir, "en", "fr") == ["train", "val"]


def test_missing_folder_says_how_to_prepare(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"prepare\.py --out .*--source DIR"):
        load_multi30k(tmp_path / "nowhere")


def test_missing_language_pair_says_how_to_prepare(corpus_dir):
    with pytest.raises(FileNotFoundError, match=r"de-cs .*languages present: de, en, fr.*prepare"):
        load_multi30k(corpus_dir, "de", "cs")


def test_missing_split_names_the_available_ones(corpus_dir):
    with pytest.raises(FileNotFoundError, match="test_2016_flickr.*available: train, val, mysplit"):
        load_multi30k(corpus_dir, splits=["train", "test_2016_flickr"])


def test_invalid_utf8_names_file_and_line(corpus_dir):
    (corpus_dir / "val.de.gz").write_bytes(gzip.compress(b"gut\nGr\xfc\xdfe\n"))
    with pytest.raises(ValueError, match=r"val\.de\.gz, line 2: not valid UTF-8"):
        load_multi30k(corpus_dir, splits=["val"])


def test_unequal_line_counts_are_rejected(corpus_dir):
    write_text(corpus_dir / "val.en.gz", ["only one"], compress=True)
    with pytest.raises(ValueError, match=r"val\.de\.gz has 3 lines but \S*val\.en\.gz has 1"):
        load_multi30k(corpus_dir, splits=["val"])


def test_read_lines_strips_only_the_line_ending(tmp_path):
    path = tmp_path / "x.en"
    path.write_bytes("  a b  \r\nc\u2028d\nlast without newline".encode("utf-8"))
    assert read_lines(path) == ["  a b  ", "c\u2028d", "last without newline"]

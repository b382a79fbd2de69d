"""No command writes over its own input, a checkpoint or a run's record: every output file a user
names is checked by one function (minitrans.core.protected) before anything is written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.checkpoints import SRC, build_checkpoint
from helpers.scripts import load_script

from minitrans.core.protected import output_problem


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder with the record a training run leaves."""
    folder = tmp_path_factory.mktemp("run")
    build_checkpoint(folder / "checkpoints" / "best.pt", max_len=32)
    (folder / "summary.json").write_text('{"test_bleu": 1.0}\n', encoding="utf-8")
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "config.yaml").write_text("seed: 0\n", encoding="utf-8")
    (folder / "tokenizer").mkdir()
    (folder / "tokenizer" / "src.model").write_bytes(b"sentencepiece")
    (folder / "events.out.tfevents.1.host.2.0").write_bytes(b"events")
    (folder / "train.log").write_text("step 1\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def script():
    return load_script("translate")


def contents(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def refused(script, argv: list[str], capsys) -> str:
    assert script.main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    return captured.err


def test_translate_refuses_to_write_over_a_checkpoint_or_the_runs_record(script, run, tmp_path, capsys, monkeypatch):
    """``translate.py RUN '…' -o RUN/checkpoints/best.pt`` used to exit 0 and leave a checkpoint
    holding a translation; every spelling of every file of the run's record is refused."""
    before = contents(run)
    link = tmp_path / "link.txt"
    link.symlink_to(run / "checkpoints" / "best.pt")
    monkeypatch.chdir(tmp_path)
    for output in (
        run / "checkpoints" / "best.pt",
        Path(os.path.relpath(run / "checkpoints" / "best.pt")),  # relative, through ..
        run / "checkpoints" / ".." / "checkpoints" / "best.pt",
        link,
        run / "checkpoints" / "last.pt",  # not there yet: the run writes it when resumed
        run / "summary.json",
        run / ".hydra" / "config.yaml",
        run / "tokenizer" / "src.model",
        run / "tokenizer" / "tgt.model",
        run / "events.out.tfevents.1.host.2.0",
        run / "train.log",
    ):
        err = refused(script, [str(run), SRC[0], "-o", str(output)], capsys)
        assert f"-o {output}:" in err, err
    hard = tmp_path / "weights"  # a hard link elsewhere, no suffix: the checkpoint translated with
    os.link(run / "checkpoints" / "best.pt", hard)
    err = refused(script, [str(run), SRC[0], "-o", str(hard)], capsys)
    assert "it is the model translated with" in err
    linked_run = tmp_path / "run-link"  # the run reached through a link to its folder
    linked_run.symlink_to(run)
    refused(script, [str(linked_run), SRC[0], "-o", str(linked_run / "summary.json")], capsys)
    assert contents(run) == before and not (run / "checkpoints" / "last.pt").exists()
    assert script.main([str(run), SRC[0], "-o", str(run / "out.en")]) == 0  # beside the record: allowed
    assert (run / "out.en").read_text(encoding="utf-8").count("\n") == 1


def test_translate_refuses_to_write_over_its_input_however_it_is_spelt(script, run, tmp_path, capsys, monkeypatch):
    """``-i f -o f`` used to replace the input with its translation."""
    source = tmp_path / "in.de"
    source.write_text(f"{SRC[0]}\n{SRC[1]}\n", encoding="utf-8")
    text = source.read_bytes()
    (tmp_path / "link.de").symlink_to(source)
    os.link(source, tmp_path / "hard.de")
    monkeypatch.chdir(tmp_path)
    for output in (source, Path("in.de"), Path("./sub/../in.de"), tmp_path / "link.de", tmp_path / "hard.de"):
        err = refused(script, [str(run), "-i", str(source), "-o", str(output)], capsys)
        assert "it is the input" in err, err
    err = refused(script, [str(run), "-i", "link.de", "-o", str(source)], capsys)
    assert "it is the input" in err
    with source.open("r", encoding="utf-8") as stdin:  # translate.py RUN -o in.de < in.de
        monkeypatch.setattr(sys, "stdin", stdin)
        err = refused(script, [str(run), "-o", "in.de"], capsys)
    assert "it is the input" in err
    reference = tmp_path / "ref.en"
    reference.write_text("a man rides a bike .\n", encoding="utf-8")
    err = refused(script, [str(run), SRC[0], "--score-reference", str(reference), "-o", str(reference)], capsys)
    assert "the translations to score" in err
    checkpoint = run / "checkpoints" / "best.pt"
    err = refused(script, [str(checkpoint), SRC[0], "-o", str(checkpoint)], capsys)
    assert source.read_bytes() == text and reference.read_text(encoding="utf-8") == "a man rides a bike .\n"


def test_attention_pictures_never_land_on_the_runs_record(script, run, capsys):
    before = contents(run)
    for output in (run / "checkpoints" / "best.pt", run / "summary.json"):
        err = refused(script, [str(run), SRC[0], "--attention", str(output)], capsys)
        assert f"--attention {output}:" in err
    assert contents(run) == before


def test_a_checkpoint_or_an_export_anywhere_is_not_an_output(tmp_path):
    lone = build_checkpoint(tmp_path / "lone.pt", max_len=32)
    assert "an existing .pt file" in output_problem(lone)
    export = tmp_path / "export"
    export.mkdir()
    for name in ("minitrans.json", "model.bin", "config.json"):
        (export / name).write_text("{}", encoding="utf-8")
    assert "the exported model in" in output_problem(export / "config.json", flag="-o")
    assert output_problem(export.parent / "new.txt") is None
    renamed = tmp_path / "renamed"
    renamed.write_bytes(lone.read_bytes())
    assert "holds a checkpoint" in output_problem(renamed)
    (tmp_path / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")
    assert "the record of the sweep" in output_problem(tmp_path / "multirun.yaml")
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert output_problem(tmp_path / "notes.txt") is None  # a plain file of the user's: theirs to replace
    assert output_problem(tmp_path / "new.pt") is None  # a new file of any name

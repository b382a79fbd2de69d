"""scripts/evaluate.py: the run's own corpus, sacrebleu scores that agree with sacrebleu itself,
files in the run folder, and one error line for a split that does not exist."""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
import sacrebleu
import torch
from helpers import REPO
from helpers.checkpoints import DE, EN, build_cased_checkpoint

from minitrans.core.config import DataConfig, TrainConfig
from minitrans.core.metrics import corpus_scores
from minitrans.data.corpus import load_run_split
from minitrans.data.generated import generate_corpus

# the reports of the Multi30k-named run below: greedy, and beam 2 with the default length penalty
GREEDY, BEAM2 = "test_2016_flickr.beam1.ratio1.5.tok13a", "test_2016_flickr.beam2.lp0.6.ratio1.5.tok13a"


@pytest.fixture(scope="module")
def evaluate():
    spec = importlib.util.spec_from_file_location("evaluate_script", REPO / "scripts" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


@pytest.fixture()
def multi30k_run(tmp_path) -> tuple[Path, Path]:
    root = tmp_path / "multi30k"
    root.mkdir()
    (root / "test_2016_flickr.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    (root / "test_2016_flickr.en").write_text("\n".join(EN) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    data = DataConfig(
        name="multi30k", src_lang="de", tgt_lang="en", valid_split="val", test_splits=["test_2016_flickr"]
    )
    build_cased_checkpoint(run / "checkpoints" / "best.pt", data)  # as conf/data/multi30k.yaml
    return run, root


def test_scores_agree_with_sacrebleu_and_land_in_the_run_folder(evaluate, multi30k_run, capsys):
    run, root = multi30k_run
    assert evaluate([str(run), "--split", "test", "--data-root", str(root), "--beam", "2", "--device", "cpu"]) == 0
    assert "test_2016_flickr (5 sentences, beam 2): BLEU" in capsys.readouterr().out
    hyps = (run / "eval" / f"{BEAM2}.hyp.txt").read_text(encoding="utf-8").splitlines()
    report = json.loads((run / "eval" / f"{BEAM2}.json").read_text(encoding="utf-8"))
    assert len(hyps) == 5 and hyps[3] == ""  # line for line, an empty source gives an empty line
    assert report["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [EN]).score)
    assert report["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [EN]).score)
    assert report["bleu_lowercase"] == pytest.approx(sacrebleu.corpus_bleu(hyps, [EN], lowercase=True).score)
    assert "tok:13a" in report["bleu_signature"] and "case:mixed" in report["bleu_signature"]
    assert sum(bucket["count"] for bucket in report["by_length"]) == 5
    assert (report["split"], report["beam"], report["sentences"]) == ("test_2016_flickr", 2, 5)


def test_a_checkpoint_file_writes_into_its_run_folder(evaluate, multi30k_run):
    run, root = multi30k_run
    checkpoint = run / "checkpoints" / "best.pt"
    args = [str(checkpoint), "--split", "test_2016_flickr", "--data-root", str(root), "--limit", "2"]
    assert evaluate([*args, "--device", "cpu"]) == 0
    report = json.loads((run / "eval" / f"{GREEDY}.first2.json").read_text(encoding="utf-8"))
    assert report["sentences"] == 2 and report["checkpoint"] == str(checkpoint)


def test_reports_of_different_things_never_replace_each_other(evaluate, multi30k_run):
    """Another --limit, checkpoint or length penalty gets its own report, named for what was
    scored; the same evaluation again replaces its own."""
    run, root = multi30k_run
    best = str(run / "checkpoints" / "best.pt")
    shutil.copy(best, run / "checkpoints" / "averaged.pt")
    common = ["--split", "test_2016_flickr", "--data-root", str(root), "--device", "cpu", "--beam", "2"]
    evaluations = [
        (f"{BEAM2}.json", [best]),
        ("test_2016_flickr.beam2.averaged.lp0.6.ratio1.5.tok13a.json", [str(run)]),  # a run folder prefers averaged.pt
        ("test_2016_flickr.beam2.lp1.ratio1.5.tok13a.json", [best, "--length-penalty", "1"]),
        (f"{BEAM2}.first2.json", [best, "--limit", "2"]),
        (f"{BEAM2}.json", [best, "--limit", "5"]),  # the whole split: the same evaluation
        ("test_2016_flickr.beam2.lp0.6.ratio1.5.tokchar.json", [best, "--bleu-tokenize", "char"]),  # another BLEU
    ]
    for name, args in evaluations:
        assert evaluate([*args, *common]) == 0
        assert (run / "eval" / name).exists() and (run / "eval" / name.replace(".json", ".hyp.txt")).exists()
    reports = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (run / "eval").glob("*.json")}
    assert set(reports) == {name for name, _ in evaluations}
    assert reports[f"{BEAM2}.json"]["sentences"] == 5
    assert reports[f"{BEAM2}.first2.json"]["sentences"] == 2
    assert reports["test_2016_flickr.beam2.averaged.lp0.6.ratio1.5.tok13a.json"]["checkpoint"].endswith("averaged.pt")
    assert reports["test_2016_flickr.beam2.lp1.ratio1.5.tok13a.json"]["length_penalty"] == 1.0


def test_the_length_penalty_defaults_to_the_one_the_run_was_scored_with(evaluate, multi30k_run):
    """A recipe that tunes trainer.length_penalty (Multi30k's) is evaluated with it unless
    --length-penalty says otherwise, so the script repeats the run's own test score."""
    from minitrans.core.checkpoint import load_checkpoint, save_checkpoint

    run, root = multi30k_run
    best = run / "checkpoints" / "best.pt"
    payload = load_checkpoint(best)
    payload["config"]["trainer"]["length_penalty"] = 1.5
    save_checkpoint(payload, best)
    common = ["--split", "test_2016_flickr", "--data-root", str(root), "--device", "cpu", "--beam", "2"]
    assert evaluate([str(best), *common]) == 0
    assert evaluate([str(best), *common, "--length-penalty", "0.6"]) == 0
    reports = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (run / "eval").glob("*.json")}
    assert reports["test_2016_flickr.beam2.lp1.5.ratio1.5.tok13a.json"]["length_penalty"] == 1.5  # the run's
    assert reports[f"{BEAM2}.json"]["length_penalty"] == 0.6  # the flag's


def test_an_unknown_split_is_one_error_line(evaluate, multi30k_run, capsys):
    run, root = multi30k_run
    assert evaluate([str(run), "--split", "nope", "--data-root", str(root), "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no split 'nope'")


def test_empty_test_files_are_one_error_line_and_write_nothing(evaluate, multi30k_run, tmp_path, capsys):
    run, _ = multi30k_run
    empty = tmp_path / "empty"
    empty.mkdir()
    for lang in ("de", "en"):
        (empty / f"test_2016_flickr.{lang}").write_text("", encoding="utf-8")
    assert evaluate([str(run), "--split", "test", "--data-root", str(empty), "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "no sentence pairs" in err[0], err
    assert not (run / "eval").exists()


def test_a_generated_corpus_run_is_evaluated_on_its_regenerated_split(evaluate, tmp_path):
    data = DataConfig(name="generated", num_train=50, num_valid=10, num_test=12, corpus_seed=7)
    run = tmp_path / "run"
    build_cased_checkpoint(run / "checkpoints" / "last.pt", data)
    sources, references, name = load_run_split(json.loads(json.dumps(asdict(TrainConfig(model={}, data=data)))), "test")
    corpus = generate_corpus(num_train=50, num_valid=10, num_test=12, seed=7)
    assert name == "test" and list(zip(sources, references)) == corpus["test"]
    assert evaluate([str(run), "--split", "test", "--limit", "3", "--device", "cpu"]) == 0
    assert (
        len((run / "eval" / "test.beam1.last.ratio1.5.tok13a.first3.hyp.txt").read_text(encoding="utf-8").splitlines())
        == 3
    )


def test_known_strings_score_as_sacrebleu_says():
    same = corpus_scores(["The cat sat on the mat."], ["The cat sat on the mat."])
    assert same["bleu"] == pytest.approx(100.0) and same["chrf"] == pytest.approx(100.0)
    cased = corpus_scores(["the cat sat on the mat."], ["The Cat sat on the mat."])
    assert cased["bleu"] < 100.0 and cased["bleu_lowercase"] == pytest.approx(100.0)
    # detokenised input, 13a tokenisation: punctuation attached or not scores the same
    assert corpus_scores(["Hello, world!"], ["Hello , world !"])["bleu"] == pytest.approx(100.0)
    assert corpus_scores(["nothing alike"], ["entirely different words here"])["bleu"] == pytest.approx(0.0)


def edited(path: Path, change, keep_digest: bool = True) -> Path:
    """``path`` with its payload changed by ``change(payload)`` and saved the way a hand edit
    would be: torch.save, so the digest saved with the weights is the old one (or none)."""
    payload = torch.load(path, weights_only=True)
    change(payload)
    if not keep_digest:  # as a checkpoint written before digests existed
        payload.pop("model_config_sha256")
    out = path.parent / "checkpoints" / "last.pt"
    out.parent.mkdir(exist_ok=True)
    torch.save(payload, out)
    return out.parent.parent


def set_key(section: str, key: str, value):
    return lambda payload: payload["config"][section].__setitem__(key, value)


@pytest.mark.parametrize(
    ("change", "keep_digest", "expected"),
    [
        # same weight shapes, other heads: only the digest can tell (BLEU 94.2 -> 84.3 unnoticed before)
        (set_key("model", "num_heads", 4), True, "was refused: its model config is not the one its weights"),
        (set_key("model", "max_len", 10**9), False, "model.max_len: must be in [1, 65536], got 1000000000"),
        (set_key("model", "d_model", 32), False, "weights and config disagree: "),
        (set_key("data", "colour", "red"), True, "configuration has a key this version does not know"),
        (set_key("data", "num_test", 10**7), True, "data.num_test: must be in [1, 100_000], got 10000000"),
        (lambda payload: payload["model"].popitem(), False, "weights and config disagree: missing"),
    ],
)
def test_an_edited_checkpoint_is_one_error_line_before_anything_big_is_built(
    evaluate, tmp_path, capsys, change, keep_digest, expected
):
    data = DataConfig(name="generated", num_train=50, num_valid=10, num_test=12)
    original = build_cased_checkpoint(tmp_path / "original.pt", data)
    run = edited(original, change, keep_digest)
    assert evaluate([str(run), "--split", "test", "--limit", "2", "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err


def test_out_puts_the_results_elsewhere_and_a_long_split_shows_progress(
    evaluate, multi30k_run, tmp_path, capsys, monkeypatch
):
    from minitrans.cli import evaluate as evaluate_command

    run, root = multi30k_run
    monkeypatch.setattr(evaluate_command, "PROGRESS_CHUNK", 2)  # 5 sentences: three chunks
    out = tmp_path / "elsewhere"
    args = [str(run), "--split", "test_2016_flickr", "--data-root", str(root), "--device", "cpu", "--out", str(out)]
    assert evaluate(args) == 0
    captured = capsys.readouterr()
    assert "translate:" in captured.err and "5/5" in captured.err  # the bar counted every sentence
    assert (out / f"{GREEDY}.json").exists() and (out / f"{GREEDY}.hyp.txt").exists()
    assert not (run / "eval").exists()  # the run folder is left alone
    chunked = (out / f"{GREEDY}.hyp.txt").read_text(encoding="utf-8").splitlines()
    assert evaluate([*args[:-1], str(tmp_path / "quiet"), "--no-progress"]) == 0
    assert "translate:" not in capsys.readouterr().err
    monkeypatch.setattr(evaluate_command, "PROGRESS_CHUNK", 128)  # one call: the same translations
    assert evaluate([*args[:-1], str(tmp_path / "whole")]) == 0
    assert (tmp_path / "whole" / f"{GREEDY}.hyp.txt").read_text(encoding="utf-8").splitlines() == chunked


def test_a_cut_source_is_a_note_numbered_as_in_the_split_not_a_warning(tmp_path, monkeypatch):
    """The notes come back as data, numbered across chunks (a warning raised inside the
    translation once numbered each chunk from 1)."""
    import warnings

    from helpers.checkpoints import SRC, build_checkpoint

    from minitrans.cli import evaluate as evaluate_command
    from minitrans.core.decoding_options import DecodingOptions
    from minitrans.inference.translator import Translator

    translator = Translator.from_checkpoint(build_checkpoint(tmp_path / "best.pt", max_len=32), device="cpu")
    monkeypatch.setattr(evaluate_command, "PROGRESS_CHUNK", 2)
    sources = [SRC[0], SRC[1], SRC[2], " ".join(SRC * 3), ""]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hypotheses, cut = evaluate_command.translate_with_progress(translator, sources, False, DecodingOptions())
    assert not [w for w in caught if "subwords" in str(w.message)]
    assert list(cut) == [3] and cut[3].endswith("more than the model's max_len=32; translating its first 31")
    with pytest.warns(UserWarning, match="sentence 4 has"):  # the Python API's edge: it warns
        assert hypotheses == translator.translate(sources, DecodingOptions())


def run_trained_with(run: Path, **trainer) -> Path:
    """The run's best.pt as if trained with these ``trainer.*`` settings."""
    from minitrans.core.checkpoint import load_checkpoint, save_checkpoint

    best = run / "checkpoints" / "best.pt"
    payload = load_checkpoint(best)
    payload["config"]["trainer"].update(trainer)
    save_checkpoint(payload, best)
    return best


def test_the_runs_own_output_ratio_is_used_and_another_is_named_and_noted(evaluate, multi30k_run, capsys):
    """A run trained with trainer.max_output_ratio=0.1 is evaluated with it, as its own test
    was; told another, the report's name and a note line say so."""
    run, root = multi30k_run
    run_trained_with(run, max_output_ratio=0.1, length_penalty=2.0)
    common = ["--split", "test_2016_flickr", "--data-root", str(root), "--device", "cpu", "--beam", "4"]
    assert evaluate([str(run), *common]) == 0
    assert "note:" not in capsys.readouterr().err  # the run's own settings: nothing to say
    own = json.loads((run / "eval" / "test_2016_flickr.beam4.lp2.ratio0.1.tok13a.json").read_text())
    assert (own["max_output_ratio"], own["length_penalty"]) == (0.1, 2.0)
    assert evaluate([str(run), *common, "--max-output-ratio", "1.5", "--length-penalty", "2"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: decoding with output ratio 1.5, not the run's own 0.1 (trainer.max_output_ratio)"]
    told = json.loads((run / "eval" / "test_2016_flickr.beam4.lp2.ratio1.5.tok13a.json").read_text())
    assert told["max_output_ratio"] == 1.5


def test_keep_spaces_writes_its_own_report_and_is_refused_where_it_changes_nothing(evaluate, tmp_path, capsys):
    root = tmp_path / "multi30k"
    root.mkdir()
    (root / "test_2016_flickr.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    segmented = ["我 爱 你 。", "他们 在 公园 里 。", "今天 很 热 。", "你好 。", "这 是 一 本 书 。"]
    (root / "test_2016_flickr.zh").write_text("\n".join(segmented) + "\n", encoding="utf-8")
    data = DataConfig(
        name="multi30k", src_lang="de", tgt_lang="zh", valid_split="val", test_splits=["test_2016_flickr"]
    )
    run = tmp_path / "run"
    build_cased_checkpoint(run / "checkpoints" / "best.pt", data)
    common = [str(run), "--split", "test_2016_flickr", "--data-root", str(root), "--device", "cpu"]
    assert evaluate(common) == 0
    assert evaluate([*common, "--keep-spaces"]) == 0
    names = sorted(path.name for path in (run / "eval").glob("*.json"))
    assert names == ["test_2016_flickr.beam1.ratio1.5.tokzh.json", "test_2016_flickr.beam1.ratio1.5.tokzh.spaces.json"]
    plain, kept = (json.loads((run / "eval" / name).read_text()) for name in names)
    assert "cjk_spaces_removed" in plain and "cjk_spaces_removed" not in kept and kept["keep_spaces"] is True
    capsys.readouterr()
    de_run, de_root = tmp_path / "de", tmp_path / "de_data"
    de_root.mkdir()
    (de_root / "test_2016_flickr.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    (de_root / "test_2016_flickr.en").write_text("\n".join(EN) + "\n", encoding="utf-8")
    de = DataConfig(name="multi30k", src_lang="de", tgt_lang="en", valid_split="val", test_splits=["test_2016_flickr"])
    build_cased_checkpoint(de_run / "checkpoints" / "best.pt", de)
    args = [str(de_run), "--split", "test", "--data-root", str(de_root), "--device", "cpu", "--keep-spaces"]
    assert evaluate(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --keep-spaces changes nothing here") and "13a" in err[0]
    assert not (de_run / "eval").exists()


def test_a_split_seen_whole_in_training_prints_no_nan(capsys):
    from minitrans.cli.evaluate import print_report

    report = {"split": "test", "sentences": 3, "beam": 1, "bleu": 50.0, "chrf": 60.0, "bleu_lowercase": 50.0}
    print_report(report | {"bleu_tokenize": "13a", "seen_in_train": 3, "by_length": []})
    out = capsys.readouterr().out
    assert "nan" not in out and "3 of 3 sources also occur in training: none is unseen" in out


@pytest.fixture()
def generated_run(tmp_path) -> tuple[Path, list[str]]:
    """An untrained run of a small generated corpus, and its test references."""
    data = DataConfig(name="generated", num_train=50, num_valid=10, num_test=30, corpus_seed=7)
    run = tmp_path / "run"
    build_cased_checkpoint(run / "checkpoints" / "best.pt", data)
    references = [tgt for _, tgt in generate_corpus(num_train=50, num_valid=10, num_test=30, seed=7)["test"]]
    return run, references


def test_two_hypothesis_files_get_the_paired_interval_and_a_verdict(evaluate, generated_run, tmp_path, capsys):
    run, references = generated_run
    good, cut = tmp_path / "good.txt", tmp_path / "cut.txt"
    good.write_text("".join(r + "\n" for r in references), encoding="utf-8")
    cut.write_text("".join(" ".join(r.split()[:2]) + "\n" for r in references), encoding="utf-8")
    assert evaluate([str(run), "--hypotheses", str(cut), str(good), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"{good}: test (30 sentences): BLEU 100.00" in out
    assert f"paired bootstrap (1,000 resamples), {good} minus {cut}:" in out
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith(("BLEU", "chrF"))]
    assert len(lines) == 2 and all("95 % interval +" in line and ": larger than chance" in line for line in lines)
    assert evaluate([str(run), "--hypotheses", str(cut), str(cut), "--device", "cpu"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith(("BLEU", "chrF"))]
    assert len(lines) == 2 and all(": +0.00," in line and "not larger than chance" in line for line in lines)
    assert not (run / "eval").exists()  # scoring files writes nothing


def test_two_runs_are_each_evaluated_and_then_tested_against_each_other(evaluate, generated_run, capsys):
    run, _ = generated_run
    assert evaluate([str(run), str(run), "--beam", "2", "--device", "cpu"]) == 0  # a run against itself
    out = capsys.readouterr().out
    assert out.count("wrote ") == 2 and f"{run} minus {run}:" in out
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith(("BLEU", "chrF"))]
    assert len(lines) == 2 and all("p = 1.000: not larger than chance" in line for line in lines)


@pytest.mark.parametrize(
    "extra, message",
    [
        (lambda run, tmp: ["--hypotheses", str(tmp / "short.txt")], "has 1 lines for the 30 sentences of test"),
        (lambda run, tmp: ["--hypotheses", str(tmp / "none.txt")], "none.txt: no such file"),
        (lambda run, tmp: [str(run), "--out", str(tmp / "o")], "--out with a second run"),
        (lambda run, tmp: [str(tmp / "nowhere")], "nowhere: no such file or folder"),
        (lambda run, tmp: [str(run), "--hypotheses", str(tmp / "short.txt")], "a second run or --hypotheses"),
    ],
)
def test_what_cannot_be_paired_is_one_error_line(evaluate, generated_run, tmp_path, capsys, extra, message):
    run, _ = generated_run
    (tmp_path / "short.txt").write_text("one line\n", encoding="utf-8")
    assert evaluate([str(run), *extra(run, tmp_path), "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not (run / "eval").exists()


def test_references_are_scored_as_the_model_writes_them_unless_told_as_written(evaluate, tmp_path, capsys):
    """References ending in U+037E (the Greek question mark, which NFC makes ";") against
    hypotheses ending in ";": the same text to a reader and to the model."""
    root, run = tmp_path / "multi30k", tmp_path / "run"
    root.mkdir()
    references = [line.rstrip(".") + "\u037e" for line in EN if line]
    (root / "test_2016_flickr.de").write_text("\n".join(d for d in DE if d) + "\n", encoding="utf-8")
    (root / "test_2016_flickr.en").write_text("\n".join(references) + "\n", encoding="utf-8")
    data = DataConfig(
        name="multi30k", src_lang="de", tgt_lang="en", valid_split="val", test_splits=["test_2016_flickr"]
    )
    build_cased_checkpoint(run / "checkpoints" / "best.pt", data)
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("".join(r.replace("\u037e", ";") + "\n" for r in references), encoding="utf-8")
    args = [str(run), "--split", "test", "--data-root", str(root), "--hypotheses", str(hypotheses), "--device", "cpu"]
    assert evaluate(args) == 0
    assert "BLEU 100.00  chrF 100.00  [tokenize 13a, norm:nfc]" in capsys.readouterr().out
    assert evaluate([*args, "--score-as-written"]) == 0
    out = capsys.readouterr().out
    assert "BLEU 100.00" not in out and "[tokenize 13a, norm:none]" in out
    assert evaluate([str(run), "--split", "test", "--data-root", str(root), "--device", "cpu", "--limit", "2"]) == 0
    assert (
        evaluate(
            [
                str(run),
                "--split",
                "test",
                "--data-root",
                str(root),
                "--device",
                "cpu",
                "--limit",
                "2",
                "--score-as-written",
            ]
        )
        == 0
    )
    normalized = json.loads((run / "eval" / "test_2016_flickr.beam1.ratio1.5.tok13a.first2.json").read_text())
    written = json.loads((run / "eval" / "test_2016_flickr.beam1.ratio1.5.tok13a.written.first2.json").read_text())
    assert normalized["bleu_signature"].endswith("|norm:nfc") and not normalized["as_written"]
    assert written["bleu_signature"].endswith("|norm:none") and written["as_written"]

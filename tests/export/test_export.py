"""Export to CTranslate2: the engine's outputs equal ours on tiny models of every shape we export,
what it cannot represent is refused in one line, and the scripts take an exported folder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO
from helpers.checkpoints import EXPORT_SRC, EXPORT_TGT, SENTENCES, VARIANTS, build_export_checkpoint

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.config import RNNConfig, TransformerConfig
from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.tokenizer import Tokenizer
from minitrans.export.ct2_export import ExportError, check_exportable, export_ctranslate2
from minitrans.export.ct2_translator import Ct2Error, Ct2Translator, is_exported
from minitrans.export.loading import load_torch_translator, load_translator
from minitrans.inference.lines import score_lines
from minitrans.inference.translator import Translator, require_model
from minitrans.models.build import build_model

HAS_CT2 = importlib.util.find_spec("ctranslate2") is not None
needs_ct2 = pytest.mark.skipif(not HAS_CT2, reason="ctranslate2 is not installed (pip install 'minitrans[export]')")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("export")
    run = folder / "run"
    build_export_checkpoint(run / "checkpoints" / "best.pt")
    if HAS_CT2:
        export_ctranslate2(run, folder / "ct2")
    return run, folder / "ct2"


# -- equivalence ------------------------------------------------------------------------------
@needs_ct2
@pytest.mark.parametrize("variant", VARIANTS)
def test_ctranslate2_translates_exactly_as_our_decoder(tmp_path, variant):
    model, eos_bias = VARIANTS[variant]
    checkpoint = build_export_checkpoint(tmp_path / "best.pt", eos_bias, **model)
    ours = Translator.from_checkpoint(checkpoint, "cpu")
    engine = Ct2Translator.from_folder(export_ctranslate2(checkpoint, tmp_path / "ct2"), threads=1)
    src_ids = ours.encode(SENTENCES)
    for beam in (1, 3, 5):
        expected = ours.translate_encoded(src_ids, DecodingOptions(beam_size=beam))
        assert engine.translate_encoded(src_ids, DecodingOptions(beam_size=beam)) == expected, (variant, beam)
        if beam == 1:  # the comparison means something: outputs end early, late and at the limit
            assert len({len(ids) for ids in expected}) >= 5, sorted(len(ids) for ids in expected)
    assert engine.translate(SENTENCES, DecodingOptions(beam_size=2, length_penalty=0.0)) == ours.translate(
        SENTENCES, DecodingOptions(beam_size=2, length_penalty=0.0)
    )


# Every teaching switch of docs/claims.md, alone and together; d_k=16 with two heads of d_model 16
# makes the engine's head_dim differ from d_model / num_heads under a scale.
SWITCHES = {
    "attention_scale=none": {"attention_scale": "none"},
    "attention_scale=2, d_k=16": {"attention_scale": "2", "d_k": 16},
    "attention_scale=0.3": {"attention_scale": "0.3"},
    "cross_attention=fixed_mean": {"cross_attention": "fixed_mean"},
    "positions=none": {"positions": "none"},
    "positions=learned": {"positions": "learned"},
    "causal_mask=false": {"causal_mask": False},
    "all at once": {"attention_scale": "none", "cross_attention": "fixed_mean", "positions": "none", "d_k": 16},
}


@needs_ct2
@pytest.mark.parametrize("switch", SWITCHES)
def test_an_export_of_every_teaching_switch_translates_as_the_run(tmp_path, switch):
    """The export carries what the switched model computes when it translates: the same
    outputs, greedy and beam, and the same log-probabilities (cached decoding: the engine's)."""
    checkpoint = build_export_checkpoint(tmp_path / "best.pt", 1.0, **SWITCHES[switch])
    ours = Translator.from_checkpoint(checkpoint, "cpu")
    engine = Ct2Translator.from_folder(export_ctranslate2(checkpoint, tmp_path / "ct2"), threads=1)
    src_ids = ours.encode([sentence for sentence in SENTENCES if sentence.strip()])
    for beam in (1, 4):
        expected = ours.search_encoded(src_ids, DecodingOptions(beam_size=beam))
        found = engine.search_encoded(src_ids, DecodingOptions(beam_size=beam))
        assert [h.ids for (h,) in found] == [h.ids for (h,) in expected], (switch, beam)
        assert [h.log_prob for (h,) in found] == pytest.approx([h.log_prob for (h,) in expected], abs=1e-3)
    assert len({len(h.ids) for (h,) in expected}) >= 3  # outputs of several lengths: the comparison means something


@needs_ct2
def test_folding_the_scale_into_the_query_weights_leaves_the_model_alone(tmp_path):
    from minitrans.export.ct2_export import transformer_spec

    checkpoint = build_export_checkpoint(tmp_path / "best.pt", attention_scale="0.3", cross_attention="fixed_mean")
    translator = Translator.from_checkpoint(checkpoint, "cpu")
    before = {name: value.clone() for name, value in translator.model.state_dict().items()}
    transformer_spec(translator.model, translator.tokenizer)
    assert all(torch.equal(before[name], value) for name, value in translator.model.state_dict().items())


@needs_ct2
@pytest.mark.parametrize("quantization", ["float16", "int8_float16"])
def test_a_scale_whose_query_weights_overflow_float16_is_refused_in_one_line(tmp_path, quantization):
    checkpoint = build_export_checkpoint(tmp_path / "best.pt", attention_scale="1e-6")
    with pytest.raises(ExportError, match=rf"^cannot export with quantization {quantization}: .*past float16's") as e:
        export_ctranslate2(checkpoint, tmp_path / "ct2", quantization=quantization)
    assert "\n" not in str(e.value) and not (tmp_path / "ct2").exists()
    export_ctranslate2(checkpoint, tmp_path / "bf16", quantization="bfloat16")  # float32's range: fine


@needs_ct2
def test_the_one_loader_tells_each_format_apart(exported):
    run, folder = exported
    assert type(load_translator(folder, "cpu")) is Ct2Translator
    assert type(load_translator(run, "cpu")) is Translator
    assert type(load_torch_translator(run, "cpu")) is Translator


@needs_ct2
def test_the_torch_loader_refuses_an_export_in_one_line(exported):
    _, folder = exported
    with pytest.raises(CheckpointError, match="CTranslate2 export, which has no PyTorch model") as error:
        load_torch_translator(folder, "cpu")
    assert "\n" not in str(error.value)


@needs_ct2
def test_nbest_hypotheses_scores_and_alignments_match_ours(exported):
    run, folder = exported
    ours, engine = Translator.from_checkpoint(run, "cpu"), load_translator(folder, "cpu")
    src_ids = ours.encode(SENTENCES)
    cut = []
    for beam, nbest in ((1, 1), (4, 3)):
        expected = ours.search_encoded(src_ids, DecodingOptions(beam_size=beam), nbest=nbest)
        found = engine.search_encoded(src_ids, DecodingOptions(beam_size=beam), nbest=nbest)
        assert [[h.ids for h in hyps] for hyps in found] == [[h.ids for h in hyps] for hyps in expected]
        assert [[h.is_finished for h in hyps] for hyps in found] == [[h.is_finished for h in hyps] for hyps in expected]
        for hyps, ref in zip(found, expected):
            assert [h.log_prob for h in hyps] == pytest.approx([h.log_prob for h in ref], abs=1e-3)
            assert [h.score for h in hyps] == pytest.approx([h.score for h in ref], abs=1e-3)
        cut += [not hyp.is_finished for hyps in found for hyp in hyps]
    assert any(cut) and not all(cut)  # some end with EOS, some at the length limit
    described = engine.translate_nbest(SENTENCES[:10], DecodingOptions(beam_size=4), nbest=2)
    reference = ours.translate_nbest(SENTENCES[:10], DecodingOptions(beam_size=4), nbest=2)
    for got, want in zip(described, reference):
        assert [(t.text, t.pieces, t.alignment, t.is_finished) for t in got] == [
            (t.text, t.pieces, t.alignment, t.is_finished) for t in want
        ]
    with pytest.raises(ValueError, match="nbest must be between 1 and the beam size 2"):
        engine.search_encoded(src_ids, DecodingOptions(beam_size=2), nbest=3)
    with pytest.raises(CheckpointError, match="forced scoring needs the PyTorch checkpoint"):
        score_lines(engine, SENTENCES[:1], ["a man"])


@needs_ct2
def test_int8_export_is_smaller_and_still_translates(exported, tmp_path):
    run, folder = exported
    int8 = export_ctranslate2(run, tmp_path / "int8", quantization="int8")
    assert (int8 / "model.bin").stat().st_size < 0.6 * (folder / "model.bin").stat().st_size
    assert json.loads((int8 / "minitrans.json").read_text())["quantization"] == "int8"
    outputs = load_translator(int8, "cpu").translate(SENTENCES, DecodingOptions(beam_size=2))
    assert len(outputs) == len(SENTENCES) and outputs[-1] == ""


@needs_ct2
def test_the_exported_folder_is_self_contained(exported, tmp_path):
    run, folder = exported
    copy = tmp_path / "moved"
    copy.mkdir()
    for path in folder.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    assert is_exported(copy) and not is_exported(run)
    engine = load_translator(copy, "cpu")
    assert isinstance(engine, Ct2Translator) and engine.config["model"]["d_model"] == 16
    assert engine.translate(SENTENCES[:5]) == Translator.from_checkpoint(run, "cpu").translate(SENTENCES[:5])


# -- refusals ---------------------------------------------------------------------------------
def test_what_the_engine_cannot_represent_is_refused_in_one_line(tmp_path):
    tokenizer = Tokenizer.train(EXPORT_SRC, EXPORT_TGT, vocab_size=300)
    for model_cfg, message in (
        (RNNConfig(kind="rnn"), r"cannot export a FixedContextRNN: CTranslate2 runs Transformers only"),
        (RNNConfig(kind="rnn_attention"), r"cannot export a AttentionRNN"),
        (TransformerConfig(d_model=16, num_heads=2, d_k=8, d_v=4), r"d_v=4 different from d_k=8"),
    ):
        with pytest.raises(ExportError, match=message) as error:
            check_exportable(build_model(model_cfg, tokenizer))
        assert "\n" not in str(error.value)


@needs_ct2
def test_export_refuses_an_existing_folder_an_rnn_and_a_bad_quantization(exported, tmp_path):
    run, folder = exported
    before = (folder / "model.bin").read_bytes()
    with pytest.raises(ExportError, match="already exists"):
        export_ctranslate2(run, folder)
    with pytest.raises(ExportError, match="unknown quantization 'int3'"):
        export_ctranslate2(run, tmp_path / "q", quantization="int3")
    with pytest.raises(ExportError, match="Transformers only"):
        export_ctranslate2(build_export_checkpoint(tmp_path / "rnn.pt", kind="rnn"), tmp_path / "rnn")
    assert (folder / "model.bin").read_bytes() == before and not (tmp_path / "rnn").exists()
    export_ctranslate2(run, folder, force=True)  # --force replaces it
    assert is_exported(folder)


@needs_ct2
def test_force_never_replaces_what_the_export_did_not_write(exported, tmp_path, monkeypatch):
    """--force replaces an earlier export or an empty folder only: not the current folder, a parent
    of it, the run folder being exported, or a folder holding anything else."""
    run, _ = exported
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "notes.txt").write_text("mine")
    (work / "sub" / "data.txt").write_text("mine too")
    monkeypatch.chdir(work)
    before = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    for target, message in ((".", "current folder"), ("..", "current folder"), (str(work), "current folder")):
        with pytest.raises(ExportError, match=message):
            export_ctranslate2(run, target, force=True)
    with pytest.raises(ExportError, match="only an earlier export"):
        export_ctranslate2(run, work / "sub", force=True)
    assert sorted(str(p.relative_to(work)) for p in work.rglob("*")) == before
    assert (work / "notes.txt").read_text() == "mine"

    checkpoints = sorted(p.name for p in run.rglob("*"))
    with pytest.raises(ExportError, match="holds the checkpoint"):
        export_ctranslate2(run, run, force=True)
    with pytest.raises(ExportError, match="holds the checkpoint"):
        export_ctranslate2(run, run / "checkpoints", force=True)
    assert sorted(p.name for p in run.rglob("*")) == checkpoints

    empty = work / "empty"
    empty.mkdir()
    assert is_exported(export_ctranslate2(run, empty, force=True))  # an empty folder may be filled
    (work / "file").write_text("x")
    with pytest.raises(ExportError, match="not a folder"):
        export_ctranslate2(run, work / "file", force=True)


@needs_ct2
def test_a_killed_exports_staging_folder_is_cleaned_and_nothing_else(exported, tmp_path):
    run, _ = exported
    stale = tmp_path / ".out.partial-abc123"
    stale.mkdir()
    (stale / ".minitrans-partial-export").touch()
    (stale / "export").mkdir()
    lookalike = tmp_path / ".out.partial-mine"  # named like ours, but we did not write it
    lookalike.mkdir()
    (lookalike / "keep.txt").write_text("x")
    export_ctranslate2(run, tmp_path / "out")
    assert not stale.exists() and (lookalike / "keep.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.partial-mine", "out"]


@needs_ct2
def test_export_script_force_on_the_current_folder_deletes_nothing(exported, tmp_path, monkeypatch, capsys):
    run, _ = exported
    spec = importlib.util.spec_from_file_location("export_script", REPO / "scripts" / "export.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    (tmp_path / "precious.txt").write_text("keep me")
    monkeypatch.chdir(tmp_path)
    assert script.main([str(run), ".", "--force"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error:") and "current folder" in error and error.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_without_ctranslate2_export_and_translate_say_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import ctranslate2 -> ImportError
    run = build_export_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt").parents[1]
    with pytest.raises(Ct2Error, match=r"ctranslate2 is not installed: pip install 'minitrans\[export\]'"):
        export_ctranslate2(run, tmp_path / "out")
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "minitrans.json").write_text("{}")
    with pytest.raises(Ct2Error, match="ctranslate2 is not installed"):
        load_translator(tmp_path / "fake", "cpu")


@needs_ct2
def test_a_broken_export_is_one_error(exported, tmp_path):
    run, folder = exported
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "minitrans.json").write_text("{not json")
    with pytest.raises(Ct2Error, match="is not a usable export"):
        load_translator(broken, "cpu")
    for path in folder.iterdir():
        if path.name != "model.bin":
            (broken / path.name).write_bytes(path.read_bytes())
    with pytest.raises(Ct2Error, match="CTranslate2 cannot load it"):
        load_translator(broken, "cpu")
    with pytest.raises(CheckpointError, match="drawing attention maps needs the PyTorch checkpoint"):
        require_model(load_translator(folder, "cpu"), "drawing attention maps")


# -- scripts ----------------------------------------------------------------------------------
def run_script(name: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / name), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        input=input,
        timeout=120,
    )


@needs_ct2
@pytest.mark.slow
def test_scripts_export_translate_and_evaluate_through_the_folder(exported, tmp_path):
    run, _ = exported
    out = tmp_path / "cli"
    done = run_script("export.py", str(run), "--to", "ctranslate2", str(out), "--quantization", "int16")
    assert done.returncode == 0 and "exported" in done.stdout, done.stderr
    again = run_script("export.py", str(run), "--to", "ctranslate2", str(out))
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "already exists" in again.stderr

    text = "\n".join(SENTENCES[:6]) + "\n"
    ours = run_script("translate.py", str(run), "--beam", "3", input=text)
    theirs = run_script("translate.py", str(out), "--beam", "3", input=text)
    assert theirs.returncode == 0 and theirs.stdout.count("\n") == 6, theirs.stderr
    float32 = tmp_path / "f32"
    export_ctranslate2(run, float32)
    assert run_script("translate.py", str(float32), "--beam", "3", input=text).stdout == ours.stdout

    refs = tmp_path / "data"
    refs.mkdir()
    import gzip

    for lang, lines in (("de", EXPORT_SRC), ("en", EXPORT_TGT)):
        for split in ("train", "val", "test_2016_flickr"):
            with gzip.open(refs / f"{split}.{lang}.gz", "wt", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
    scored = run_script("evaluate.py", str(float32), "--split", "test_2016_flickr", "--data-root", str(refs))
    assert scored.returncode == 0, scored.stderr
    report = json.loads((float32 / "eval" / "test_2016_flickr.beam1.ratio1.5.tok13a.json").read_text())
    assert report["sentences"] == 3 and "bleu" in report


@pytest.mark.slow
def test_export_script_without_ctranslate2_is_one_line(tmp_path):
    run = build_export_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt").parents[1]
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "ctranslate2.py").write_text("raise ImportError('blocked for this test')\n")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "export.py"), str(run), "--to", "ctranslate2", str(tmp_path / "o")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": f"{blocker}:{REPO}"},
        timeout=120,
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == "error: ctranslate2 is not installed: pip install 'minitrans[export]' (or: pip install ctranslate2)\n"
    )


# -- the side-by-side benchmark ---------------------------------------------------------------
@needs_ct2
def test_benchmark_puts_our_decoder_beside_ctranslate2(exported, monkeypatch, capsys, tmp_path):
    from minitrans.bench import decoding as bench

    run, _ = exported
    monkeypatch.setattr(bench, "load_run_split", lambda config, split: (SENTENCES[:12], SENTENCES[:12], "given"))
    report = bench.benchmark_engines(run, ("torch", "ctranslate2", "ctranslate2-int8"), beams=(1, 3), threads=(1,))
    rows = {(row["beam"], row["engine"]): row for row in report["results"]}
    assert len(rows) == 6 and all(row["sents_per_s"] > 0 and row["threads"] == 1 for row in rows.values())
    assert rows[1, "ctranslate2"]["differing_sentences"] == rows[3, "ctranslate2"]["differing_sentences"] == 0
    assert rows[1, "torch"]["bleu"] == rows[1, "ctranslate2"]["bleu"]
    assert "ctranslate2-int8" in bench.format_engines_table(report)
    out = tmp_path / "engines.json"
    assert (
        bench.main([str(run), "--engines", "torch,ctranslate2", "--beams", "2", "--threads", "1", "--json", str(out)])
        == 0
    )
    assert "vs ct2" in capsys.readouterr().out and len(json.loads(out.read_text())["results"]) == 2
    assert bench.main([str(run), "--engines", "torch,onnx"]) == 1
    assert "unknown engine 'onnx'" in capsys.readouterr().err

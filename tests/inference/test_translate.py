"""The Translator and scripts/translate.py: checkpoints in, one line out per line in, whatever
the input; attention pictures; one clear error line for anything unusable."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO
from helpers.checkpoints import SRC, TGT, build_checkpoint
from helpers.scripts import load_script, pipe_stdin

from minitrans.analysis.viz import save_line_attention
from minitrans.core.checkpoint import CheckpointError, resolve_checkpoint, save_checkpoint
from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.textio import InputError, numbered_path, read_sentences
from minitrans.data.tokenizer import EOS_ID, PAD_ID
from minitrans.inference.lines import translate_lines
from minitrans.inference.translator import Translator
from minitrans.models.interface import Seq2SeqModel


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    build_checkpoint(folder / "checkpoints" / "best.pt", max_len=32)
    return folder


@pytest.fixture(scope="module")
def translator(run) -> Translator:
    return Translator.from_checkpoint(run, device="cpu")


class CopyModel(Seq2SeqModel):
    """A deterministic stand-in with a known answer: it "translates" a sentence into its own
    source pieces (the vocabulary is joint), so each output can be checked against its input.
    Counts cached steps and uncached (full-prefix) decodes."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.pad_id, self.vocab = PAD_ID, vocab
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # a device to live on
        self.steps = self.decodes = 0

    def _logits(self, src: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Position t (B,) of the output is source token t; EOS once the source ends."""
        padded = torch.cat([src, torch.full_like(src[:, :1], PAD_ID)], dim=1)  # (B, S + 1)
        token = padded.gather(1, position.clamp(max=src.shape[1])[:, None])[:, 0]  # (B,)
        token = torch.where(token == PAD_ID, EOS_ID, token)
        return torch.nn.functional.one_hot(token, self.vocab).float() * 10  # (B, V)

    def encode(self, src, need_weights=False):
        return {"src": src}, {}

    def init_cache(self, enc):
        return {"position": torch.zeros(enc["src"].shape[0], dtype=torch.long)}

    def step(self, enc, tokens, cache, need_weights=False):
        self.steps += 1
        position = cache["position"]
        return self._logits(enc["src"], position), {"position": position + 1}, {}

    def decode(self, enc, tgt_in, need_weights=False):
        self.decodes += 1
        positions = torch.arange(tgt_in.shape[1]).expand(tgt_in.shape[0], -1)  # (B, T)
        return torch.stack([self._logits(enc["src"], positions[:, t]) for t in range(tgt_in.shape[1])], dim=1), {}


@pytest.fixture(scope="module")
def copier(translator) -> Translator:
    tokenizer = translator.tokenizer
    assert tokenizer.is_joint
    return Translator(CopyModel(tokenizer.tgt_vocab_size), tokenizer, max_len=32, device=torch.device("cpu"))


def test_the_copy_model_gives_each_sentence_back(copier):
    """The oracle of the order tests below: distinct inputs give distinct, known outputs."""
    assert copier.translate(SRC[:3]) == SRC[:3]
    assert copier.translate(SRC[:3], DecodingOptions(beam_size=3, use_cache=False)) == SRC[:3]


# -- checkpoints ------------------------------------------------------------------------------
def test_a_run_folder_resolves_to_averaged_then_best_then_last(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name in ("last.pt", "best.pt", "averaged.pt"):
        (folder / name).write_bytes(b"x")
        assert resolve_checkpoint(tmp_path) == folder / name
        assert resolve_checkpoint(folder) == folder / name
    assert resolve_checkpoint(folder / "last.pt") == folder / "last.pt"
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        resolve_checkpoint(tmp_path / "checkpoints" / ".." / "..")


def test_unusable_checkpoints_raise_checkpoint_error(tmp_path, run):
    good = (run / "checkpoints" / "best.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(good[: len(good) // 2])
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    save_checkpoint({"config": {}, "tokenizer": {}}, tmp_path / "no_model.pt")
    payload = torch.load(run / "checkpoints" / "best.pt", weights_only=True)
    payload["model"] = {"unexpected": torch.zeros(1)}
    save_checkpoint({k: v for k, v in payload.items() if k not in ("format", "version")}, tmp_path / "mismatch.pt")
    (tmp_path / "empty_run").mkdir()
    cases = {
        "missing.pt": "no checkpoint at",
        "empty_run": "no checkpoint in",
        "truncated.pt": "truncated or corrupt",
        "foreign.pt": "not a minitrans checkpoint",
        "no_model.pt": "does not hold a usable model",
        "mismatch.pt": "does not hold a usable model",
    }
    for name, message in cases.items():
        with pytest.raises(CheckpointError, match=message):
            Translator.from_checkpoint(tmp_path / name, device="cpu")


def test_every_model_family_translates_from_a_checkpoint(tmp_path):
    for kind in ("transformer", "rnn", "rnn_attention"):
        translator = Translator.from_checkpoint(build_checkpoint(tmp_path / f"{kind}.pt", kind), device="cpu")
        for beam in (1, 3):
            cached = translator.translate(SRC[:3], DecodingOptions(beam_size=beam))
            assert cached == translator.translate(SRC[:3], DecodingOptions(beam_size=beam, use_cache=False))
            assert len(cached) == 3 and all(cached)


# -- input handling ---------------------------------------------------------------------------
@pytest.mark.parametrize("beam", [1, 2])
def test_blank_sentences_give_empty_lines_and_keep_alignment(copier, beam):
    # lengths differ, so the length-sorted batches must be put back in input order
    sentences = ["", SRC[2], "   ", SRC[0], "\t\u3000", SRC[1], ""]
    assert copier.translate(sentences, DecodingOptions(beam_size=beam, batch_hyp_tokens=40)) == [
        "",
        SRC[2],
        "",
        SRC[0],
        "",
        SRC[1],
        "",
    ]


def test_nbest_gives_typed_ranked_translations_whose_best_is_the_plain_translation(translator):
    sentences = [SRC[0], "", SRC[1]]
    plain = translator.translate(sentences, DecodingOptions(beam_size=3))
    found = translator.translate_nbest(sentences, DecodingOptions(beam_size=3), nbest=2)
    assert [len(hyps) for hyps in found] == [2, 0, 2]
    src_pieces = [len(ids) - 1 for ids in translator.encode(sentences)]  # without EOS
    for hyps, text, pieces in zip(found, plain, src_pieces):
        if not hyps:
            continue
        assert hyps[0].text == text
        assert hyps[0].score >= hyps[1].score
        for hyp in hyps:
            assert hyp.pieces == translator.tokenizer.tgt_pieces(translator.tokenizer.tgt.piece_to_id(hyp.pieces))
            assert len(hyp.alignment) == len(hyp.pieces)
            assert all(0 <= index < pieces for index in hyp.alignment)
    with pytest.raises(ValueError, match="nbest"):
        translator.translate_nbest(sentences, DecodingOptions(beam_size=2), nbest=3)


def test_forced_scoring_of_its_own_translation_gives_the_score_the_search_reported(translator):
    found = translator.translate_nbest(SRC[:3], DecodingOptions(beam_size=1), nbest=1)
    ids = [translator.tokenizer.tgt.piece_to_id(hyps[0].pieces) for hyps in found]
    ends = [hyps[0].is_finished for hyps in found]  # an untrained model may run to the length limit
    src = translator.encode(SRC[:3])
    for hyps, scored in zip(found, translator.score_encoded(src, ids, with_eos=ends)):
        assert scored.score == pytest.approx(hyps[0].score, abs=1e-5)
        assert scored.alignment == hyps[0].alignment
    by_text = translator.score(SRC[:2], TGT[:2])
    assert [len(s.token_log_probs) for s in by_text] == [
        len(ids) + 1 for ids in translator.tokenizer.encode_tgt(TGT[:2])
    ]
    with pytest.raises(ValueError, match="2 sentences but 1 translations"):
        translator.score(SRC[:2], TGT[:1])


def test_characters_never_seen_in_training_do_not_break_anything(translator):
    sentences = ["😀 Ω ÿ 漢字 \x00 \x07", "ein mann 🚲 fährt", "\u2028\u200b"]
    ids = translator.encode(sentences)
    assert all(translator.tokenizer.unk_id not in row for row in ids)  # byte fallback, no <unk>
    assert len(translator.translate(sentences)) == 3


def test_outputs_never_span_lines(translator, monkeypatch):
    newline = translator.tokenizer.tgt.piece_to_id("<0x0A>")
    word = translator.tokenizer.encode_tgt(["man"])[0]
    monkeypatch.setattr(
        Translator, "translate_encoded", lambda self, ids, *a, **k: [[*word, newline, *word]] * len(ids)
    )
    assert translator.translate(["ein mann\nfährt"]) == ["man man"]


def test_a_sentence_longer_than_the_model_is_cut_with_a_warning_naming_it(translator):
    long = " ".join(["ein mann fährt fahrrad ."] * 20)
    assert len(translator.encode([long])[0]) > translator.max_len
    with pytest.warns(UserWarning, match=r"sentence 3 has \d+ subwords, more than the model's max_len=32"):
        outputs = translator.translate(["", SRC[0], long, SRC[1]])
    assert len(outputs) == 4 and outputs[2]


def test_read_sentences_splits_on_newline_only():
    data = "\ufeffeins\r\nzwei\u2028drei\n\nvier\rfünf\n".encode()
    assert read_sentences(data) == ["eins", "zwei\u2028drei", "", "vier\rfünf"]
    assert read_sentences(b"a\nb") == ["a", "b"]
    assert read_sentences(b"") == []
    assert read_sentences(b"\n") == [""]


def test_invalid_utf8_names_the_line():
    with pytest.raises(InputError, match=r"in.txt, line 3: not valid UTF-8 \(byte 0xff at column 4\)"):
        read_sentences(b"one\ntwo\nabc\xff\nfour\n", "in.txt")


# -- attention --------------------------------------------------------------------------------
def test_attention_of_a_translation_labels_every_axis(translator):
    src_ids = translator.encode([SRC[0]])[0]
    hyp = translator.translate_encoded([src_ids], DecodingOptions(beam_size=3))[0]
    attention = translator.attention(src_ids, hyp)
    assert len(attention.maps["cross"]) == 2  # one per decoder layer
    heads, rows, cols = attention.maps["cross"][0].shape
    assert (heads, rows, cols) == (2, len(hyp) + 1, len(src_ids))
    assert len(attention.tgt_out_tokens) == rows and len(attention.src_tokens) == cols
    assert attention.tgt_in_tokens[0] == "<s>" and attention.tgt_out_tokens[-1] == "</s>"


def test_attention_pictures_are_numbered_and_skip_blank_lines(translator, tmp_path):
    options = DecodingOptions(beam_size=2)
    results = translate_lines(translator, [SRC[0], "", SRC[1]], options)
    written, notes = save_line_attention(translator, results, tmp_path / "attn.png")
    assert [result.text for result in results] == translator.translate([SRC[0], "", SRC[1]], options)
    assert written == [tmp_path / "attn.1.png", tmp_path / "attn.3.png"] and notes == []
    assert all(path.stat().st_size > 0 for path in written)
    written, _ = save_line_attention(translator, translate_lines(translator, [SRC[0]]), tmp_path / "one.png")
    assert written == [tmp_path / "one.png"]
    assert numbered_path("a/b", 2, 3) == Path("a/b.2.png")


def test_a_line_of_several_sentences_gets_a_picture_per_sentence(translator, tmp_path):
    """The maps are those of the sentences the line path translated, each its own best
    translation teacher-forced: the pictures follow the split, numbered by line, then sentence."""
    (result,) = translate_lines(translator, ["Ein mann fährt fahrrad. Eine frau liest ein buch."])
    assert len(result.sentences) == 2
    assert result.text == " ".join(best.text for best in result.sentence_translations)
    written, notes = save_line_attention(translator, [result], tmp_path / "attn.png")
    assert written == [tmp_path / "attn.1.png", tmp_path / "attn.2.png"] and notes == []
    two = translate_lines(translator, [SRC[2], result.source])
    written, _ = save_line_attention(translator, two, tmp_path / "many")
    assert [path.name for path in written] == ["many.1.png", "many.2.1.png", "many.2.2.png"]


def test_a_model_without_attention_gets_a_note_not_a_picture(tmp_path):
    translator = Translator.from_checkpoint(build_checkpoint(tmp_path / "rnn.pt", "rnn"), device="cpu")
    results = translate_lines(translator, [SRC[0]])
    written, notes = save_line_attention(translator, results, tmp_path / "attn.png")
    assert written == [] and notes == ["this model has no cross-attention to draw (a fixed-context RNN)"]
    assert not list(tmp_path.glob("attn*"))


# -- the script -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def script():
    return load_script("translate")


@pytest.fixture
def copying_script(script, copier, monkeypatch):
    """The script with the copy model behind every checkpoint it loads."""
    copier.model.steps = copier.model.decodes = 0
    monkeypatch.setattr(Translator, "from_checkpoint", classmethod(lambda cls, path, device: copier))
    return script


def test_script_translates_stdin_line_by_line_in_order(copying_script, run, monkeypatch, capsys):
    pipe_stdin(monkeypatch, f"{SRC[2]}\r\n\r\n   \n{SRC[1]}\n{SRC[0]}".encode())
    assert copying_script.main([str(run), "--beam", "2"]) == 0
    assert capsys.readouterr().out == f"{SRC[2]}\n\n\n{SRC[1]}\n{SRC[0]}\n"


def test_script_arguments_and_files_in_order(copying_script, run, tmp_path, capsys):
    assert copying_script.main([str(run), SRC[1], SRC[0]]) == 0
    assert capsys.readouterr().out.splitlines() == [SRC[1], SRC[0]]
    (tmp_path / "in.txt").write_bytes(f"{SRC[2]}\n\n{SRC[0]}\n".encode())
    assert copying_script.main([str(run), "-i", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.txt")]) == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == f"{SRC[2]}\n\n{SRC[0]}\n"


@pytest.mark.parametrize("flags, cached", [([], True), (["--no-cache"], False)])
def test_no_cache_recomputes_every_prefix(copying_script, copier, run, capsys, flags, cached):
    assert copying_script.main([str(run), SRC[0], *flags]) == 0
    assert capsys.readouterr().out == SRC[0] + "\n"
    model = copier.model
    assert (model.steps > 0, model.decodes > 0) == (cached, not cached)


def test_script_files_and_attention_pictures(script, run, translator, tmp_path, capsys):
    (tmp_path / "in.txt").write_bytes(f"{SRC[2]}\n\n{SRC[0]}\n".encode())
    args = [str(run), "-i", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.txt"), "--beam", "3"]
    assert script.main([*args, "--length-penalty", "1.0", "--attention", str(tmp_path / "a.png")]) == 0
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert lines == translator.translate([SRC[2], "", SRC[0]], DecodingOptions(beam_size=3, length_penalty=1.0))
    assert sorted(p.name for p in tmp_path.glob("a.*.png")) == ["a.1.png", "a.3.png"]


def test_attention_prints_the_file_it_writes(script, run, tmp_path, capsys):
    """Without a suffix matplotlib wrote ``attn.png`` while ``attention: attn`` was printed."""
    assert script.main([str(run), SRC[0], "--attention", str(tmp_path / "attn")]) == 0
    err = capsys.readouterr().err.splitlines()
    printed = [Path(line.removeprefix("attention: ")) for line in err if line.startswith("attention: ")]
    assert printed == [tmp_path / "attn.png"] and printed[0].is_file()


def test_attention_refuses_a_folder_or_a_format_it_cannot_draw(script, run, tmp_path, capsys):
    """Onto a folder it wrote ``FOLDER.png`` beside it, and an unknown suffix was a traceback
    after the translation: now each is one line, before anything is written."""
    (tmp_path / "maps").mkdir()
    for target, reason in (("maps", "it is a folder"), ("attn.v2", "cannot draw .v2 files")):
        assert script.main([str(run), SRC[0], "--attention", str(tmp_path / target)]) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and reason in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["maps"]


def test_the_length_penalty_defaults_to_the_runs_own(script, tmp_path, monkeypatch, capsys):
    """No --length-penalty: the one the run's own test was scored with (trainer.length_penalty,
    which a recipe may tune); the flag overrides it."""
    from minitrans.cli import translate as translate_command
    from minitrans.core.checkpoint import load_checkpoint, save_checkpoint

    best = build_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt", max_len=32)
    payload = load_checkpoint(best)
    payload["config"]["trainer"] |= {"length_penalty": 1.5, "max_output_ratio": 0.5}
    save_checkpoint(payload, best)
    used = []
    monkeypatch.setattr(
        translate_command, "translate_all", lambda t, s, args, options, draw=None: used.append(options) or []
    )
    for flags in ([], ["--length-penalty", "0.2"]):
        assert script.main([str(best), SRC[0], "--beam", "2", *flags]) == 0
    assert [options.length_penalty for options in used] == [1.5, 0.2]
    assert [options.max_output_ratio for options in used] == [0.5, 0.5]  # the run's own output ratio too
    assert "note: decoding with length penalty 0.2, not the run's own 1.5" in capsys.readouterr().err


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda run, tmp: [str(tmp / "nope"), "x"], "error: no checkpoint at"),
        (lambda run, tmp: [str(tmp / "bad.pt"), "x"], "error: .*truncated or corrupt"),
        (
            lambda run, tmp: [str(run), "-i", str(tmp / "bad_utf8.txt")],
            "error: .*bad_utf8.txt, line 2: not valid UTF-8",
        ),
        (lambda run, tmp: [str(run), "-i", str(tmp / "missing.txt")], "error: cannot read .*missing.txt"),
        (lambda run, tmp: [str(run), "x", "-o", str(tmp / "no" / "out.txt")], "error: cannot write"),
        (
            lambda run, tmp: [str(run), "x", "-o", str(tmp)],
            r"error: cannot write \S+: it is a folder; give a file name",
        ),
    ],
)
def test_script_reports_one_error_line(script, run, tmp_path, capsys, make_args, message):
    (tmp_path / "bad.pt").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "bad_utf8.txt").write_bytes(b"gut\nschlecht \xc3\x28\n")
    assert script.main(make_args(run, tmp_path)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and __import__("re").match(message, lines[0])


@pytest.mark.slow
def test_script_runs_as_a_program_and_reads_invalid_stdin(run):
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "translate.py"), str(run)],
        input=b"ok\n\xff\n",
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.decode().strip() == "error: stdin, line 2: not valid UTF-8 (byte 0xff at column 1)"
    assert b"Traceback" not in result.stderr


# -- the decoding benchmark --------------------------------------------------------------------
def test_benchmark_times_both_paths_and_checks_they_agree(translator, run, tmp_path, capsys, monkeypatch):
    from minitrans.bench import decoding as bench

    report = bench.benchmark_decoding(translator, sentences=SRC[:4], beams=(1, 2))
    assert (report["split"], report["sentences"]) == ("given", 4)
    assert [row["beam"] for row in report["results"]] == [1, 2]
    assert all(row["identical"] and row["differing_sentences"] == 0 for row in report["results"])
    for row in report["results"]:  # the rates and the ratio are the timings', not invented
        assert row["speedup"] == pytest.approx(row["uncached_s"] / row["cached_s"])
        assert row["cached_sents_per_s"] == pytest.approx(4 / row["cached_s"])
    assert "speed-up" in bench.format_table(report)
    # The command line, on the run's own corpus (stubbed: the real one is not needed here).
    monkeypatch.setattr(bench, "load_run_split", lambda config, split: (SRC[:2], TGT[:2], "test_2016_flickr"))
    assert bench.main([str(run), "--beams", "1", "--json", str(tmp_path / "b.json")]) == 0
    assert "test_2016_flickr (2 sentences" in capsys.readouterr().out
    assert json.loads((tmp_path / "b.json").read_text())["results"][0]["identical"] is True
    assert bench.main([str(tmp_path / "missing.pt")]) == 1
    assert capsys.readouterr().err.startswith("error: no checkpoint at")


def test_benchmark_reports_the_ratio_of_its_timings_and_any_disagreement(translator, monkeypatch):
    """A scripted clock (cached 0.5 s, uncached 2 s) and an uncached path that differs on one
    sentence: the report must say 4x, and not identical."""
    from minitrans.bench import decoding as bench

    ticks = iter([0.0, 0.5, 1.0, 3.0] * 2)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: next(ticks))

    def translate_encoded(src_ids, options):
        return [[5, 6] if options.use_cache or i != 2 else [5, 7] for i in range(len(src_ids))]

    monkeypatch.setattr(translator, "translate_encoded", translate_encoded)
    report = bench.benchmark_decoding(translator, sentences=SRC[:4], beams=(1, 3))
    for row in report["results"]:
        assert (row["cached_s"], row["uncached_s"], row["speedup"]) == (0.5, 2.0, 4.0)
        assert (row["cached_sents_per_s"], row["uncached_sents_per_s"]) == (8.0, 2.0)
        assert row["identical"] is False and row["differing_sentences"] == 1
    assert "no (1 differ)" in bench.format_table(report)


def test_script_prompts_on_a_terminal_until_an_empty_line(copying_script, run, monkeypatch, capsys):
    stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    monkeypatch.setattr(stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys, "stdin", stdin)
    lines = iter([SRC[1], SRC[0], "", SRC[2]])

    def fake_input(prompt):
        assert prompt == "> "
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    assert copying_script.main([str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == [SRC[1], SRC[0]]
    assert next(lines) == SRC[2]  # the empty line quit: the next line was never read


def test_script_prompt_quits_on_ctrl_d(copying_script, run, monkeypatch, capsys):
    stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    monkeypatch.setattr(stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys, "stdin", stdin)
    lines = iter([SRC[0]])

    def fake_input(prompt):
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    assert copying_script.main([str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == [SRC[0]]


def test_closed_stdin_is_one_error_line(script, run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", None)  # what Python makes of `translate.py RUN <&-`
    assert script.main([str(run)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: stdin is closed; give sentences as arguments or with --input FILE"]


def test_output_on_a_full_disk_leaves_the_old_file_whole(copying_script, run, tmp_path, monkeypatch, capsys):
    import errno

    import minitrans.core.utils as utils

    out = tmp_path / "out.txt"
    out.write_text("the previous translations\n", encoding="utf-8")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(utils.os, "fsync", full)  # the data is written, then the disk is found full
    assert copying_script.main([str(run), SRC[0], SRC[1], "-o", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "the previous translations\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left


# -- many lines, long references, quick help ------------------------------------------------------
class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as tqdm asks before drawing a bar."""

    def isatty(self) -> bool:
        return True


def test_many_input_lines_get_one_progress_bar_and_one_summary_of_unseen_words(
    script, copier, run, tmp_path, monkeypatch, capsys
):
    from minitrans.inference.coverage import TrainingRecord

    record = TrainingRecord.from_sentences(SRC, "de", "en", "multi30k")
    recorded = Translator(copier.model, copier.tokenizer, 32, torch.device("cpu"), record=record)
    monkeypatch.setattr(Translator, "from_checkpoint", classmethod(lambda cls, path, device: recorded))
    lines = [f"who {SRC[i % 3]}" for i in range(200)] + ["zebra und who ."] * 3 + SRC[:2]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stderr = Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert script.main([str(run), "-i", str(tmp_path / "in.txt")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(lines)
    err = stderr.getvalue()
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: 203 of 205 lines hold characters never seen in training (character, lines): o (203)",
        "warning: 203 of 205 lines hold words never seen in training (word, lines): who (203), zebra (3), und (3)",
        "warning: 3 of 205 lines are mostly words never seen in training: their translations are unlikely to mean "
        "anything: lines 201, 202, 203",
    ]
    bars = err.split("\r")
    assert any("translate: 100%" in bar and "205/205" in bar for bar in bars)  # one bar, counting lines
    assert all(bar.startswith("translate:") for bar in bars if bar.strip() and not bar.startswith("warning"))


def test_a_few_lines_still_get_their_warnings_line_by_line(script, copier, run, monkeypatch, capsys):
    from minitrans.inference.coverage import TrainingRecord

    record = TrainingRecord.from_sentences(SRC, "de", "en", "multi30k")
    recorded = Translator(copier.model, copier.tokenizer, 32, torch.device("cpu"), record=record)
    monkeypatch.setattr(Translator, "from_checkpoint", classmethod(lambda cls, path, device: recorded))
    assert script.main([str(run), SRC[0], "who fährt fahrrad ."]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: line 2: characters never seen in training (spelt as byte pieces the model never learnt): o",
        "warning: line 2: words never seen in training: who",
    ]


def recorded_copier(copier, monkeypatch, sources=SRC) -> Translator:
    """The copy model behind every checkpoint, with the record of a corpus of ``sources``."""
    from minitrans.inference.coverage import TrainingRecord

    record = TrainingRecord.from_sentences(sources, "de", "en", "multi30k")
    recorded = Translator(copier.model, copier.tokenizer, 32, torch.device("cpu"), record=record)
    monkeypatch.setattr(Translator, "from_checkpoint", classmethod(lambda cls, path, device: recorded))
    return recorded


def test_eleven_lines_keep_the_lower_casing_notice_and_the_unseen_characters(
    script, copier, run, tmp_path, monkeypatch, capsys
):
    """Past ten lines the lower-casing notice and the never-seen characters used to vanish
    (eleven lines: nothing on stderr); they are summarised instead, naming the lines."""
    recorded_copier(copier, monkeypatch)  # SRC is lower-case: the model lower-cases its input
    lines = ["Ein mann fährt fahrrad ."] * 9 + [SRC[1], "ein mann fährt fahrrad €", SRC[2]]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert script.main([str(run), "-i", str(tmp_path / "in.txt")]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 12
    assert captured.err.splitlines() == [
        "warning: 9 of 12 lines were lower-cased (the model trained on lower-case sources only): "
        "lines 1, 2, 3, 4, 5, 6, 7, 8, 9",
        "warning: 1 of 12 lines hold characters never seen in training (character, lines): € (1)",
    ]


def test_a_translation_cut_by_the_output_limit_says_so_in_text_mode(script, copier, run, monkeypatch, capsys):
    """Only ``--format jsonl`` used to tell (``"is_finished": false``)."""
    recorded_copier(copier, monkeypatch)
    assert script.main([str(run), SRC[0], "--max-output-len", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    assert captured.err.splitlines() == [
        "warning: line 1: the translation was cut by the output-length limit before it ended: it is incomplete"
    ]
    many = [SRC[0]] * 11 + [SRC[1]]
    assert script.main([str(run), *many, "--max-output-len", "3"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: 12 of 12 lines (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12): the translation was cut by the "
        "output-length limit before it ended: it is incomplete"
    ]


def test_ordinary_sentences_warn_of_nothing(script, copier, run, monkeypatch, capsys):
    """The warnings about what training never showed stay silent where it did show it."""
    recorded_copier(copier, monkeypatch)
    for flags in ([], ["--format", "jsonl"], ["--beam", "3"]):
        assert script.main([str(run), SRC[0], "zwei hunde spielen .", *flags]) == 0
        captured = capsys.readouterr()
        assert captured.err == "" and captured.out.count("\n") == 2
    assert script.main([str(run), *SRC, *SRC]) == 0  # the summary of many lines too
    assert capsys.readouterr().err == ""


def test_a_reference_longer_than_the_model_is_scored_with_a_warning(script, run, tmp_path, capsys):
    reference = " ".join(["a man rides a bike ."] * 75)  # 450 words, far more pieces than max_len=32
    (tmp_path / "ref.txt").write_text(reference + "\n", encoding="utf-8")
    assert script.main([str(run), SRC[0], "--score-reference", str(tmp_path / "ref.txt"), "--format", "jsonl"]) == 0
    captured = capsys.readouterr()
    (scored,) = [json.loads(line) for line in captured.out.splitlines()]
    assert len(scored["pieces"]) == 32  # the first 31 pieces and EOS: all the model's positions hold
    assert any("the translation has" in w and "scoring its first 31" in w for w in scored["warnings"])
    assert "warning: line 1: the translation has" in captured.err


def test_forced_scoring_of_a_long_target_warns_in_the_python_api_too(translator):
    with pytest.warns(UserWarning, match="target 1 has .* subwords"):
        (scored,) = translator.score([SRC[0]], [" ".join(TGT * 20)])
    assert len(scored.token_log_probs) == translator.max_len  # 31 pieces and EOS


@pytest.mark.slow
@pytest.mark.parametrize("name", ["translate", "evaluate"])
def test_help_takes_under_a_cpu_second_and_imports_no_torch(name):
    code = (
        "import resource, runpy, sys\n"
        f"sys.argv = ['{name}.py', '--help']\n"
        "try:\n"
        f"    runpy.run_path(r'{REPO / 'scripts' / (name + '.py')}', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print('torch' in sys.modules, usage.ru_utime + usage.ru_stime, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    loaded, seconds = done.stderr.split()
    assert "--max-output-ratio" in done.stdout and "1.5 for a model without" in " ".join(done.stdout.split())
    assert loaded == "False" and float(seconds) < 1.0, done.stderr


def test_a_checkpoint_is_read_back_with_its_configuration_typed(tmp_path):
    from minitrans.core.config import TrainConfig

    translator = Translator.from_checkpoint(build_checkpoint(tmp_path / "best.pt"), device="cpu")
    assert isinstance(translator.run_config, TrainConfig) and translator.run_config.model.num_heads == 2
    assert (translator.source_language, translator.target_language) == ("de", "en")


def test_a_checkpoint_whose_configuration_has_an_unknown_key_is_refused_naming_it(tmp_path):
    from minitrans.core.checkpoint import load_checkpoint

    payload = load_checkpoint(build_checkpoint(tmp_path / "best.pt"))
    payload["config"]["trainer"]["renamed_knob"] = 1
    save_checkpoint(payload, tmp_path / "renamed.pt")
    with pytest.raises(CheckpointError, match=r"renamed\.pt: .*renamed_knob"):
        Translator.from_checkpoint(tmp_path / "renamed.pt", device="cpu")


@pytest.fixture(scope="module")
def cheating_run(tmp_path_factory) -> Path:
    """An untrained Transformer saved as trained without the causal mask and with a scale of 2."""
    from helpers.checkpoints import save_untrained

    from minitrans.core.config import DataConfig, TransformerConfig
    from minitrans.data.tokenizer import Tokenizer

    folder = tmp_path_factory.mktemp("cheating")
    model_cfg = TransformerConfig(
        d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=2, max_len=32,
        causal_mask=False, attention_scale="2",
    )  # fmt: skip
    data = DataConfig(name="multi30k", src_lang="de", tgt_lang="en")
    save_untrained(folder / "checkpoints" / "best.pt", model_cfg, Tokenizer.train(SRC, TGT, vocab_size=300), data)
    return folder


def test_the_card_names_the_teaching_switches_a_model_trained_with(script, cheating_run, run, capsys):
    assert script.main([str(cheating_run), "--info"]) == 0
    card = capsys.readouterr().out
    (line,) = [line for line in card.splitlines() if line.startswith("teaching:")]
    assert "model.causal_mask=false" in line and "model.attention_scale=2" in line
    assert script.main([str(run), "--info"]) == 0
    assert "teaching:" not in capsys.readouterr().out  # the notes' model has none
    from minitrans.export.hub_card import hub_card

    shared = hub_card(Translator.from_checkpoint(cheating_run, device="cpu"), resolve_checkpoint(cheating_run))
    assert "teaching switches (`model.attention_scale=2`, `model.causal_mask=false`)" in shared


@pytest.mark.parametrize("flags", [[], ["--no-cache"], ["--score-reference", "REF"]])
def test_translating_or_scoring_with_no_causal_mask_says_the_model_cheats(
    script, cheating_run, run, tmp_path, capsys, flags
):
    (tmp_path / "ref.txt").write_text(TGT[0] + "\n", encoding="utf-8")
    flags = [str(tmp_path / "ref.txt") if flag == "REF" else flag for flag in flags]
    assert script.main([str(cheating_run), SRC[0], *flags]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "model.causal_mask=false" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: ") and "cheats" in warned[0]
    assert script.main([str(run), SRC[0], *flags]) == 0
    assert "causal_mask" not in capsys.readouterr().err

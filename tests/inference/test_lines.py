"""Lines as users give them: sentence splitting, joined n-best lists, warnings, JSON Lines, forced
scoring and the model card, through the library and through scripts/translate.py (in process)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.checkpoints import SRC, build_checkpoint
from helpers.scripts import load_script, pipe_stdin

from minitrans.core.decoding_options import DecodingOptions
from minitrans.inference.base import Translation
from minitrans.inference.coverage import TrainingRecord
from minitrans.inference.decoding import length_normalizer
from minitrans.inference.lines import CUT_OUTPUT, join, score_lines, split_sentences, translate_lines
from minitrans.inference.translator import Translator

TWO = "Ein mann fährt fahrrad. Eine frau liest ein buch."
HYPOTHESIS_KEYS = {"text", "pieces", "score", "log_prob", "alignment", "is_finished"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    record = TrainingRecord.from_sentences(SRC, "de", "en", "multi30k")
    build_checkpoint(folder / "checkpoints" / "best.pt", max_len=32, extra={"training_data": record.to_state()})
    return folder


@pytest.fixture(scope="module")
def translator(run) -> Translator:
    return Translator.from_checkpoint(run, device="cpu")


@pytest.fixture(scope="module")
def script():
    return load_script("translate")


def test_split_sentences_knows_abbreviations_and_leaves_one_sentence_alone():
    assert split_sentences("The dog sleeps. Mr. Smith reads! Does it rain?") == [
        "The dog sleeps.",
        "Mr. Smith reads!",
        "Does it rain?",
    ]
    assert split_sentences("Am 3. Mai liest z.B. der Mann. Die Frau schläft.", "de") == [
        "Am 3. Mai liest z.B. der Mann.",
        "Die Frau schläft.",
    ]
    assert split_sentences("  one  sentence   with spaces ") == ["  one  sentence   with spaces "]
    assert split_sentences("   ") == [] and split_sentences("") == []
    assert split_sentences("Ein Satz.", "xx") == ["Ein Satz."]  # a language without rules: English ones


def test_lines_keep_their_places_blank_ones_included(translator):
    lines = [SRC[0], "", "   ", TWO]
    results = translate_lines(translator, lines, DecodingOptions(beam_size=2), nbest=2)
    assert [r.source for r in results] == lines
    assert [r.text for r in results[1:3]] == ["", ""] and results[1].hypotheses == []
    assert results[0].text == translator.translate([SRC[0]], DecodingOptions(beam_size=2))[0]


def test_a_multi_sentence_line_is_translated_sentence_by_sentence(translator):
    first, second = split_sentences(TWO, "de")
    (joined,) = translate_lines(translator, [TWO], DecodingOptions(beam_size=2), nbest=2)
    assert joined.sentences == [first, second]
    assert joined.text == " ".join(t for t in translator.translate([first, second], DecodingOptions(beam_size=2)) if t)
    apart = translator.translate_nbest([first, second], DecodingOptions(beam_size=2), nbest=2)
    best = joined.hypotheses[0]
    assert best.pieces == apart[0][0].pieces + apart[1][0].pieces
    offset = len(translator.encode([first])[0]) - 1  # the first sentence's pieces, without EOS
    assert joined.source_pieces[:offset] == translator.tokenizer.src_pieces(translator.encode([first])[0][:-1])
    assert best.alignment == apart[0][0].alignment + [i + offset for i in apart[1][0].alignment]
    (whole,) = translate_lines(translator, [TWO], split=False)
    assert whole.sentences == [TWO]


def test_join_sums_log_probs_and_normalises_by_the_whole_length():
    a = [Translation("A.", ["▁A", "."], -1.0, -2.0, [0, 1]), Translation("B.", ["▁B", "."], -2.0, -3.0, [1, 1])]
    b = [Translation("C", ["▁C"], -0.5, -1.0, [0], is_finished=False)]
    first, second = join([a, b], [0, 2], length_penalty=1.0, nbest=2)
    assert (first.text, first.pieces, first.alignment) == ("A. C", ["▁A", ".", "▁C"], [0, 1, 2])
    assert first.log_prob == -3.0 and first.score == pytest.approx(-3.0 / length_normalizer(4, 1.0))
    assert not first.is_finished
    assert second.text == "B. C"  # a sentence with fewer hypotheses repeats its last
    assert join([a], [0], length_penalty=1.0, nbest=2) == a  # one sentence: its own hypotheses


def test_warnings_name_unseen_words_and_cut_sentences(translator):
    (seen, unseen, long) = translate_lines(translator, [SRC[1], "ein zebra fährt fahrrad .", " ".join(SRC * 3)])
    for result in (seen, unseen, long):  # an untrained model may run to the output limit: then it says so
        assert (CUT_OUTPUT in result.notes) == (not result.hypotheses[0].is_finished)
    seen.warnings, unseen.warnings = [[w for w in r.warnings if w != CUT_OUTPUT] for r in (seen, unseen)]
    assert seen.warnings == [] and seen.unseen_words == []
    assert unseen.unseen_words == ["zebra"] and unseen.warnings == ["words never seen in training: zebra"]
    assert any("more than the model's max_len=32" in w for w in long.warnings)
    (two,) = translate_lines(translator, ["Ein zebra fährt. Ein gnu liest ein buch."])
    lowered = "the model trained on lower-case sources only: the input is lower-cased"  # its corpus is
    assert [w for w in two.warnings if not w.endswith(CUT_OUTPUT)] == [
        f"sentence 1: {lowered}",
        "sentence 1: words never seen in training: zebra",
        f"sentence 2: {lowered}",
        "sentence 2: characters never seen in training (spelt as byte pieces the model never learnt): g",
        "sentence 2: words never seen in training: gnu",
    ]


def test_json_objects_have_the_documented_schema(translator):
    for result in translate_lines(translator, [SRC[0], "", TWO], DecodingOptions(beam_size=3), nbest=3):
        obj = json.loads(json.dumps(result.to_json(), ensure_ascii=False))
        assert set(obj) == {"source", "text", "sentences", "source_pieces", "hypotheses", "unseen_words", "warnings"}
        assert obj["text"] == (obj["hypotheses"][0]["text"] if obj["hypotheses"] else "")
        for hyp in obj["hypotheses"]:
            assert set(hyp) == HYPOTHESIS_KEYS
            assert isinstance(hyp["score"], float) and math.isfinite(hyp["score"])
            assert len(hyp["alignment"]) == len(hyp["pieces"])
            assert all(0 <= i < len(obj["source_pieces"]) for i in hyp["alignment"])


def test_forced_scoring_of_lines_matches_the_search(translator):
    results = translate_lines(translator, SRC[:3], split=False)
    scored = score_lines(translator, SRC[:3], [r.text for r in results])
    for result, forced in zip(results, scored):
        assert forced.pieces[-1] == "</s>" and len(forced.piece_log_probs) == len(forced.pieces)
        if result.hypotheses[0].is_finished and forced.pieces[:-1] == result.hypotheses[0].pieces:
            assert forced.score == pytest.approx(result.hypotheses[0].score, abs=1e-5)
    with pytest.raises(ValueError, match="3 input lines but 1"):
        score_lines(translator, SRC[:3], ["x"])


def test_the_line_path_returns_a_cut_sentence_as_a_note_and_raises_no_warning(translator):
    """Notes are data: nothing below the line path warns (so nothing has to silence it); the
    Python API's text methods are where a caller hears of a cut sentence."""
    import warnings

    long = " ".join(SRC * 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (translated,) = translate_lines(translator, [long])
        (scored,) = score_lines(translator, [long], ["a man rides a bike ."])
    assert not [w for w in caught if "subwords" in str(w.message)]
    length = len(translator.encode([long])[0])
    cut = [CUT_OUTPUT] if not translated.hypotheses[0].is_finished else []  # an untrained model's output
    assert translated.notes == [f"{length} subwords, more than the model's max_len=32; translating its first 31", *cut]
    assert scored.warnings[0] == f"{length} subwords, more than the model's max_len=32; scoring its first 31"
    with pytest.warns(UserWarning, match=rf"sentence 2 has {length} subwords"):
        translator.translate_nbest([SRC[0], long])


# -- the command line ------------------------------------------------------------------------------
def test_script_jsonl_gives_one_object_per_input_line_in_order(script, run, monkeypatch, capsys):
    lines = [SRC[0], "", TWO, "ein zebra ."]
    pipe_stdin(monkeypatch, "\n".join(lines).encode() + b"\n")
    assert script.main([str(run), "--nbest", "3", "--scores", "--format", "jsonl"]) == 0
    captured = capsys.readouterr()
    objects = [json.loads(line) for line in captured.out.splitlines()]
    assert [obj["source"] for obj in objects] == lines
    assert [len(obj["hypotheses"]) for obj in objects] == [3, 0, 3, 3]
    scores = [hyp["score"] for hyp in objects[0]["hypotheses"]]
    assert scores == sorted(scores, reverse=True)
    assert "warning: line 4: words never seen in training: zebra" in captured.err


def test_script_text_mode_nbest_and_scores(script, run, translator, monkeypatch, capsys):
    pipe_stdin(monkeypatch, f"{SRC[0]}\n\n{SRC[1]}\n".encode())
    assert script.main([str(run), "--nbest", "2", "--beam", "3", "--scores"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[2:4] == ["", ""]  # two lines per input line, blank ones too
    found = translator.translate_nbest([SRC[0], SRC[1]], DecodingOptions(beam_size=3), nbest=2)
    assert out[0] == f"{found[0][0].score:.4f}\t{found[0][0].text}"
    assert out[5] == f"{found[1][1].score:.4f}\t{found[1][1].text}"
    pipe_stdin(monkeypatch, f"{SRC[0]}\n".encode())
    assert script.main([str(run)]) == 0
    assert capsys.readouterr().out == translator.translate([SRC[0]])[0] + "\n"  # text mode as before


def test_script_scores_references(script, run, translator, tmp_path, capsys):
    (tmp_path / "src.txt").write_text(f"{SRC[0]}\n{SRC[1]}\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("a man rides a bike .\na woman .\n", encoding="utf-8")
    args = [str(run), "-i", str(tmp_path / "src.txt"), "--score-reference", str(tmp_path / "ref.txt")]
    assert script.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    expected = translator.score(SRC[:2], ["a man rides a bike .", "a woman ."])
    assert [float(line.split("\t")[0]) for line in out] == pytest.approx([e.score for e in expected], abs=1e-4)
    assert out[1].split("\t")[2].endswith(f"</s>={expected[1].token_log_probs[-1]:.3f}")
    assert script.main([*args, "--format", "jsonl"]) == 0
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert objects[0]["reference"] == "a man rides a bike ." and objects[0]["pieces"][-1] == "</s>"
    (tmp_path / "short.txt").write_text("one line\n", encoding="utf-8")
    assert script.main([*args[:-1], str(tmp_path / "short.txt")]) == 1
    assert capsys.readouterr().err.strip().endswith("short.txt has 1 lines but the input has 2")


def test_script_info_and_old_checkpoints(script, run, tmp_path, monkeypatch, capsys):
    assert script.main([str(run), "--info"]) == 0
    out = capsys.readouterr().out
    assert "languages:  German → English (de→en)" in out and "9 training pairs" in out
    old = build_checkpoint(tmp_path / "old.pt", max_len=32)  # no record, and Multi30k cannot be rebuilt offline
    assert script.main([str(old), "--info"]) == 0
    assert "coverage unknown" in capsys.readouterr().out
    pipe_stdin(monkeypatch, f"{SRC[0]}\n".encode())
    assert script.main([str(old)]) == 0
    assert "holds no record of its training data" in capsys.readouterr().err


def test_script_refuses_more_hypotheses_than_beams(script, run, capsys):
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(run), "x", "--nbest", "3", "--beam", "2"])
    assert exit_info.value.code == 2
    assert "--nbest 3 needs --beam 3 or more" in capsys.readouterr().err


def test_attention_translates_as_the_text_path_does_then_draws_each_sentence(script, run, tmp_path, capsys):
    """``--attention`` goes through the line path: a line of several sentences is split, and
    gets the same translation and the same notices (lower-casing, unseen words, a cut
    sentence) as without it; then a picture per sentence translated."""
    (tmp_path / "in.txt").write_text(f"{TWO}\nEin zebra fährt. Ein gnu liest.\n{' '.join(SRC * 3)}\n", encoding="utf-8")
    args = [str(run), "-i", str(tmp_path / "in.txt"), "--beam", "2"]
    assert script.main(args) == 0
    plain = capsys.readouterr()
    assert script.main([*args, "--attention", str(tmp_path / "a.png")]) == 0
    drawn = capsys.readouterr()
    assert drawn.out == plain.out and len(drawn.out.splitlines()) == 3
    notices = [line for line in plain.err.splitlines() if line.startswith("warning:")]
    assert "warning: line 2: sentence 1: words never seen in training: zebra" in notices
    assert any(line.startswith("warning: line 2: sentence 1: the model trained on lower-case") for line in notices)
    assert any("more than the model's max_len=32" in line for line in notices)
    assert [line for line in drawn.err.splitlines() if line.startswith("warning:")] == notices
    pictures = [line.removeprefix("attention: ") for line in drawn.err.splitlines() if line.startswith("attention:")]
    assert pictures[:4] == [str(tmp_path / f"a.{n}.png") for n in ("1.1", "1.2", "2.1", "2.2")]
    assert all(Path(picture).is_file() for picture in pictures)


@pytest.mark.parametrize("flag", ["--score-reference", "--input", "--output", "--attention"])
def test_an_empty_file_name_is_refused_not_ignored(script, run, flag, capsys):
    """``--score-reference ""`` translated instead of scoring, exit 0, without a word."""
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(run), *([] if flag == "--input" else ["x"]), flag, ""])
    assert exit_info.value.code == 2
    assert f"{flag}: an empty file name" in capsys.readouterr().err


def test_interactive_banner_names_the_language_pair_and_the_prompt_edits_lines(script, run, monkeypatch, capsys):
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    monkeypatch.setattr(stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys, "stdin", stdin)
    lines = iter(["ein zebra ."])

    def fake_input(prompt):
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    monkeypatch.delitem(sys.modules, "readline", raising=False)
    assert script.main([str(run)]) == 0
    err = capsys.readouterr().err
    assert "German → English" in err and "words never seen in training: zebra" in err
    assert "readline" in sys.modules  # imported for input()'s line editing and history

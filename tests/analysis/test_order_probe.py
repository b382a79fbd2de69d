"""Tests for the order probe (minitrans/data/probes.py's order sets, minitrans/analysis/order_probe.py)."""

from __future__ import annotations

import pytest

from minitrans.analysis.order_probe import oriented_sets, role_words, score_order_probe
from minitrans.core.config import DataConfig
from minitrans.data.lexicon import NOUNS, VERBS
from minitrans.data.probes import order_set, order_sets

SETS = oriented_sets(DataConfig(), 30)
GOLD = {source: gold for pairs in SETS for source, gold in pairs}


def test_an_order_set_is_four_orders_of_the_same_words_with_four_translations():
    made = order_set(NOUNS["dog"], NOUNS["man"], VERBS["sees"], VERBS["sleeps"])
    assert made.pairs == [
        ("The dog that the man sees sleeps.", "Der Hund, den der Mann sieht, schläft."),
        ("The man that the dog sees sleeps.", "Der Mann, den der Hund sieht, schläft."),
        ("The dog that sees the man sleeps.", "Der Hund, der den Mann sieht, schläft."),
        ("The man that sees the dog sleeps.", "Der Mann, der den Hund sieht, schläft."),
    ]
    assert len({tuple(sorted(en.lower().split())) for en, _ in made.pairs}) == 1
    # Two feminine nouns: "die Frau, die die Katze sieht" is both gaps, so no set.
    assert order_set(NOUNS["woman"], NOUNS["cat"], VERBS["sees"], VERBS["sleeps"]) is None


def test_order_sets_are_distinct_and_every_set_has_four_translations():
    sets = order_sets(30, seed=1)
    assert len(sets) == 30 and len({s.pairs[0] for s in sets}) == 30
    assert all(len({de for _, de in s.pairs}) == 4 for s in sets)


def test_role_words_are_the_nouns_and_their_case_marks():
    golds = [de for _, de in order_set(NOUNS["dog"], NOUNS["man"], VERBS["sees"], VERBS["sleeps"]).pairs]
    assert role_words(golds) == {"hund", "mann", "den", "der"}


def test_a_perfect_translator_scores_one():
    probe = score_order_probe(SETS, lambda sources: [GOLD[s] for s in sources])
    assert probe.share_right == 1.0 and probe.exact == probe.first_noun == probe.sentences == 4 * len(SETS)


def test_a_translator_that_swaps_the_roles_scores_zero():
    twins = {pairs[i][0]: pairs[j][1] for pairs in SETS for i, j in enumerate((1, 0, 3, 2))}
    probe = score_order_probe(SETS, lambda sources: [twins[s] for s in sources])
    assert probe.share_right == 0.0 and probe.another == probe.sentences and probe.first_noun == 0


def test_wrong_verbs_keep_the_roles_right_and_a_wrong_case_loses_them():
    verbs_wrong = lambda sources: [GOLD[s].replace(",", ", foo", 1) for s in sources]  # noqa: E731
    assert score_order_probe(SETS, verbs_wrong).share_right == 1.0
    (source, gold) = SETS[0][0]
    wrong_case = " ".join("die" if word in ("der", "den", "das") else word for word in gold.split())
    probe = score_order_probe([SETS[0]], lambda sources: [wrong_case if s == source else GOLD[s] for s in sources])
    assert (probe.right, probe.neither, probe.exact) == (3, 1, 3)


def test_a_bag_of_words_translator_scores_at_most_a_quarter_and_half_its_first_nouns():
    """Any one translation for all four sentences of a set, here each set's first gold."""
    first = {source: pairs[0][1] for pairs in SETS for source, _ in pairs}
    probe = score_order_probe(SETS, lambda sources: [first[s] for s in sources])
    assert probe.share_right == pytest.approx(0.25) and probe.first_noun == pytest.approx(2 * len(SETS))
    assert probe.sets_alike == len(SETS)


def test_german_to_english_runs_get_the_sets_the_other_way_round():
    flipped = oriented_sets(DataConfig(src_lang="de", tgt_lang="en"), 30)
    assert flipped[0][0] == (SETS[0][0][1], SETS[0][0][0])


def test_the_script_writes_each_runs_probe_and_skips_another_corpus(tmp_path, capsys):
    import json

    from helpers.checkpoints import build_checkpoint, build_export_checkpoint
    from helpers.scripts import load_script

    run = tmp_path / "run"
    build_export_checkpoint(run / "checkpoints" / "last.pt")  # a de->en model: skipped
    generated = tmp_path / "generated"
    build_checkpoint(generated / "checkpoints" / "last.pt", data=DataConfig(num_train=50))
    script = load_script("order_probe")
    assert script.main([str(run), str(generated), "--sets", "2"]) == 0
    printed = capsys.readouterr().out
    assert "skipped, corpus 'multi30k'" in printed and not (run / "order_probe.json").exists()
    summary = json.loads((generated / "order_probe.json").read_text())
    assert summary["order_probe_sentences"] == 8 and 0.0 <= summary["order_probe_right"] <= 1.0
    assert len(summary["order_probe_examples"]) == 4
    assert script.main([str(run), "--sets", "2"]) == 1  # nothing measured


def test_the_script_probes_a_shared_folder_and_a_ctranslate2_export_as_their_run(tmp_path, capsys, monkeypatch):
    """Both translate as the run does, so they score as it does (each result beside its model)."""
    monkeypatch.setenv("MINITRANS_CACHE_DIR", str(tmp_path / "cache"))  # not the user's cache
    import importlib.util
    import json

    from helpers.checkpoints import build_checkpoint
    from helpers.scripts import load_script

    from minitrans.export.hf_export import export_hf

    run = tmp_path / "generated"
    build_checkpoint(run / "checkpoints" / "best.pt", data=DataConfig(num_train=50, cache_dir=str(tmp_path / "cache")))
    folders = [export_hf(run, tmp_path / "shared")[0]]
    if importlib.util.find_spec("ctranslate2") is not None:
        from minitrans.export.ct2_export import export_ctranslate2

        folders.append(export_ctranslate2(run, tmp_path / "ct2"))
    script = load_script("order_probe")
    assert script.main([str(run), *map(str, folders), "--sets", "2"]) == 0, capsys.readouterr().err
    expected = json.loads((run / "order_probe.json").read_text())
    for folder in folders:
        assert json.loads((folder / "order_probe.json").read_text()) == expected, folder


def test_the_script_refuses_in_one_line_what_it_cannot_or_must_not_write(tmp_path, capsys, monkeypatch):
    from helpers.checkpoints import build_checkpoint
    from helpers.scripts import load_script

    script = load_script("order_probe")
    run = tmp_path / "run"
    build_checkpoint(run / "checkpoints" / "last.pt", data=DataConfig(num_train=50))
    assert script.main([str(run), "--sets", "1"]) == 0
    assert script.main([str(run), "--sets", "1"]) == 0  # its own result is replaced
    capsys.readouterr()

    loose = tmp_path / "loose"
    build_checkpoint(loose / "model.pt", data=DataConfig(num_train=50))
    (loose / "order_probe.json").write_text('{"my": "notes"}\n')  # a user's file beside a .pt
    unwritable = tmp_path / "unwritable"
    build_checkpoint(unwritable / "checkpoints" / "last.pt", data=DataConfig(num_train=50))
    (unwritable / "order_probe.json").mkdir()
    for checkpoint, words in [(loose / "model.pt", "not written by order_probe.py"), (unwritable, "order_probe.json")]:
        assert script.main([str(run), str(checkpoint), "--sets", "1"]) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], captured.err
        assert str(run) not in captured.out  # refused before anything was measured
    assert (loose / "order_probe.json").read_text() == '{"my": "notes"}\n'

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("minitrans.core.utils.write_atomic", refuse)  # a read-only run folder
    assert script.main([str(run), "--sets", "1"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: cannot write") and "order_probe.json: Permission denied" in line
    monkeypatch.undo()

    for seed in ("-1", str(2**64)):
        with pytest.raises(SystemExit) as stop:
            script.main([str(run), "--seed", seed])
        assert stop.value.code == 2
        assert "--seed" in capsys.readouterr().err

"""compare.py on summaries it makes itself: finding runs and refused jobs, the Markdown table,
the heads × d_k grid and heatmap, BLEU by length for any set of runs, and the script."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO

from minitrans.runs.compare import compare, comparison_table, find_runs, heads_dk_grid, plot_bleu_by_length, run_labels
from minitrans.runs.summary import RunSummary, summary_line

PNG = b"\x89PNG\r\n\x1a\n"


def summary(kind="transformer", heads=4, d_k=None, bleu=20.0, name=None, splits=("test",)) -> dict:
    model = (
        {"kind": kind, "d_model": 64, "num_heads": heads, "d_k": d_k}
        if kind == "transformer"
        else {"kind": kind, "d_hidden": 32}
    )
    scores = {
        "bleu": bleu,
        "chrf": bleu + 20,
        "bleu_lowercase": bleu + 1,
        "by_length": [
            {"bucket": "1-10", "count": 50, "bleu": bleu + 5},
            {"bucket": "11-20", "count": 30, "bleu": bleu},
            {"bucket": "51+", "count": 2, "bleu": bleu - 10},
        ],
    }
    return {
        "name": name or kind,
        "model": kind,
        "params": 123456,
        "steps": 300,
        "train_seconds": 95.4,
        "valid": {"bleu": bleu - 1, "chrf": bleu + 19, "loss": 2.5},
        "test": scores,
        "test_splits": {split: scores | {"bleu": bleu + i} for i, split in enumerate(splits)},
        "config": {"model": model, "data": {"name": "generated"}},
    }


def write_run(folder: Path, data: dict | None) -> Path:
    (folder / ".hydra").mkdir(parents=True)
    if data is not None:
        (folder / "summary.json").write_text(json.dumps(data))
    return folder


@pytest.fixture
def sweep(tmp_path) -> Path:
    """A 2 × 2 heads × d_k sweep with one combination refused and one job still running."""
    root = tmp_path / "multirun" / "2026-01-01" / "12-00-00"
    write_run(root / "0_model.d_k=8,model.num_heads=1", summary(heads=1, d_k=8, bleu=10.0))
    write_run(root / "1_model.d_k=16,model.num_heads=1", summary(heads=1, d_k=16, bleu=14.0))
    write_run(root / "2_model.d_k=8,model.num_heads=2", summary(heads=2, d_k=8, bleu=18.0))
    refused = write_run(root / "10_model.d_k=16,model.num_heads=3,model.d_model=64", None)
    (refused / "train.log").write_text(
        "[2026-01-01 12:00:00,000][minitrans][ERROR] - skipping job model.num_heads=3: "
        "model.num_heads: d_model=64 is not divisible by num_heads=3\n"
    )
    write_run(root / "11_model.d_k=16,model.num_heads=2", None)
    return root


def test_runs_are_found_in_job_order_and_jobs_without_summary_are_explained(sweep):
    runs, skipped = find_runs([sweep])
    assert [run.job.split("_")[0] for run in runs] == ["0", "1", "2"]
    assert [job.folder.name.split("_")[0] for job in skipped] == ["10", "11"]
    assert skipped[0].reason == "model.num_heads: d_model=64 is not divisible by num_heads=3"
    assert "no summary.json" in skipped[1].reason
    assert runs[0].num_heads == 1 and runs[0].d_k == 8 and runs[0].overrides == "model.d_k=8,model.num_heads=1"


def test_table_has_one_row_per_run_and_a_column_pair_per_test_split(tmp_path):
    write_run(tmp_path / "a", summary(heads=8, d_k=None, splits=("test", "hard")))
    write_run(tmp_path / "b", summary(kind="rnn", splits=("test",)))
    runs, _ = find_runs([tmp_path])
    table = comparison_table(runs)
    lines = table.strip().splitlines()
    assert lines[0].startswith(
        "| run | model | heads | d_k | d_model | parameters | steps | training time | valid BLEU"
    )
    assert lines[0].endswith("| test BLEU | test chrF | hard BLEU | hard chrF |")
    assert len(lines) == 4
    transformer, rnn = lines[2], lines[3]
    assert "| 8 | 8 | 64 | 123,456 | 300 | 95 s | 19.00 | 20.00 | 40.00 | 21.00 | 40.00 |" in transformer  # d_k derived
    assert rnn.startswith("| b | rnn | – | – |") and rnn.endswith("| 20.00 | 40.00 | – | – |")


def test_heads_dk_grid_averages_repeats_and_leaves_missing_combinations_empty(sweep):
    write_run(sweep / "3_model.d_k=8,model.num_heads=2,seed=1", summary(heads=2, d_k=8, bleu=22.0))
    runs, _ = find_runs([sweep])
    heads, d_ks, grid, counts, params = heads_dk_grid(runs)
    assert heads == [1, 2] and d_ks == [8, 16]
    assert grid[0].tolist() == [10.0, 14.0]
    assert grid[1, 0] == 20.0 and counts[1, 0] == 2 and np.isnan(grid[1, 1])
    assert params[0, 0] == 123456 and params[1, 1] == 0


def test_no_heatmap_when_heads_and_d_k_do_not_vary(tmp_path):
    write_run(tmp_path / "0_model=transformer", summary())
    write_run(tmp_path / "1_model=rnn", summary(kind="rnn"))
    (tmp_path / "heads_dk_bleu.png").write_bytes(PNG)  # from an earlier comparison
    result = compare([tmp_path])
    assert [path.name for path in result.files] == ["comparison.md", "bleu_by_length.png"]
    assert result.notes == ["no heads_dk_bleu.png: the Transformer runs do not vary num_heads or d_k"]
    assert not (tmp_path / "heads_dk_bleu.png").exists()


def test_labels_are_names_made_unique_by_their_overrides(sweep):
    runs, _ = find_runs([sweep])
    assert run_labels(runs)[0] == "transformer (d_k=8, num_heads=1)"
    runs[1].summary.name = "big"
    assert run_labels(runs)[1] == "big"


def test_bleu_by_length_works_for_any_runs_and_skips_runs_without_buckets(tmp_path):
    write_run(tmp_path / "x", summary(name="Transformer"))
    write_run(tmp_path / "y", summary(kind="rnn", name="RNN, fixed C"))
    no_buckets = summary(kind="rnn_attention")
    del no_buckets["test"]["by_length"]
    write_run(tmp_path / "z", no_buckets)
    runs, _ = find_runs([tmp_path])
    path = plot_bleu_by_length(runs, tmp_path / "by_length.png", title="bottleneck")
    assert path.read_bytes()[:8] == PNG
    assert plot_bleu_by_length(runs[2:], tmp_path / "none.png") is None
    for run in runs[:2]:  # every sentence in one bucket: nothing to plot
        run.summary.test["by_length"] = run.summary.test["by_length"][:1]
    assert plot_bleu_by_length(runs, tmp_path / "one_bucket.png") is None


def test_compare_writes_table_and_plots_into_the_sweep_folder(sweep):
    result = compare([sweep])
    assert [path.name for path in result.files] == [
        "comparison.md",
        "heads_dk_bleu.png",
        "heads_matched_bleu.png",  # 1 × 16 and 2 × 8 share h·d_k = 16
        "bleu_by_length.png",
    ]
    assert all(path.parent == sweep for path in result.files)
    assert (sweep / "comparison.md").read_text() == result.table
    assert "`10_model.d_k=16,model.num_heads=3,model.d_model=64`: model.num_heads: d_model=64" in result.table
    assert (sweep / "heads_dk_bleu.png").read_bytes()[:8] == PNG


def load_script():
    spec = importlib.util.spec_from_file_location("compare_script", REPO / "scripts" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_prints_the_table_and_fails_clearly_without_runs(sweep, tmp_path, capsys):
    script = load_script()
    out = tmp_path / "report"
    assert (
        script.main(
            [
                str(sweep / "0_model.d_k=8,model.num_heads=1"),
                str(sweep / "1_model.d_k=16,model.num_heads=1"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| run | model |" in printed and f"wrote {out / 'comparison.md'}" in printed
    assert (out / "heads_dk_bleu.png").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert script.main([str(empty)]) == 1
    assert "no summary.json under" in capsys.readouterr().err


def write_eval(
    run: Path, split: str, beam: int, bleu: float, sentences: int = 82, limit: int | None = None, name=None, **fields
) -> None:
    """What evaluate.py writes into RUN/eval/ (``fields``: length_penalty, bleu_tokenize ...), as
    ``name``.json (default: the split and beam, as it named them before names said more)."""
    report = {"split": split, "beam": beam, "sentences": sentences, "limit": limit, "bleu": bleu, "chrf": bleu + 20}
    report |= {"length_penalty": 0.6, "max_output_ratio": 1.5, "bleu_tokenize": "13a"} | fields
    (run / "eval").mkdir(exist_ok=True)
    name = name or f"{split}.beam{beam}{f'.first{limit}' if limit else ''}"
    (run / "eval" / f"{name}.json").write_text(json.dumps(report))


def test_evaluate_results_reach_the_table_and_steps_read_like_parameters(tmp_path):
    a = write_run(tmp_path / "a", summary() | {"steps": 3000})
    b = write_run(tmp_path / "b", summary(kind="rnn"))
    write_eval(a, "test", 5, 31.25)
    write_eval(a, "test", 1, 29.5, sentences=10, limit=10)
    write_eval(b, "test", 5, 12.0)
    (a / "eval" / "broken.json").write_text("{")  # skipped, not fatal
    runs, _ = find_runs([tmp_path])
    lines = comparison_table(runs).strip().splitlines()
    assert lines[0].endswith(
        "| BLEU of evaluate.py's test.beam1.ratio1.5.tok13a | BLEU of evaluate.py's test.beam5.lp0.6.ratio1.5.tok13a |"
    )
    assert lines[2].endswith("| 29.50 (n=10) | 31.25 |")  # a --limit run says so
    assert lines[3].endswith("| – | 12.00 |")
    assert "| 123,456 | 3,000 |" in lines[2]


def test_reports_made_differently_each_get_a_column_that_names_them(tmp_path):
    """A char-tokenised report, one with cut outputs and the plain one of the same split and
    beam are three figures: each in its own column, named by what made it, none shown as another."""
    a = write_run(tmp_path / "a", summary())
    write_eval(a, "test", 5, 1.94, name="test.beam5.tokchar", bleu_tokenize="char")
    write_eval(a, "test", 5, 0.47, name="test.beam5.lp0.6", max_output_ratio=0.1)  # the run's own lp was 2
    write_eval(a, "test", 5, 0.70)
    write_eval(a, "test", 5, 0.31, name="test.beam5.averaged", checkpoint=str(a / "checkpoints" / "averaged.pt"))
    write_eval(a, "test", 5, 0.52, name="test.beam5.lp2", length_penalty=2.0)
    write_eval(a, "test", 1, 0.66, length_penalty=2.0)  # greedy: the length penalty changes nothing
    table = comparison_table(find_runs([tmp_path])[0]).strip().splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    row = [cell.strip() for cell in table[2].strip("|").split("|")]
    shown = {name: value for name, value in zip(header, row) if name.startswith("BLEU of evaluate.py's ")}
    assert shown == {
        "BLEU of evaluate.py's test.beam5.lp0.6.ratio1.5.tokchar": "1.94",
        "BLEU of evaluate.py's test.beam5.lp0.6.ratio0.1.tok13a": "0.47",
        "BLEU of evaluate.py's test.beam5.lp0.6.ratio1.5.tok13a": "0.70",
        "BLEU of evaluate.py's test.beam5.averaged.lp0.6.ratio1.5.tok13a": "0.31",
        "BLEU of evaluate.py's test.beam5.lp2.ratio1.5.tok13a": "0.52",
        "BLEU of evaluate.py's test.beam1.ratio1.5.tok13a": "0.66",
    }


def test_each_model_kind_keeps_its_colour_across_plots(tmp_path):
    from minitrans.analysis.viz import MODEL_COLORS
    from minitrans.runs.compare import line_styles

    one = line_styles(["transformer", "rnn", "rnn_attention"])
    other = line_styles(["rnn_attention", "transformer", "rnn", "transformer"])  # another order, a repeat
    assert [color for color, _, _ in one] == [MODEL_COLORS[k] for k in ("transformer", "rnn", "rnn_attention")]
    assert other[1][0] == other[3][0] == MODEL_COLORS["transformer"]
    assert other[1][1:] != other[3][1:]  # two Transformers: told apart by marker and line style
    sweep = line_styles(["transformer"] * 3)  # one kind: colour tells the runs apart
    assert len({color for color, _, _ in sweep}) == 3


def test_a_truncated_summary_is_skipped_with_a_reason_and_alone_is_one_error_line(tmp_path, capsys):
    good = write_run(tmp_path / "sweep" / "a", summary(bleu=12.0))
    bad = write_run(tmp_path / "sweep" / "b", None)
    (bad / "summary.json").write_text(json.dumps(summary())[:40])  # cut mid-write by a full disk, say
    runs, skipped = find_runs([tmp_path / "sweep"])
    assert [run.folder for run in runs] == [good]
    assert [job.folder for job in skipped] == [bad] and "unreadable summary.json" in skipped[0].reason
    spec = importlib.util.spec_from_file_location("compare_script", REPO / "scripts" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(bad / "summary.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no summary.json under")


def with_value(key: str, value) -> dict:
    """summary() with the value at the dotted ``key`` replaced."""
    data = summary(bleu=12.0)
    *parents, last = key.split(".")
    node = data
    for parent in parents:
        node = node[parent]
    node[last] = value
    return data


@pytest.mark.parametrize(
    "key, value",
    [
        ("valid", []),
        ("test.bleu", "12.5"),
        ("test_splits.test.chrf", "x"),
        ("steps", "300"),
        ("params", None),
        ("train_seconds", True),
    ],
)
def test_a_summary_of_the_wrong_shape_is_skipped_with_a_reason_not_a_traceback(tmp_path, capsys, key, value):
    good = write_run(tmp_path / "sweep" / "a", summary(bleu=12.0))
    bad = write_run(tmp_path / "sweep" / "b", with_value(key, value))
    result = compare([tmp_path / "sweep"])
    assert [run.folder for run in result.runs] == [good]
    assert f"unreadable summary.json ({bad / 'summary.json'}: {key} is " in result.table


def test_a_null_score_is_a_missing_one():
    assert RunSummary.from_dict(with_value("valid.bleu", None)).valid["bleu"] is None


def test_a_summary_nested_too_deeply_is_skipped_with_a_reason(tmp_path):
    good = write_run(tmp_path / "sweep" / "a", summary(bleu=12.0))
    bad = write_run(tmp_path / "sweep" / "b", None)
    (bad / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    runs, skipped = find_runs([tmp_path / "sweep"])
    assert [run.folder for run in runs] == [good]
    assert [job.folder for job in skipped] == [bad] and "nested too deeply" in skipped[0].reason


def pair_summary(src: str, tgt: str, **kwargs) -> dict:
    data = summary(**kwargs)
    data["config"]["data"] |= {"src_lang": src, "tgt_lang": tgt}
    return data


def test_runs_of_different_language_pairs_are_compared_only_within_their_pair(tmp_path):
    write_run(tmp_path / "0_data.tgt_lang=de,model.num_heads=1", pair_summary("en", "de", heads=1, d_k=8))
    write_run(tmp_path / "1_data.tgt_lang=de,model.num_heads=2", pair_summary("en", "de", heads=2, d_k=8))
    write_run(tmp_path / "2_data.tgt_lang=fr,model.num_heads=1", pair_summary("en", "fr", heads=1, d_k=8))
    write_run(tmp_path / "3_data.tgt_lang=fr,model.num_heads=2", pair_summary("en", "fr", heads=2, d_k=8))
    write_run(tmp_path / "4_data.tgt_lang=fr,model.num_heads=3", None)  # refused
    result = compare([tmp_path])
    assert result.table.endswith(
        "Jobs without a summary:\n\n- `4_data.tgt_lang=fr,model.num_heads=3`: no summary.json (refused, failed or still running)\n"
    )
    assert result.notes[0].startswith("runs of 2 language pairs (en→de, en→fr)")
    german, french = result.table.split("## en→fr")
    assert german.startswith("## en→de") and "0_data" in german and "2_data" not in german
    assert "2_data" in french and "1_data" not in french
    names = {path.name for path in result.files}
    assert {"heads_dk_bleu.en-de.png", "heads_dk_bleu.en-fr.png", "bleu_by_length.en-fr.png"} <= names
    assert "heads_dk_bleu.png" not in names  # no figure mixes the pairs


def test_length_buckets_keep_their_sentence_counts_when_runs_disagree():
    from minitrans.runs.compare_plots import bucket_ticks

    same = [[{"bucket": "1-10", "count": 50}], [{"bucket": "1-10", "count": 50}]]
    assert bucket_ticks(["1-10"], same) == ["1-10\n(n=50)"]
    other = [[{"bucket": "1-10", "count": 50}, {"bucket": "11-20", "count": 30}], [{"bucket": "1-10", "count": 12}]]
    assert bucket_ticks(["1-10", "11-20"], other) == ["1-10\n(n=12–50)", "11-20\n(n=30)"]


def test_the_matched_sweep_gives_one_line_at_its_fixed_h_dk(tmp_path):
    from minitrans.runs.compare_plots import matched_series, plot_matched_heads

    for i, heads in enumerate((1, 2, 4, 8, 16)):
        write_run(tmp_path / f"{i}_model.num_heads={heads}", summary(heads=heads, d_k=128 // heads, bleu=10.0 + i))
    runs, _ = find_runs([tmp_path])
    series = matched_series(runs)
    assert list(series) == [128]
    assert [(point.heads, point.d_k) for point in series[128]] == [(1, 128), (2, 64), (4, 32), (8, 16), (16, 8)]
    assert plot_matched_heads(runs, tmp_path / "matched.png").read_bytes()[:8] == PNG
    assert plot_matched_heads(runs[:1], tmp_path / "alone.png") is None  # one head count: no line


def test_the_matched_sweep_over_seeds_gives_each_head_count_its_mean_and_range(tmp_path):
    from minitrans.runs.compare_plots import matched_series

    for i, (heads, bleu) in enumerate(((1, 60.0), (1, 64.0), (1, 62.5), (8, 70.0), (8, 74.0))):
        write_run(tmp_path / f"{i}_model.num_heads={heads},seed={i}", summary(heads=heads, d_k=128 // heads, bleu=bleu))
    runs, _ = find_runs([tmp_path])
    one, eight = matched_series(runs)[128]
    assert (one.heads, one.runs, one.low, one.high) == (1, 3, 60.0, 64.0)
    assert one.bleu == pytest.approx(62.1666, abs=1e-3)
    assert (eight.runs, eight.bleu, eight.low, eight.high) == (2, 72.0, 70.0, 74.0)


def test_an_optuna_search_folder_gives_its_best_trial_as_one_command_line(tmp_path):
    import yaml

    for i, (heads, bleu) in enumerate(((2, 30.0), (4, 35.0), (1, 20.0))):
        run = write_run(tmp_path / f"{i}_model.num_heads={heads},trainer.lr=0.003", summary(heads=heads, bleu=bleu))
        overrides = [f"model.num_heads={heads}", "trainer.lr=0.003", "experiment=heads_dk_search", "data.root=a b"]
        (run / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (tmp_path / "optimization_results.yaml").write_text(
        yaml.safe_dump(
            {"name": "optuna", "best_params": {"model.num_heads": 4, "trainer.lr": 0.003}, "best_value": 34.0}
        )
    )
    result = compare([tmp_path])
    command = "python scripts/train.py model.num_heads=4 trainer.lr=0.003 experiment=heads_dk_search 'data.root=a b'"
    assert f"best trial: 1_model.num_heads=4,trainer.lr=0.003 (valid BLEU 34.00): {command}" in result.notes
    assert command in result.table


def test_compare_help_imports_nothing_heavy_at_module_level():
    """--help under a CPU-second: the library (matplotlib, numpy, torch through summaries) is
    imported only once there is work to do."""
    import ast

    tree = ast.parse((REPO / "scripts" / "compare.py").read_text(encoding="utf-8"))
    top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert top <= {"__future__", "argparse", "sys"}
    with pytest.raises(SystemExit) as done:
        load_script().main(["--help"])
    assert done.value.code == 0


@pytest.mark.slow
def test_compare_help_takes_under_a_cpu_second():
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare.py"), "--help"], capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0 and "heads_matched_bleu.png" in done.stdout
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 1.0


AER_OF_LAYER_1_HEAD_2 = {"aer_best": 0.049, "aer_best_layer": 1, "aer_best_head": 2, "aer_by_layer": [0.218, 0.041]}


def test_the_best_heads_aer_stands_beside_bleu(tmp_path):
    write_run(tmp_path / "a", summary(heads=4, d_k=16) | {"alignment": AER_OF_LAYER_1_HEAD_2})
    single = {"aer_best": 0.31, "aer_best_layer": 0, "aer_best_head": 0, "aer_by_layer": [0.31]}
    write_run(tmp_path / "b", summary(kind="rnn_attention") | {"alignment": single})
    write_run(tmp_path / "d", summary(heads=2, d_k=32))  # another corpus: nothing measured
    lines = comparison_table(find_runs([tmp_path])[0]).strip().splitlines()
    assert lines[0].endswith("| test BLEU | test chrF | best head AER (layer, head) | AER by layer |")
    assert lines[1].endswith("|---:|---:|")
    transformer, attention_rnn, unmeasured = lines[2:]
    assert transformer.endswith("| 20.00 | 40.00 | 0.049 (L2 H3) | 0.218 / 0.041 |")
    assert attention_rnn.endswith("| 0.310 (L1 H1) | 0.310 |")
    assert unmeasured.endswith("| 20.00 | 40.00 | – | – |")


def test_the_fixed_context_rnn_says_it_has_no_attention_to_measure(tmp_path):
    write_run(tmp_path / "a", summary(heads=4, d_k=16) | {"alignment": AER_OF_LAYER_1_HEAD_2})
    write_run(tmp_path / "c", summary(kind="rnn"))
    lines = comparison_table(find_runs([tmp_path])[0]).strip().splitlines()
    assert len(lines) == 4 and lines[3].endswith("| no attention | – |")
    # without any alignment record the table keeps its columns
    other = tmp_path / "other"
    write_run(other / "c", summary(kind="rnn"))
    assert "AER" not in comparison_table(find_runs([other])[0])


def test_the_summary_line_says_when_validation_bleu_is_of_a_sample():
    summary = RunSummary(
        model="transformer",
        params=10,
        steps=3,
        train_seconds=1.0,
        test={"bleu": 20.0, "chrf": 40.0},
        valid={"bleu": 16.7, "loss": 2.0, "sentences": 200, "of": 1000},
    )
    assert "valid BLEU 16.70 (on 200 of 1,000 sentences) loss 2.000" in summary_line(summary, "run")
    summary.valid |= {"sentences": 1000}
    assert "valid BLEU 16.70 loss 2.000" in summary_line(summary, "run")


def test_the_summary_line_names_how_its_bleu_was_tokenised():
    test = {"bleu": 20.0, "chrf": 40.0, "bleu_tokenize": "zh", "bleu_signature": "nrefs:1|tok:zh|norm:nfc"}
    valid = {"bleu": 16.7, "loss": 2.0}
    summary = RunSummary(model="transformer", params=10, steps=3000, train_seconds=1.0, test=test, valid=valid)
    assert "test BLEU 20.00 chrF 40.00 [tokenize zh, norm:nfc] | valid" in summary_line(summary, "run")
    assert "| 3,000 steps," in summary_line(summary, "run")
    summary.test = {"bleu": 20.0, "chrf": 40.0}  # a summary written before the tokenizer was recorded
    assert "test BLEU 20.00 chrF 40.00 | valid" in summary_line(summary, "run")


def test_a_fifo_as_summary_json_is_skipped_not_waited_on(tmp_path):
    import os
    import signal

    good = write_run(tmp_path / "sweep" / "a", summary(bleu=12.0))
    bad = write_run(tmp_path / "sweep" / "b", None)
    os.mkfifo(bad / "summary.json")  # nobody writes to it: reading it would wait forever
    signal.alarm(20)
    try:
        runs, skipped = find_runs([tmp_path / "sweep"])
    finally:
        signal.alarm(0)
    assert [run.folder for run in runs] == [good]
    assert [job.folder for job in skipped] == [bad] and "a FIFO, not a regular file" in skipped[0].reason


def run_with_translations(folder: Path, translate) -> Path:
    """A run of a small generated corpus whose test translations are ``translate(reference)``."""
    from dataclasses import asdict

    from minitrans.core.config import DataConfig, TrainConfig
    from minitrans.data.corpus import load_run_split

    data = DataConfig(name="generated", num_train=50, num_valid=10, num_test=40, corpus_seed=7)
    config = json.loads(json.dumps(asdict(TrainConfig(model={}, data=data))))
    _, references, _ = load_run_split(config, "test")
    write_run(folder, summary() | {"config": config})
    (folder / "translations").mkdir()
    (folder / "translations" / "test.hyp.txt").write_text("".join(translate(r) + "\n" for r in references))
    return folder


def test_compare_tests_each_run_against_the_first_by_paired_bootstrap(tmp_path, capsys):
    """Two runs of one test set: the BLEU and chrF difference with its interval, p-value and
    verdict; a run against a copy of itself: a difference of 0, not larger than chance."""
    worse = run_with_translations(tmp_path / "sweep" / "a_worse", lambda ref: " ".join(ref.split()[:2]))
    run_with_translations(tmp_path / "sweep" / "b_better", lambda ref: ref)
    spec = importlib.util.spec_from_file_location("compare_script", REPO / "scripts" / "compare.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(tmp_path / "sweep")]) == 0
    printed = capsys.readouterr().out
    assert "Paired bootstrap against `transformer (a_worse)`" in printed and "40 sentences" in printed
    lines = [line for line in printed.splitlines() if line.lstrip().startswith(("- BLEU", "- chrF"))]
    assert len(lines) == 2 and all(": larger than chance" in line for line in lines), printed
    assert "95 % interval +" in lines[0] and "p = 0.001" in lines[0]
    assert "Paired bootstrap" in (tmp_path / "sweep" / "comparison.md").read_text()
    import shutil

    shutil.copytree(worse, tmp_path / "again" / "a_worse")
    shutil.copytree(worse, tmp_path / "again" / "b_copy")
    assert script.main([str(tmp_path / "again")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith(("- BLEU", "- chrF"))]
    assert len(lines) == 2 and all("+0.00, 95 % interval +0.00 to +0.00" in line for line in lines)
    assert all("not larger than chance" in line for line in lines)


def test_runs_that_cannot_be_paired_are_named_with_the_reason(tmp_path):
    run_with_translations(tmp_path / "sweep" / "a", lambda ref: ref)
    other = run_with_translations(tmp_path / "sweep" / "b", lambda ref: ref)
    (other / "translations" / "test.hyp.txt").write_text("one line\n")
    result = compare([tmp_path / "sweep"])
    assert "Paired bootstrap" not in result.table
    assert any(
        "no paired test of transformer (b)" in note and "1 lines for 40 references" in note for note in result.notes
    )

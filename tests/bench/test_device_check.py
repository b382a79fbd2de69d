"""The prepared accelerator check: a stage that fails or overruns is reported and the next one
still runs; the table is read from what each stage wrote; and, end to end on the CPU, the three
stages run through the project's own commands."""

from __future__ import annotations

import json
import sys

import pytest

from minitrans.bench.device_check import Stage, format_report, gather, main, run_stage, stages


@pytest.mark.slow  # starts three small Python processes
def test_a_failing_or_overrunning_stage_is_reported_and_the_next_still_runs(tmp_path):
    failing = Stage("fails", [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], timeout=60)
    slow = Stage("slow", [sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    fine = Stage("fine", [sys.executable, "-c", "print('ok')"], timeout=60)
    for stage in (failing, slow, fine):
        run_stage(stage, tmp_path)
    assert failing.status.startswith("failed (exit 3") and "boom" in (tmp_path / "fails.log").read_text()
    assert slow.status.startswith("stopped at its limit")
    assert slow.seconds < 10
    assert fine.status == "ok"


def test_the_table_reads_each_stage_s_figures(tmp_path):
    (tmp_path / "default_run").mkdir()
    summary = {"device": "cuda", "steps": 3000, "train_seconds": 61.2, "test": {"bleu": 97.61}}
    (tmp_path / "default_run" / "summary.json").write_text(json.dumps(summary))
    step = {
        "machine": {"device_name": "NVIDIA H100", "dtype": "bf16 autocast"},
        "data": {"description": "Multi30k"},
        "sizes": [
            {
                "size": "small",
                "tokens_per_second": {"minitrans": 90000.0, "torch": 60000.0},
                "ratio_vs_torch": {"minitrans": {"median": 1.5}},
            },
        ],
    }
    (tmp_path / "multi30k_step.json").write_text(json.dumps(step))
    decoding = {
        "device": "cuda:0",
        "sentences": 1000,
        "results": [{"beam": 5, "cached_sents_per_s": 210.0, "speedup": 3.2, "identical": True}],
    }
    (tmp_path / "decoding.json").write_text(json.dumps(decoding))
    done = [Stage(name, ["x"], 1, seconds=12.0, status="ok") for name in ("default_run", "multi30k_step", "decoding")]
    text = format_report(gather(tmp_path, done, "cpu"))
    assert "test BLEU 97.61, 3,000 steps, 61 s of training, 12 s wall" in text
    assert "- small: 90,000 target tokens/s against nn.Transformer's 60,000 (1.50×)" in text
    assert "- beam 5: 210.0 sentences/s cached, 3.20× uncached; the same outputs" in text


def test_a_stage_that_wrote_nothing_leaves_its_figures_out(tmp_path):
    done = [Stage("default_run", ["x"], 1, seconds=3.0, status="failed (exit 1, see default_run.log)")]
    report = gather(tmp_path, done, "cpu")
    assert "default_run" in report["stages"] and "multi30k_step" not in report and "decoding" not in report
    assert "| default_run | failed (exit 1, see default_run.log) | 3 s |" in format_report(report)


def test_the_stages_name_the_device_and_an_empty_cache(tmp_path):
    names = {stage.name: stage for stage in stages(tmp_path, "cuda", quick=False)}
    assert list(names) == ["default_run", "multi30k_step", "decoding"]
    assert "trainer.device=cuda" in names["default_run"].command
    assert names["default_run"].extra_env["MINITRANS_CACHE_DIR"] == str(tmp_path / "empty_cache")
    assert "--precision" in names["multi30k_step"].command and "bf16" in names["multi30k_step"].command
    assert "--device=cuda" in names["decoding"].command
    assert sum(stage.timeout for stage in names.values()) <= 600  # one call of the lent machine


def test_a_folder_with_runs_in_it_is_refused(tmp_path, capsys):
    (tmp_path / "default_run").mkdir()
    with pytest.raises(SystemExit) as exit:
        main(["--out", str(tmp_path)])
    assert exit.value.code == 2 and "is not an empty folder" in capsys.readouterr().err


def test_a_file_as_the_folder_is_refused_and_left_alone(tmp_path, capsys):
    kept = tmp_path / "notes.txt"
    kept.write_text("mine")
    with pytest.raises(SystemExit) as exit:
        main(["--out", str(kept)])
    assert exit.value.code == 2 and "is not an empty folder" in capsys.readouterr().err
    assert kept.read_text() == "mine"


@pytest.mark.slow  # three training and decoding processes, about a minute
def test_the_quick_check_runs_every_stage_on_the_cpu(tmp_path):
    out = tmp_path / "check"
    assert main(["--out", str(out), "--device", "cpu", "--quick"]) == 0
    report = json.loads((out / "device_check.json").read_text())
    assert {stage["status"] for stage in report["stages"].values()} == {"ok"}
    assert report["default_run"]["steps"] == 40 and report["decoding"]["sentences"] == 20
    assert "minitrans" in report["multi30k_step"]["sizes"]["tiny"]["tokens_per_second"]

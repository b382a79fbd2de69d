"""The ``debug`` config group users get: ``debug=tiny`` runs the whole pipeline in seconds, and
``debug=overfit`` learns a few batches by heart (the training loss goes near zero)."""

from __future__ import annotations

import json

import pytest
from helpers.runs import scalars


@pytest.mark.slow
def test_debug_tiny_trains_and_tests_in_seconds(tmp_path, run_train):
    run = tmp_path / "run"
    result = run_train(
        "debug=tiny", "trainer.progress=false", f"data.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={run}"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 40 and summary["train_seconds"] < 60 and summary["params"] < 100_000
    # validation BLEU is of trainer.eval_sentences=4 of the 12 sentences: the record and the line say so
    valid = summary["valid"]
    assert (valid["sentences"], valid["of"]) == (4, 12) and "tok:13a" in valid["bleu_signature"]
    assert "nc:6" in valid["chrf_signature"]
    assert f"valid BLEU {valid['bleu']:.2f} (on 4 of 12 sentences) loss" in result.stdout


@pytest.mark.slow
def test_debug_overfit_drives_the_training_loss_near_zero(tmp_path, run_train):
    run = tmp_path / "run"
    result = run_train(
        "debug=overfit", "trainer.progress=false", f"data.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={run}"
    )
    assert result.returncode == 0, result.stderr
    losses = scalars(run, "train/loss_label_smoothed")  # plain cross-entropy here: label_smoothing=0
    assert losses[25] > 1.0 and losses[300] < 0.05, losses


@pytest.mark.parametrize("debug", ["tiny", "overfit"])
@pytest.mark.parametrize("kind", ["transformer", "rnn", "rnn_attention"])
def test_every_debug_recipe_takes_every_model_kind_at_a_tiny_size(tiny_config, kind, debug):
    from minitrans.models.build import VocabSizes, build_model
    from minitrans.models.interface import count_parameters

    cfg = tiny_config(f"debug={debug}", f"model={kind}")
    assert cfg.model.kind == kind and cfg.data.num_train <= 120
    assert count_parameters(build_model(cfg.model, VocabSizes(400, 400))) < 100_000

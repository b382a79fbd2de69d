"""compare.py's learning curves (minitrans/runs/compare_curves.py) on runs it makes itself: the
validation loss and BLEU read back from TensorBoard events, the steps to a stated BLEU, and
legends that name what the sweep changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

from minitrans.runs.compare import compare
from minitrans.runs.compare_curves import STATED_BLEU, steps_to, validation_curves, varying_labels
from minitrans.runs.run_set import find_runs

PNG = b"\x89PNG\r\n\x1a\n"


def write_run(folder: Path, curve: list[tuple[int, float, float]] | None) -> Path:
    """A finished run folder; ``curve``: (step, valid cross-entropy, valid BLEU) logged as the trainer does."""
    folder.mkdir(parents=True)
    summary = {"name": "transformer", "model": "transformer", "params": 1000, "steps": 300,
               "valid": {"bleu": 1.0, "chrf": 2.0, "loss": 3.0}, "test": {"bleu": 1.0, "chrf": 2.0},
               "config": {"model": {"kind": "transformer", "d_model": 64, "num_heads": 4}}}  # fmt: skip
    (folder / "summary.json").write_text(json.dumps(summary))
    if curve is not None:
        with SummaryWriter(str(folder)) as writer:
            for step, loss, bleu in curve:
                writer.add_scalar("valid/cross_entropy", loss, step)
                writer.add_scalar("valid/bleu", bleu, step)
                writer.add_scalar("attention_entropy/enc_self_layer1", loss, step)  # any values: their mean is read
                writer.add_scalar("attention_entropy/cross_layer1", bleu, step)
    return folder


MASKED = [(100, 3.0, 5.0), (200, 2.0, 28.0), (300, 1.5, 41.0)]
UNMASKED = [(100, 1.0, 2.0), (200, 0.2, 1.0), (300, 0.05, 0.5)]


def test_the_curves_come_back_from_the_events_and_name_what_the_sweep_changed(tmp_path):
    write_run(tmp_path / "0_model.causal_mask=true,model.d_k=16", MASKED)
    write_run(tmp_path / "1_model.causal_mask=false,model.d_k=16", UNMASKED)
    runs, _ = find_runs([tmp_path])
    curves = validation_curves(runs[1].folder)
    assert [step for step, _ in curves["loss"]] == [100, 200, 300]
    assert [loss for _, loss in curves["loss"]] == pytest.approx([1.0, 0.2, 0.05])  # float32 in the events
    assert [step for step, _ in curves["bleu"]] == [100, 200, 300]
    assert [e for _, e in curves["entropy"]] == pytest.approx([(1.0 + 2.0) / 2, (0.2 + 1.0) / 2, (0.05 + 0.5) / 2])
    assert varying_labels(runs) == ["causal_mask=true", "causal_mask=false"]  # d_k is the same in both
    assert steps_to(validation_curves(runs[0].folder)["bleu"], STATED_BLEU) == 300
    assert steps_to(curves["bleu"], STATED_BLEU) is None
    result = compare([tmp_path])
    figure = tmp_path / "learning_curves.png"
    assert figure in result.files and figure.read_bytes().startswith(PNG)


def test_no_curves_without_two_validations(tmp_path):
    write_run(tmp_path / "0_model.positions=none", None)
    write_run(tmp_path / "1_model.positions=learned", [(100, 2.0, 10.0)])
    result = compare([tmp_path])
    assert not (tmp_path / "learning_curves.png").exists()
    assert not any("learning_curves" in note for note in result.notes)

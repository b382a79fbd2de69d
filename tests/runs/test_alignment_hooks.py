"""A training run measures its attention against the embedded corpus' gold alignments: per-head
AER on the test split in summary.json, and at each validation the best head's AER and a
layer x head heatmap in TensorBoard (minitrans/runs/reporting.py, tblog.py)."""

from __future__ import annotations

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.runs import reporting
from minitrans.training.trainer import train


def test_a_tiny_run_records_per_head_aer_in_its_summary_and_tensorboard(tmp_path, tiny_config):
    cfg = tiny_config(
        "trainer.max_steps=4", "trainer.eval_every=2", "trainer.warmup_steps=2", "trainer.sample_sentences=2"
    )
    threads = torch.get_num_threads()
    try:
        summary = train(cfg, tmp_path / "run")
    finally:
        torch.set_num_threads(threads)
    alignment = summary.alignment
    layers, heads = cfg.model.num_decoder_layers, cfg.model.num_heads
    assert alignment["aer_sentences"] > 0
    assert len(alignment["aer_by_head"]) == layers and all(len(row) == heads for row in alignment["aer_by_head"])
    values = [v for row in alignment["aer_by_head"] for v in row] + alignment["aer_by_layer"]
    assert all(0.0 <= v <= 1.0 for v in values)
    best = alignment["aer_by_head"][alignment["aer_best_layer"]][alignment["aer_best_head"]]
    assert alignment["aer_best"] == best == min(values[: layers * heads])
    events = EventAccumulator(str(tmp_path / "run"), size_guidance={"scalars": 0, "images": 0})
    events.Reload()
    assert [event.step for event in events.Scalars("valid/aer_best_head")] == [2, 4]
    assert all(0.0 <= event.value <= 1.0 for event in events.Scalars("valid/aer_best_head"))
    assert [event.step for event in events.Images("alignment/aer_by_head")] == [2, 4]
    overlays = [tag for tag in events.Tags()["images"] if tag.startswith("alignment/gold_vs_attention/")]
    assert overlays and all([event.step for event in events.Images(tag)] == [2, 4] for tag in overlays)


def test_the_attention_measures_leave_training_bitwise_unchanged(tmp_path, tiny_config, monkeypatch):
    """The AER, its heatmap and the gold overlays only read the weights: a run without them
    ends with the same weights, bit for bit."""
    cfg = tiny_config(
        "trainer.max_steps=4", "trainer.eval_every=2", "trainer.warmup_steps=2", "trainer.sample_sentences=2"
    )
    threads = torch.get_num_threads()
    try:
        train(cfg, tmp_path / "measured")
        monkeypatch.setattr(reporting, "split_alignment", lambda *args, **kwargs: None)
        monkeypatch.setattr(reporting, "log_gold_overlays", lambda *args, **kwargs: 0)
        train(cfg, tmp_path / "unmeasured")
    finally:
        torch.set_num_threads(threads)
    weights = {
        name: torch.load(tmp_path / name / "checkpoints" / "last.pt", weights_only=False)["model"]
        for name in ("measured", "unmeasured")
    }
    assert weights["measured"].keys() == weights["unmeasured"].keys()
    for key, tensor in weights["measured"].items():
        assert torch.equal(tensor, weights["unmeasured"][key]), key

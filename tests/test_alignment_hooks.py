"""A training run measures its attention against the embedded corpus' gold alignments: per-head
AER on the test split in summary.json, and at each validation the best head's AER and a
layer x head heatmap in TensorBoard (minitrans/runs/reporting.py, tblog.py)."""

from __future__ import annotations

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.training.trainer import train


def test_a_tiny_run_records_per_head_aer_in_its_summary_and_tensorboard(tmp_path, tiny_config):
    cfg = tiny_config("trainer.max_steps=4", "trainer.eval_every=2", "trainer.warmup_steps=2")
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

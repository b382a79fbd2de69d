"""Evaluation shared by two processes (gloo, CPU) gives what one process gives: the same
validation loss, BLEU, translations, TensorBoard entries (the same images, in the same order),
test hypotheses and per-head AER."""

from __future__ import annotations

import hashlib

import pytest
import torch

from minitrans.runs.sharing import Share


class RecordingWriter:
    """What a SummaryWriter was given, in order (an image as the digest of its bytes)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def add_scalar(self, tag, value, step) -> None:
        self.calls.append(("scalar", tag, float(value), step))

    def add_text(self, tag, text, step) -> None:
        self.calls.append(("text", tag, text, step))

    def add_image(self, tag, image, step, dataformats="CHW") -> None:
        self.calls.append(("image", tag, hashlib.sha256(image.tobytes()).hexdigest(), image.shape, step))


def evaluate(cfg, run, splits, share: Share, out_dir) -> dict:
    """Everything a run's evaluation reports, as rank 0 sees it (None elsewhere)."""
    from minitrans.inference.translator import Translator
    from minitrans.runs import reporting

    translator = Translator.from_checkpoint(run / "checkpoints" / "last.pt", device="cpu")
    writer = RecordingWriter() if share.is_main else None
    valid = reporting.validate(translator, splits["valid"], cfg.trainer, writer, 7, cfg.data, share, draw=True)
    final = reporting.validate(translator, splits["valid"], cfg.trainer, None, 7, cfg.data, share, draw=False)
    tests = reporting.evaluate_tests(translator, {"test": splits["test"]}, cfg.trainer, out_dir, share)
    alignment = reporting.final_alignment(translator, splits["test"], cfg.data, share)
    if not share.is_main:
        return None
    hyps = (out_dir / "translations" / "test.hyp.txt").read_text()
    return {"valid": valid, "writer": writer.calls, "final": final, "tests": tests, "hyps": hyps, "aer": alignment}


def _shared(rank: int, world_size: int, init_file: str, cfg, run, splits, out_dir, results) -> None:
    import torch.distributed as dist

    from minitrans.training import distributed

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        info = distributed.DistInfo(rank=rank, world_size=world_size)
        share = Share(
            rank,
            world_size,
            lambda value: distributed.all_gather_object(value, info),
            lambda value: distributed.gather_object(value, info),
        )
        found = evaluate(cfg, run, splits, share, out_dir)
        if rank == 0:
            results.put(found)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_ranks_evaluate_as_one_process(tmp_path, tiny_config):
    import torch.multiprocessing as mp

    from minitrans.core.checkpoint import load_checkpoint
    from minitrans.training.run_data import prepare_training_data
    from minitrans.training.trainer import train

    # enough sentences for several loss batches, decoding batches and alignment batches of 32
    cfg = tiny_config(
        "data.num_valid=40",
        "data.num_test=40",
        "trainer.max_steps=100",
        "trainer.eval_every=1000",
        "trainer.eval_sentences=40",
        "trainer.sample_sentences=3",
        "trainer.batch_tokens=100",
    )
    threads = torch.get_num_threads()
    try:
        train(cfg, tmp_path / "run")
        torch.set_num_threads(1)
        payload = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
        data = prepare_training_data(cfg, payload["tokenizer"], payload["training_data"])
        splits = {"valid": data.splits[cfg.data.valid_split], "test": data.splits[cfg.data.test_splits[0]]}
        (tmp_path / "one").mkdir()
        alone = evaluate(cfg, tmp_path / "run", splits, Share(), tmp_path / "one")
    finally:
        torch.set_num_threads(threads)

    (tmp_path / "two").mkdir()
    results = mp.get_context("spawn").SimpleQueue()
    args = (2, str(tmp_path / "init"), cfg, tmp_path / "run", splits, tmp_path / "two", results)
    mp.start_processes(_shared, args=args, nprocs=2, start_method="spawn")
    shared = results.get()

    assert alone["valid"]["chrf"] > 0 and alone["aer"]["aer_sentences"] == 40  # a real check, not empty ones
    assert sum(kind == "image" for kind, *_ in alone["writer"]) > 3
    assert shared["hyps"] == alone["hyps"]  # the test translations, line for line
    for key in ("valid", "final", "tests", "aer"):
        assert shared[key] == alone[key], key  # loss, BLEU, chrF, BLEU by length: exactly equal
    assert shared["writer"] == alone["writer"]  # scalars, sample table, every card, in order

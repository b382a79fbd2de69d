"""Evaluation shared by two processes (gloo, CPU) gives what one process gives: the same
validation loss, BLEU, translations, TensorBoard entries (the same images, in the same order),
test hypotheses and per-head AER."""

from __future__ import annotations

import hashlib
import threading

import pytest
import torch

from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.sharing import Share


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
    from minitrans.runs.evaluation import translate_in_batches_shared

    translator = Translator.from_checkpoint(run / "checkpoints" / "last.pt", device="cpu")
    rng = torch.get_rng_state()
    writer = RecordingWriter() if share.is_main else None
    valid = reporting.validate(translator, splits["valid"], cfg.trainer, writer, 7, cfg.data, share, draw=True)
    final = reporting.validate(translator, splits["valid"], cfg.trainer, None, 7, cfg.data, share, draw=False)
    tests = reporting.evaluate_tests(translator, {"test": splits["test"]}, cfg.trainer, out_dir, share)
    alignment = reporting.final_alignment(translator, splits["test"], cfg.data, share)
    # the test split in many small beam batches: each rank decodes whole batches of its own
    many = translate_in_batches_shared(
        translator, splits["test"]["src_ids"], DecodingOptions(3, batch_hyp_tokens=90), share
    )
    assert torch.equal(torch.get_rng_state(), rng)  # on every rank: evaluation draws no random numbers
    if not share.is_main:
        return None
    hyps = (out_dir / "translations" / "test.hyp.txt").read_text()
    found = {"valid": valid, "writer": writer.calls, "final": final, "tests": tests, "hyps": hyps, "aer": alignment}
    return found | {"many": many}


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
    assert shared["many"] == alone["many"] and len(alone["many"]) == 40
    for key in ("valid", "final", "tests", "aer"):
        assert shared[key] == alone[key], key  # loss, BLEU, chrF, BLEU by length: exactly equal
    assert shared["writer"] == alone["writer"]  # scalars, sample table, every card, in order


def thread_shares(size: int) -> list[Share]:
    """``size`` Shares whose collectives meet through a barrier: ranks as threads of one process."""
    barrier, box = threading.Barrier(size), [None] * size

    def all_gather(rank: int, value):
        box[rank] = value
        barrier.wait()
        gathered = list(box)
        barrier.wait()  # every rank has read the values before the next collective writes
        return gathered

    def gather(rank: int, value):
        gathered = all_gather(rank, value)
        return gathered if rank == 0 else None

    return [
        Share(rank, size, lambda v, r=rank: all_gather(r, v), lambda v, r=rank: gather(r, v)) for rank in range(size)
    ]


def run_ranks(size: int, work) -> list:
    """``work(share)`` on every rank at once (threads); each rank's result, in rank order."""
    results, errors = [None] * size, []

    def one(share: Share) -> None:
        try:
            results[share.rank] = work(share)
        except BaseException as error:  # noqa: BLE001  (re-raised below, in the test's thread)
            errors.append(error)
            raise

    threads = [threading.Thread(target=one, args=(share,)) for share in thread_shares(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


@pytest.mark.parametrize("size", [2, 3])
def test_shared_batch_parts_are_one_process_batches(size):
    """Every row is decoded by exactly one rank, at its one-process batch's width; with enough
    batches each rank's parts are whole batches of balanced cost, with few each batch is split
    by rows."""
    from minitrans.runs.evaluation import WHOLE_BATCHES_PER_RANK, shared_batch_parts

    enough = WHOLE_BATCHES_PER_RANK * size
    for count in (1, 2, enough - 1, enough, enough + 3, 5 * enough):
        batches = [list(range(10 * n, 10 * n + 1 + n % 4)) for n in range(count)]  # 1 to 4 rows each
        widths = [5 + n for n in range(count)]
        parts = [shared_batch_parts(batches, widths, Share(rank, size)) for rank in range(size)]
        decoded = sorted((row, width) for part in parts for rows, width in part for row in rows)
        assert decoded == sorted((row, widths[n]) for n, rows in enumerate(batches) for row in rows)
        if count < enough:  # each batch split by rows
            assert all(rows not in batches or len(rows) == 1 for part in parts for rows, _ in part)
            continue
        assert all(rows in batches for part in parts for rows, _ in part)  # whole batches
        loads = [sum(len(rows) * width for rows, width in part) for part in parts]
        assert max(loads) - min(loads) <= max(len(rows) * width for rows, width in zip(batches, widths))


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("batch_hyp_tokens", [30, 6000])  # many batches (dealt whole), one (split by rows)
def test_two_ranks_translate_as_one_process(tmp_path, beam, batch_hyp_tokens):
    """translate_in_batches_shared over 2 ranks gives one process's translations (blank
    sources included), draws no random numbers, and decodes each sentence once, on one rank."""
    from helpers.checkpoints import SENTENCES, build_export_checkpoint

    from minitrans.inference.translator import Translator
    from minitrans.runs.evaluation import WHOLE_BATCHES_PER_RANK, translate_in_batches_shared

    translator = Translator.from_checkpoint(build_export_checkpoint(tmp_path / "model.pt"), device="cpu")
    src_ids = translator.encode(SENTENCES)
    options = DecodingOptions(beam_size=beam, batch_hyp_tokens=batch_hyp_tokens, max_output_len=12)
    batches = translator.decoding_batches(translator.fit_sources(src_ids), options)
    assert (len(batches) >= 2 * WHOLE_BATCHES_PER_RANK) == (batch_hyp_tokens < 100)  # both ways of sharing
    alone = translator.translate_encoded(src_ids, options)
    assert len({tuple(ids) for ids in alone}) > 2 and [] in alone  # different outputs, and the blank ones

    calls: list[int] = []
    search_batch = translator.search_batch
    translator.search_batch = lambda sources, *args, **kwargs: (
        calls.append(len(sources)) or search_batch(sources, *args, **kwargs)
    )
    rng = torch.get_rng_state()
    shared = run_ranks(2, lambda share: translate_in_batches_shared(translator, src_ids, options, share))
    assert torch.equal(torch.get_rng_state(), rng)
    assert shared == [alone, alone]  # every rank gets every translation, in order
    assert sum(calls) == sum(map(len, batches)) and len(calls) >= 2  # each sentence decoded once, by one rank

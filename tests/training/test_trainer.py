"""What one training run promises, read back from what it wrote: checkpoint averaging and
``averaged.pt``, a ``best.pt`` that translates on its own, the learning-rate schedule, the
``summary.json`` keys and ``translations/*.hyp.txt``, the TensorBoard scalars, nothing
written outside the run folder and the cache; resuming refuses changed data and
``trainer.resume=false`` starts afresh; a second Ctrl-C stops at once."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import signal
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.core.checkpoint import load_checkpoint
from minitrans.core.checks import ConfigError
from minitrans.core.utils import StopRequest
from minitrans.inference.translator import Translator
from minitrans.training.schedule import inverse_sqrt_schedule
from minitrans.training.trainer import Trainer, train

RUN = [
    "trainer.max_steps=6",
    "trainer.eval_every=2",  # validations (and step_*.pt) at 2, 4, 6
    "trainer.log_every=1",
    "trainer.warmup_steps=3",
    "trainer.average_last=2",
    "trainer.lr=0.002",
]


def once_per_module_except_under_mutmut(fixture_name, config) -> str:
    """mutmut ties each test to the functions that ran during it, fixture set-up included: a
    run trained once per module would be tied to the first test that asked for it, and every
    other test would never be run against a mutant of the trainer."""
    return "function" if "MUTANT_UNDER_TEST" in os.environ else "module"


@pytest.fixture(scope=once_per_module_except_under_mutmut)
def trained(tmp_path_factory, tiny_config):
    """One tiny run, trained in process from an empty working folder and an empty home."""
    root = tmp_path_factory.mktemp("trained")
    cwd, home, run = root / "cwd", root / "home", root / "run"
    cwd.mkdir()
    home.mkdir()
    cfg = tiny_config(*RUN)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        threads = torch.get_num_threads()
        try:
            summary = train(cfg, run)
        finally:
            torch.set_num_threads(threads)
    return {"run": run, "cwd": cwd, "home": home, "summary": summary, "cfg": cfg}


def scalars(run: Path, tag: str) -> dict[int, float]:
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    return {event.step: event.value for event in events.Scalars(tag)}


def model_of(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)["model"]


# -- what is written, and where ------------------------------------------------------------
def test_nothing_is_written_outside_the_run_folder(trained):
    assert list(trained["cwd"].iterdir()) == []
    assert list(trained["home"].rglob("*")) == []
    names = {path.name for path in trained["run"].iterdir()}
    events = {name for name in names if name.startswith("events.out.tfevents.")}
    assert len(events) == 1
    assert names - events <= {
        "tokenizer",
        "checkpoints",
        "translations",
        "summary.json",
        "train.log",
        ".hydra",
        ".lock",
        ".lock.holder",
    }


def test_summary_json_holds_the_documented_figures(trained):
    summary = json.loads((trained["run"] / "summary.json").read_text())
    assert summary == json.loads(json.dumps(trained["summary"].to_dict()))  # the file is what train() returned
    assert {"test", "valid", "test_splits", "params", "steps", "train_seconds", "weights", "config"} <= set(summary)
    assert {"bleu", "chrf", "bleu_lowercase", "by_length"} <= set(summary["test"])
    assert {"bleu", "chrf", "loss"} <= set(summary["valid"])
    assert set(summary["test_splits"]) == {"test"} and summary["test_splits"]["test"] == summary["test"]
    assert summary["steps"] == 6 and summary["skipped_steps"] == 0
    last = load_checkpoint(trained["run"] / "checkpoints" / "last.pt")
    assert summary["epochs"] == last["state"]["epoch"] and summary["processes"] == 1
    assert summary["train_seconds"] == round(last["state"]["train_seconds"], 1) and last["state"]["train_seconds"] > 0
    assert summary["name"] == summary["model"] == "transformer"  # no trainer name: the model kind
    assert summary["device"] == "cpu"
    assert summary["weights"] == "average of last 2 checkpoints"
    assert summary["config"]["trainer"]["average_last"] == 2
    assert summary["params"] == sum(t.numel() for t in Translator.from_checkpoint(trained["run"]).model.parameters())


def test_translations_are_the_final_models_translation_of_the_test_split(trained):
    """translations/test.hyp.txt, against averaged.pt translating the test sources on its own."""
    from minitrans.data.corpus import load_split

    cfg = trained["cfg"]
    sources, _, _ = load_split(cfg.data, "test")
    lines = (trained["run"] / "translations" / "test.hyp.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == cfg.data.num_test == len(sources)
    alone = Translator.from_checkpoint(trained["run"] / "checkpoints" / "averaged.pt", device="cpu")
    assert lines == alone.translate(sources, cfg.trainer.test_decoding())


# -- checkpoint averaging and best.pt ------------------------------------------------------
def test_averaged_pt_is_the_mean_of_the_last_n_checkpoints(trained):
    folder = trained["run"] / "checkpoints"
    kept = sorted(path.name for path in folder.glob("step_*.pt"))
    assert kept == ["step_0000004.pt", "step_0000006.pt"]  # only the last average_last are kept
    steps = [model_of(folder / name) for name in kept]
    averaged = model_of(folder / "averaged.pt")
    assert averaged.keys() == steps[0].keys()
    for name, value in averaged.items():
        torch.testing.assert_close(value, (steps[0][name].double() + steps[1][name].double()).div(2).to(value.dtype))
    assert any(not torch.equal(steps[0][name], steps[1][name]) for name in averaged)  # a real average
    for name in ["averaged.pt", "best.pt", *kept]:  # weights to translate with, not states to resume
        assert not {"optimizer", "scheduler", "state", "rng"} & set(load_checkpoint(folder / name)), name
    assert Translator.from_checkpoint(trained["run"]).model is not None  # and the run folder resolves to it


def test_best_pt_holds_the_best_validations_weights_and_translates_on_its_own(trained, tmp_path):
    run = trained["run"]
    bleu = scalars(run, "valid/bleu")
    assert sorted(bleu) == [2, 4, 6]
    best_step = max(bleu, key=lambda step: (bleu[step], step))  # ties go to the later checkpoint
    best = model_of(run / "checkpoints" / "best.pt")
    if best_step in (4, 6):  # its step_*.pt is still there to compare with
        reference = model_of(run / "checkpoints" / f"step_{best_step:07d}.pt")
        assert all(torch.equal(best[name], reference[name]) for name in best)
    assert load_checkpoint(run / "checkpoints" / "best.pt")["step"] == best_step
    alone = tmp_path / "elsewhere" / "model.pt"  # no tokenizer folder, no config, no run beside it
    alone.parent.mkdir()
    shutil.copy(run / "checkpoints" / "best.pt", alone)
    translator = Translator.from_checkpoint(alone, device="cpu")
    assert all(torch.equal(translator.model.state_dict()[name], best[name]) for name in best)
    outputs = translator.translate(["the man sees the dog .", "", "a woman reads a book ."])
    assert len(outputs) == 3 and outputs[1] == "" and outputs[0]


# -- the learning-rate schedule ------------------------------------------------------------
def vaswani_lr(peak: float, warmup: int, step: int) -> float:
    """Vaswani et al. (2017): d^-0.5 · min(step^-0.5, step · warmup^-1.5), scaled to peak at warmup."""
    return peak * math.sqrt(warmup) * min(step**-0.5, step * warmup**-1.5)


@pytest.mark.parametrize("warmup", [1, 3, 400])
def test_the_schedule_is_vaswanis_formula(warmup):
    factor = inverse_sqrt_schedule(warmup)
    for step in [1, 2, warmup - 1, warmup, warmup + 1, 2 * warmup, 10 * warmup, 12345]:
        if step >= 1:
            assert factor(step) == pytest.approx(vaswani_lr(1.0, warmup, step), rel=1e-12), step
    floored = inverse_sqrt_schedule(warmup, min_ratio=0.25)
    assert floored(100 * warmup) == 0.25 and floored(warmup) == 1.0
    assert floored(max(warmup // 2, 1)) == pytest.approx(factor(max(warmup // 2, 1)))  # no floor while warming up


def test_the_logged_learning_rate_follows_the_schedule(trained):
    lr = scalars(trained["run"], "train/lr")
    assert sorted(lr) == [1, 2, 3, 4, 5, 6]
    for step, value in lr.items():
        assert value == pytest.approx(vaswani_lr(0.002, 3, step), rel=1e-6), step


def test_the_documented_tensorboard_scalars_are_logged(trained):
    run = trained["run"]
    rate = scalars(run, "train/tokens_per_second")
    assert sorted(rate) == [1, 2, 3, 4, 5, 6] and all(value > 0 and math.isfinite(value) for value in rate.values())
    # the training-time validations only: the final weights' scores go to summary.json and HPARAMS
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    assert [event.step for event in events.Scalars("valid/bleu")] == [2, 4, 6]
    chrf = scalars(run, "valid/chrf")
    assert sorted(chrf) == [2, 4, 6] and all(0 <= value <= 100 for value in chrf.values())
    loss = scalars(run, "train/loss_label_smoothed")
    assert sorted(loss) == [1, 2, 3, 4, 5, 6] and len(set(loss.values())) > 1
    vocab = Translator.from_checkpoint(run, device="cpu").model.output.out_features
    assert 0.7 * math.log(vocab) < loss[1] < 1.3 * math.log(vocab)  # an untrained model's loss is about ln V


# -- resuming ------------------------------------------------------------------------------
@pytest.mark.parametrize("change", ["data.num_train=100", "data.max_words=9", "data.vocab_size=380"])
def test_resuming_refuses_changed_training_data(trained, tiny_config, change):
    key, _, value = change.partition("=")
    with pytest.raises(ConfigError, match=f"^{re.escape(key)}: .* was trained with .*, not {value}"):
        Trainer(tiny_config(*RUN, change), trained["run"])


def test_resume_false_starts_afresh(trained, tiny_config, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained["run"], run)
    assert Trainer(tiny_config(*RUN, "trainer.max_steps=8"), run).state.step == 6  # resumes by default
    fresh = Trainer(tiny_config(*RUN, "trainer.max_steps=8", "trainer.resume=false"), run)
    assert fresh.state.step == 0 and fresh.state.best_bleu < 0
    # even a model that could not resume from that folder
    assert Trainer(tiny_config(*RUN, "model.d_model=48", "trainer.resume=false"), run).state.step == 0


# -- stopping ------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_first_signal_asks_to_stop_and_a_second_stops_at_once(sig):
    before = signal.getsignal(sig)
    with StopRequest() as stop:
        os.kill(os.getpid(), sig)
        assert stop.signal == sig  # noted; the loop finishes its step and checkpoints
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
    assert signal.getsignal(sig) is before


@pytest.mark.parametrize("phase", ["last validation", "final test evaluation"])
def test_sigterm_during_the_final_evaluations_stops_with_143_and_a_resume_finishes(
    tmp_path, tiny_config, monkeypatch, phase
):
    import minitrans.runs.reporting as reporting
    from minitrans.training.state import TrainingStopped

    cfg = tiny_config("trainer.max_steps=4", "trainer.eval_every=2", "trainer.eval_sentences=2")
    target = "validate" if phase == "last validation" else "evaluate_tests"
    real = getattr(reporting, target)
    calls = {"n": 0}

    def signalled(*args, **kwargs):
        calls["n"] += 1
        if target == "evaluate_tests" or calls["n"] == 2:  # validations: step 2, then the last one (step 4)
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    run = tmp_path / "run"
    monkeypatch.setattr(reporting, target, signalled)
    with pytest.raises(TrainingStopped) as stopped:
        train(cfg, run)
    monkeypatch.undo()
    assert stopped.value.exit_code == 143 and "SIGTERM" in str(stopped.value)
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["step"] == 4  # nothing lost
    assert not (run / "summary.json").exists()
    assert train(cfg, run).steps == 4 and (run / "summary.json").exists()  # the resume only finishes


def test_a_full_disk_during_a_save_is_one_line_and_the_checkpoints_stay_intact(tmp_path, tiny_config, monkeypatch):
    import errno

    import minitrans.core.checkpoint as checkpoint
    from minitrans.core.checkpoint import CheckpointError

    cfg = tiny_config("trainer.max_steps=6", "trainer.eval_every=2", "trainer.eval_sentences=2")
    run, real_save, saves = tmp_path / "run", torch.save, {"n": 0}

    def fills_the_disk(obj, file, *args, **kwargs):
        saves["n"] += 1
        if saves["n"] > 2:  # best.pt and last.pt at step 2 are written; the disk is full from then on
            file.write(b"\x00" * 100)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, file, *args, **kwargs)

    monkeypatch.setattr(checkpoint.torch, "save", fills_the_disk)
    with pytest.raises(
        CheckpointError, match=r"^could not write .*: No space left on device \(\d+ bytes free on .*\); the previous"
    ) as error:
        train(cfg, run)
    monkeypatch.undo()
    assert "\n" not in str(error.value)
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["step"] == 2
    assert load_checkpoint(run / "checkpoints" / "best.pt")["step"] == 2
    assert not list((run / "checkpoints").glob(".*.tmp"))


# -- a resumed run's training state is checked, and says where it resumed ------------------
def resumable(trained, tmp_path: Path, edit=None) -> Path:
    """A copy of the trained run whose last.pt, read back, edited by ``edit`` and saved again
    (the file is a whole, valid checkpoint: only its contents are wrong)."""
    from minitrans.core.checkpoint import save_checkpoint

    run = tmp_path / "run"
    shutil.copytree(trained["run"], run, ignore=shutil.ignore_patterns(".lock"))
    if edit is not None:
        last = run / "checkpoints" / "last.pt"
        payload = load_checkpoint(last)
        edit(payload)
        save_checkpoint(payload, last)
    return run


def resumed(tiny_config, run: Path) -> Trainer:
    trainer = Trainer(tiny_config(*RUN, "trainer.max_steps=8"), run)
    trainer.lock.release()
    return trainer


def set_state(name, value):
    return lambda payload: payload["state"].update({name: value})


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (set_state("step", "6"), "TypeError: state.step is '6'"),
        (set_state("epoch", 1.0), "TypeError: state.epoch is 1.0"),
        (set_state("best_bleu", True), "TypeError: state.best_bleu is True"),  # a bool is an int to Python
        (set_state("skipped_steps", None), "TypeError: state.skipped_steps is None"),
        (lambda payload: payload.update(rng=[]), "ValueError: no random generator state"),
        (lambda payload: payload.update(rng={"cpu": payload["rng"][0]}), "ValueError: no random generator state"),
        (lambda payload: payload.pop("rng"), "KeyError: 'rng'"),
    ],
    ids=["str-step", "float-epoch", "bool-bleu", "none-count", "no-rng", "rng-not-a-list", "rng-missing"],
)
def test_a_training_state_of_the_wrong_kind_is_refused_in_one_line(trained, tiny_config, tmp_path, edit, reason):
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.training.checkpoints import AFRESH

    run = resumable(trained, tmp_path, edit)
    last = run / "checkpoints" / "last.pt"
    with pytest.raises(CheckpointError) as error:
        resumed(tiny_config, run)
    assert str(error.value) == f"{last} does not hold a usable training state ({reason}); {AFRESH}"


def test_a_whole_number_of_seconds_is_a_usable_float(trained, tiny_config, tmp_path):
    run = resumable(trained, tmp_path, set_state("train_seconds", 3))
    assert resumed(tiny_config, run).state.train_seconds == 3


def test_a_resume_restores_the_random_generators_and_says_where_it_resumed(trained, tiny_config, tmp_path, caplog):
    from minitrans.core.utils import get_rng_state

    run = resumable(trained, tmp_path)
    saved = load_checkpoint(run / "checkpoints" / "last.pt")
    assert saved["world_size"] == len(saved["rng"]) == 1  # written by one process
    with caplog.at_level(logging.INFO, logger="minitrans.training"):
        trainer = resumed(tiny_config, run)
        rng = get_rng_state()
    assert torch.equal(rng["torch"], saved["rng"][0]["torch"])  # the stream continues where it stopped
    epoch = saved["state"]["epoch"]
    messages = [record.getMessage() for record in caplog.records if record.name.startswith("minitrans.training")]
    assert f"resumed from {run / 'checkpoints' / 'last.pt'} at step 6 (epoch {epoch})" in messages
    assert not any("process run" in message for message in messages)  # same world size: no warning
    assert trainer.state.step == 6


def test_the_opening_line_counts_the_training_pairs_with_thousands_separators(tiny_config, tmp_path, caplog):
    trainer = Trainer(tiny_config("data.num_train=1200"), tmp_path / "run")
    with caplog.at_level(logging.INFO, logger="minitrans.training"):
        trainer._open_log()
    trainer.writer.close()
    (line,) = [record.getMessage() for record in caplog.records if record.getMessage().startswith("model ")]
    assert re.search(r"; 1,\d{3} training pairs;", line), line


def test_resuming_another_number_of_processes_warns_that_dropout_will_differ(trained, tiny_config, tmp_path, caplog):
    run = resumable(trained, tmp_path, lambda payload: payload.update(rng=payload["rng"] * 2))
    with caplog.at_level(logging.WARNING, logger="minitrans.training"):
        resumed(tiny_config, run)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == ["resuming a 2-process run with 1: dropout masks will differ"]


def test_a_signal_mid_training_saves_last_pt_at_that_step_and_says_where(tmp_path, tiny_config):
    """SIGTERM between evaluations: the loop finishes its step, writes last.pt there (no
    evaluation or periodic checkpoint would have), and stops with 143 naming the file."""
    from minitrans.training.state import TrainingStopped

    run = tmp_path / "run"
    cfg = tiny_config(
        "trainer.max_steps=50", "trainer.eval_every=40", "trainer.eval_sentences=2", "trainer.log_every=1"
    )
    trainer = Trainer(cfg, run)
    trainer.step_hooks.append(lambda state: state.step == 1 and os.kill(os.getpid(), signal.SIGTERM))
    with pytest.raises(TrainingStopped) as stopped:
        trainer.fit()
    last = run / "checkpoints" / "last.pt"
    assert stopped.value.exit_code == 143
    assert str(stopped.value) == (f"stopped by SIGTERM after step 2; checkpoint saved to {last}")
    assert stopped.value.run_dir == run and stopped.value.then == "resume"
    assert load_checkpoint(last)["state"]["step"] == 2  # the step that was under way when it came
    assert sorted(scalars(run, "train/loss_label_smoothed")) == [1, 2]  # the logs are on disk with it
    assert not (run / "checkpoints" / "best.pt").exists()  # no evaluation ran: only the stop saved


def test_a_run_started_from_a_finished_checkpoint_reports_its_last_weights(trained, tiny_config, tmp_path):
    """resume_from a last.pt already at max_steps: nothing trains, no best.pt or step_*.pt is
    written, and the summary says the weights are the last ones, unaveraged; its translations
    are those of the checkpoint it started from, and the run folder holds that checkpoint as
    its last.pt, so translate.py and evaluate.py find weights there."""
    from minitrans.data.corpus import load_split

    start = tmp_path / "start.pt"
    shutil.copy(trained["run"] / "checkpoints" / "last.pt", start)
    cfg = tiny_config(*RUN, f"trainer.resume_from={start}")
    summary = train(cfg, tmp_path / "run")
    assert summary.weights == "last weights" and summary.steps == 6
    assert [p.name for p in (tmp_path / "run").glob("checkpoints/*.pt")] == ["last.pt"]
    saved, started = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt"), load_checkpoint(start)
    assert saved["state"]["step"] == 6
    assert all(torch.equal(saved["model"][key], value) for key, value in started["model"].items())
    sources, _, _ = load_split(cfg.data, "test")
    lines = (tmp_path / "run" / "translations" / "test.hyp.txt").read_text(encoding="utf-8").splitlines()
    assert lines == Translator.from_checkpoint(start, device="cpu").translate(sources, cfg.trainer.test_decoding())
    assert lines == Translator.from_checkpoint(tmp_path / "run", device="cpu").translate(
        sources, cfg.trainer.test_decoding()
    )


def test_tokens_per_second_is_the_windows_target_tokens_over_its_training_seconds(tmp_path, tiny_config, monkeypatch):
    """A clock that ticks 0.1 s per reading (two readings per step land in the window), and the
    target tokens (+1 for end of sentence) of the batches the sampler gives, counted here."""
    import types

    import minitrans.training.trainer as trainer_module

    ticks = iter(range(10**6))
    monkeypatch.setattr(trainer_module, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks) / 10))
    run = tmp_path / "run"
    steps = 24  # more than one epoch's batches
    trainer = Trainer(
        tiny_config(f"trainer.max_steps={steps}", f"trainer.eval_every={steps}", "trainer.log_every=2"), run
    )
    summary = trainer.fit()
    batches = [batch for epoch in range(steps) for batch in trainer.sampler.batches(epoch)][:steps]
    epochs = [epoch for epoch in range(steps) for _ in trainer.sampler.batches(epoch)][:steps]
    assert summary.epochs == epochs[-1] > 0  # the epoch the last step was in
    tokens = [sum(len(trainer.tgt_ids[i]) + 1 for i in batch) for batch in batches]
    rate = scalars(run, "train/tokens_per_second")
    assert sorted(rate) == list(range(2, steps + 1, 2))  # every log_every steps, and only then
    for step, value in rate.items():
        assert value == pytest.approx((tokens[step - 2] + tokens[step - 1]) / (2 * 0.2), rel=1e-6), step


def test_sources_too_long_for_the_model_are_one_log_line_per_split_not_per_sentence(
    tiny_config, tmp_path, caplog, recwarn
):
    cfg = tiny_config("model.max_len=12", "trainer.max_steps=4", "trainer.eval_every=2")
    with caplog.at_level(logging.INFO):
        train(cfg, tmp_path / "run")  # two validations and the test split
    assert not [w for w in recwarn if re.match(r"sentence \d+ has", str(w.message))]
    cut = [r.getMessage() for r in caplog.records if "more than model.max_len=12" in r.getMessage()]
    assert sorted(line.split(":")[0] for line in cut) == ["test", "valid"]
    assert all(r.levelno == logging.WARNING for r in caplog.records if "more than model.max_len" in r.getMessage())

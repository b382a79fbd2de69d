"""Runs you can trust: a run killed (SIGKILL) and re-run into its folder ends bitwise equal to
one that never stopped, with the same per-step losses; SIGTERM / SIGINT checkpoint and exit
cleanly; non-finite steps are skipped, then stop the run; the same seed gives the same weights."""

from __future__ import annotations

import json
import logging
import shlex
import signal
import subprocess
import time

import pytest
import torch
from conftest import REPO, TRAIN_SCRIPT, assert_bitwise_equal, last_weights, script_env, train_command
from helpers.runs import scalars, state

from minitrans.core.checkpoint import load_checkpoint
from minitrans.training.state import TrainingError, TrainState
from minitrans.training.trainer import Trainer, train

LOGGED = ["trainer.log_every=1", "trainer.eval_every=1000"]  # every step's loss; no evaluation on the way


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["trainer.subword_sampling=0.2"]], ids=["best-pieces", "sampled-pieces"])
def test_a_killed_run_resumes_bitwise_at_an_epoch_boundary_and_mid_epoch(tmp_path, tiny_overrides, run_train, extra):
    # dropout: the torch generator must be restored; subword sampling: the epoch's pieces drawn again
    common = [*tiny_overrides, *LOGGED, "model.dropout=0.2", *extra]
    reference = tmp_path / "reference"
    done = run_train(*common, "trainer.max_steps=40", f"hydra.run.dir={reference}")
    assert done.returncode == 0, done.stderr
    epochs = scalars(reference, "train/epoch")
    epoch_length = max(step for step, epoch in epochs.items() if epoch == 0)
    assert 6 < epoch_length < 30, "the tiny corpus should make a few epochs of a few batches"

    # 1) killed right after the checkpoint that closes epoch 0 (every step checkpoints here)
    run = tmp_path / "run"
    killed = run_train(
        *common,
        "trainer.max_steps=40",
        "trainer.checkpoint_every=1",
        f"trainer.crash_at_step={epoch_length}",
        f"hydra.run.dir={run}",
    )
    assert killed.returncode == -signal.SIGKILL
    assert (state(run)["epoch"], state(run)["batch_in_epoch"]) == (0, epoch_length)

    # 2) resumed there, then killed mid-epoch two steps after a checkpoint: those two are redone
    every = 4
    checkpointed = (epoch_length // every + 1) * every
    if checkpointed % epoch_length == 0:
        checkpointed += every
    killed = run_train(
        *common,
        "trainer.max_steps=40",
        f"trainer.checkpoint_every={every}",
        f"trainer.crash_at_step={checkpointed + 2}",
        f"hydra.run.dir={run}",
    )
    assert killed.returncode == -signal.SIGKILL
    assert state(run)["step"] == checkpointed and 0 < state(run)["batch_in_epoch"] < epoch_length

    # 3) resumed mid-epoch and run to the end
    finished = run_train(*common, "trainer.max_steps=40", f"hydra.run.dir={run}")
    assert finished.returncode == 0, finished.stderr
    assert "resumed from" in (run / "train.log").read_text()
    assert_bitwise_equal(last_weights(run), last_weights(reference))
    assert scalars(run, "train/loss_label_smoothed") == scalars(
        reference, "train/loss_label_smoothed"
    )  # every step, 1..40
    assert state(run)["step"] == 40 and state(run)["epoch"] == state(reference)["epoch"]


@pytest.mark.slow
def test_sigterm_and_sigint_checkpoint_exit_cleanly_and_the_rerun_resumes(tmp_path, tiny_overrides):
    run = tmp_path / "run"
    args = [*tiny_overrides, *LOGGED, "trainer.max_steps=100000", "trainer.checkpoint_every=2", f"hydra.run.dir={run}"]
    last = run / "checkpoints" / "last.pt"
    steps = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        before = last.stat().st_mtime_ns if last.exists() else None
        process = subprocess.Popen(
            train_command(*args), cwd=REPO, env=script_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while not (last.exists() and last.stat().st_mtime_ns != before) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.2)
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 128 + sig, err
        message, resume = [line for line in err.splitlines() if line.strip()][-2:]
        assert message.startswith(f"stopped by {signal.Signals(sig).name} after step ")
        assert "checkpoint saved" in message and "Traceback" not in out + err
        steps.append(load_checkpoint(last)["state"]["step"])
        assert f"after step {steps[-1]};" in message  # the checkpoint holds the step it names
        # the line about resuming is the exact command, in this run's folder: the next round runs it
        program, script, *printed = shlex.split(resume.removeprefix("to resume, run: "))
        assert resume.startswith("to resume, run: ") and (program, script) == ("python", str(TRAIN_SCRIPT))
        assert printed[-1] == f"hydra.run.dir={run}" and sum(arg.startswith("hydra.run.dir=") for arg in printed) == 1
        args = printed
    assert steps[1] > steps[0]
    assert (run / "train.log").read_text().count("resumed from") == 1


def test_non_finite_steps_are_skipped_and_counted(tmp_path, tiny_config):
    cfg = tiny_config("trainer.max_steps=6", "trainer.max_bad_steps=3", "trainer.eval_every=1000")
    calls = {"count": 0}
    trainer = Trainer(cfg, tmp_path / "run")
    real_loss = trainer.loss_fn

    def poisoned(logits, tgt_out, smoothing):  # batches 3 and 4 give NaN: two bad steps in a row
        calls["count"] += 1
        loss = real_loss(logits, tgt_out, smoothing)
        return loss * float("nan") if calls["count"] in (3, 4) else loss

    trainer.loss_fn = poisoned
    summary = trainer.fit()
    assert trainer.state.step == 6 and trainer.state.skipped_steps == 2 and trainer.state.bad_steps == 0
    assert summary.skipped_steps == 2  # and so does the run's summary.json
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["skipped_steps"] == 2
    assert trainer.state.batch_in_epoch == 8  # the skipped batches were used up, not retried
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())


def test_too_many_non_finite_steps_in_a_row_stop_with_the_last_checkpoint_intact(tmp_path, tiny_config):
    cfg = tiny_config("trainer.max_steps=50", "trainer.max_bad_steps=3", "trainer.checkpoint_every=2")
    trainer = Trainer(cfg, tmp_path / "run")
    real_loss = trainer.loss_fn
    trainer.loss_fn = lambda *args: real_loss(*args) * (float("inf") if trainer.state.step >= 5 else 1.0)
    with pytest.raises(TrainingError, match="3 non-finite steps in a row after step 5") as error:
        trainer.fit()
    assert "\n" not in str(error.value) and "trainer.max_bad_steps" in str(error.value)
    saved = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert saved["state"]["step"] == 4
    assert all(torch.isfinite(t).all() for t in saved["model"].values())


def test_a_run_that_diverges_before_its_first_checkpoint_names_none(tmp_path, tiny_config):
    cfg = tiny_config("trainer.max_steps=50", "trainer.max_bad_steps=2", "trainer.eval_every=1000")
    trainer = Trainer(cfg, tmp_path / "run")
    real_loss = trainer.loss_fn
    trainer.loss_fn = lambda *args: real_loss(*args) * float("nan")
    with pytest.raises(TrainingError, match="no checkpoint was written yet") as error:
        trainer.fit()
    assert "last.pt" not in str(error.value)


@pytest.mark.slow
def test_a_diverging_run_exits_with_one_error_line(tmp_path, tiny_overrides, run_train):
    run = tmp_path / "run"
    # a learning rate of 1e30 makes the weights overflow after the first update
    result = run_train(
        *tiny_overrides,
        "trainer.lr=1e30",
        "trainer.warmup_steps=0",
        "trainer.max_bad_steps=3",
        "trainer.checkpoint_every=1",
        f"hydra.run.dir={run}",
    )
    assert result.returncode == 1
    last_line = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert last_line.startswith("error: 3 non-finite steps in a row") and "Traceback" not in result.stderr
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["step"] == 1


@pytest.mark.parametrize("extra", [[], ["trainer.subword_sampling=0.2"]], ids=["best-pieces", "sampled-pieces"])
def test_the_same_seed_gives_bitwise_the_same_weights_and_another_seed_does_not(tmp_path, tiny_config, extra):
    threads = torch.get_num_threads()
    try:
        runs = {}
        for name, seed in (("a", 0), ("b", 0), ("c", 1)):
            cfg = tiny_config(
                f"seed={seed}", "trainer.max_steps=8", "trainer.eval_every=1000", "model.dropout=0.2", *extra
            )
            train(cfg, tmp_path / name)
            runs[name] = last_weights(tmp_path / name)
    finally:
        torch.set_num_threads(threads)
    assert_bitwise_equal(runs["a"], runs["b"])
    assert any(not torch.equal(runs["a"][k], runs["c"][k]) for k in runs["a"])


def test_subword_sampling_changes_what_the_model_reads_and_says_so(tmp_path, tiny_config, caplog):
    threads = torch.get_num_threads()
    try:
        with caplog.at_level(logging.INFO, logger="minitrans.training.run_data"):
            for name, extra in (("best", []), ("sampled", ["trainer.subword_sampling=0.2"])):
                train(tiny_config("trainer.max_steps=4", "trainer.eval_every=1000", *extra), tmp_path / name)
    finally:
        torch.set_num_threads(threads)
    assert "subword sampling: each epoch splits the pieces anew, each with chance 0.2" in caplog.text
    best, sampled = last_weights(tmp_path / "best"), last_weights(tmp_path / "sampled")
    assert any(not torch.equal(best[k], sampled[k]) for k in best)


def test_the_trainer_writes_what_checkpoint_payload_builds(tmp_path, tiny_config):
    """The trainer's checkpoints are checkpoint_payload's: the same keys in the same order (the
    bytes of a run's checkpoints depend on it), the weights and the configuration it was given."""
    from dataclasses import asdict

    from minitrans.training.checkpoints import checkpoint_payload

    cfg = tiny_config("trainer.max_steps=2", "trainer.eval_every=1000")
    train(cfg, tmp_path / "run")
    best, last = (load_checkpoint(tmp_path / "run" / "checkpoints" / name) for name in ("best.pt", "last.pt"))
    weights = ["format", "version", "config", "tokenizer", "model", "step", "training_data"]
    digest = ["model_config_sha256"]  # save_checkpoint's first two keys and its last
    assert list(best) == [*weights, *digest]
    assert list(last) == [*weights, "optimizer", "scheduler", "state", "world_size", "rng", *digest]
    assert best["config"] == asdict(cfg) and best["step"] == last["step"] == 2
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    parts = dict(optimizer=optimizer, scheduler=scheduler, state=TrainState(step=3), world_size=1)

    class Tok:
        def to_state(self):
            return {"src": b""}

    built = checkpoint_payload(cfg, Tok(), model, 3, **parts)
    assert list(built) == ["config", "tokenizer", "model", "step", "optimizer", "scheduler", "state", "world_size"]
    assert built["state"]["step"] == 3 and torch.equal(built["model"]["weight"], model.weight)
    with pytest.raises(ValueError, match="together"):
        checkpoint_payload(cfg, Tok(), model, optimizer=optimizer)


def test_a_run_folder_resumes_only_the_model_and_data_it_was_trained_with(tmp_path, tiny_config):
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.checks import ConfigError
    from minitrans.inference.coverage import TrainingRecord

    run = tmp_path / "run"
    train(tiny_config("trainer.max_steps=2", "trainer.eval_every=1000"), run)
    for name in ("last.pt", "best.pt"):  # every checkpoint records what its model was trained on
        record = TrainingRecord.from_state(load_checkpoint(run / "checkpoints" / name)["training_data"])
        assert (record.src_lang, record.tgt_lang, record.corpus, record.num_pairs) == ("en", "de", "generated", 120)
        assert record.word_counts["the"] > 0 and {"I", "you"} <= set(record.unseen("I love you."))
    with pytest.raises(ConfigError, match=r"^model\.d_model: .* was trained with 32, not 48;"):
        Trainer(tiny_config("trainer.max_steps=4", "model.d_model=48"), run)
    with pytest.raises(ConfigError, match=r"^seed: .* was trained with seed=0, not 7;"):
        Trainer(tiny_config("trainer.max_steps=4", "seed=7"), run)
    good = run / "checkpoints" / "good.pt"
    good.write_bytes((run / "checkpoints" / "last.pt").read_bytes())
    (run / "checkpoints" / "last.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="corrupt .*trainer.resume=false"):
        Trainer(tiny_config("trainer.max_steps=4"), run)
    for damage in (  # whole archives (CRCs fine) whose contents are not a training state
        lambda p: p["optimizer"].__setitem__("state", "garbage"),
        lambda p: p["state"].__setitem__("no_such_field", 1),
        lambda p: p["model"].popitem(),
        lambda p: p.__setitem__("rng", []) or p["state"].__setitem__("step", "two"),
    ):
        last = run / "checkpoints" / "last.pt"
        payload = load_checkpoint(good)
        damage(payload)
        torch.save(payload, last)
        with pytest.raises(CheckpointError, match=r"does not hold a usable .*trainer\.resume=false|model") as error:
            Trainer(tiny_config("trainer.max_steps=4"), run)
        assert "\n" not in str(error.value)
    best = run / "checkpoints" / "best.pt"  # weights only: nothing to resume training from
    with pytest.raises(CheckpointError, match="weights only"):
        Trainer(tiny_config("trainer.max_steps=4", f"trainer.resume_from={best}"), tmp_path / "other")


@pytest.mark.parametrize("saved, given", [("2", "2.0"), ("0.5", ".5"), ("2", "2e0")])
def test_a_resume_compares_the_attention_scale_by_value_not_by_spelling(tmp_path, tiny_config, saved, given):
    from dataclasses import asdict

    from minitrans.core.checks import ConfigError
    from minitrans.training.checkpoints import check_same_run

    trained = asdict(tiny_config(f"model.attention_scale={saved}"))
    check_same_run(trained, tiny_config(f"model.attention_scale={given}"), tmp_path / "last.pt")  # the same scale
    for other in ("3", "sqrt_dk", "none"):
        with pytest.raises(ConfigError, match=rf"^model\.attention_scale: .* was trained with '{saved}'"):
            check_same_run(trained, tiny_config(f"model.attention_scale={other}"), tmp_path / "last.pt")

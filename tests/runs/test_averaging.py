"""Checkpoint averaging: the mean of the weights, refused across models, and a result that the
translate and evaluate scripts accept like any checkpoint."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from helpers import REPO
from helpers.checkpoints import build_checkpoint

from minitrans.core.checkpoint import CheckpointError, average_state_dicts, load_checkpoint, save_checkpoint
from minitrans.inference.translator import Translator
from minitrans.runs.averaging import average_checkpoints
from minitrans.training.trainer import train


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_script", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_average_is_the_element_wise_mean_in_each_tensors_own_dtype():
    states = [
        {"w": torch.full((2, 3), float(i)), "h": torch.full((2,), float(i), dtype=torch.float16), "n": torch.tensor(i)}
        for i in (1, 2, 6)
    ]
    averaged = average_state_dicts(states)
    assert torch.equal(averaged["w"], torch.full((2, 3), 3.0))
    assert averaged["h"].dtype == torch.float16 and torch.equal(
        averaged["h"], torch.full((2,), 3.0, dtype=torch.float16)
    )
    assert averaged["n"].item() == 6  # a counter is not averaged: the last one's


def shifted(source: Path, target: Path, shift: float) -> Path:
    """A copy of a checkpoint with every weight moved by ``shift``, as a later step would be."""
    payload = load_checkpoint(source)
    payload["model"] = {k: v + shift if v.is_floating_point() else v for k, v in payload["model"].items()}
    payload["step"] = int(shift * 10)
    save_checkpoint(payload, target)
    return target


def test_averaging_checkpoints_of_one_model_gives_a_self_contained_checkpoint(tmp_path):
    first = build_checkpoint(tmp_path / "a.pt", max_len=32)
    second = shifted(first, tmp_path / "b.pt", 0.4)
    averaged = average_checkpoints([first, second])
    a, b = load_checkpoint(first)["model"], load_checkpoint(second)["model"]
    assert all(torch.allclose(averaged["model"][k], (a[k] + b[k]) / 2) for k in a)
    assert averaged["step"] == 4 and averaged["averaged_from"] == ["a.pt (step 0)", "b.pt (step 4)"]
    save_checkpoint(averaged, tmp_path / "avg.pt")
    assert Translator.from_checkpoint(tmp_path / "avg.pt", device="cpu").translate(["ein mann ."])


def test_checkpoints_of_different_models_are_refused_in_one_line(tmp_path):
    transformer = build_checkpoint(tmp_path / "t.pt", max_len=32)
    rnn = build_checkpoint(tmp_path / "r.pt", kind="rnn", max_len=32)
    with pytest.raises(CheckpointError, match=r"differ in model\.kind \('transformer' vs 'rnn'\)"):
        average_checkpoints([transformer, rnn])
    payload = load_checkpoint(transformer)  # same shapes, other heads: the config tells them apart
    payload["config"]["model"]["num_heads"] = 4
    save_checkpoint(payload, tmp_path / "heads.pt")
    with pytest.raises(CheckpointError, match=r"model\.num_heads \(2 vs 4\)") as error:
        average_checkpoints([transformer, tmp_path / "heads.pt"])
    assert "\n" not in str(error.value)


def test_a_wider_model_is_named_by_the_width_it_was_given_not_the_derived_d_k(tmp_path):
    narrow = build_checkpoint(tmp_path / "narrow.pt", max_len=32)  # d_model 16, 2 heads: d_k 8
    payload = load_checkpoint(narrow)
    payload["config"]["model"].update(d_model=32, d_k=16, d_v=16)  # as a d_model=32 run records it
    save_checkpoint(payload, tmp_path / "wide.pt")
    with pytest.raises(CheckpointError, match=r"differ in model\.d_model \(16 vs 32\)"):
        average_checkpoints([narrow, tmp_path / "wide.pt"])


def test_the_script_averages_a_runs_last_checkpoints_for_translate_and_evaluate(tmp_path, tiny_config, capsys):
    run = tmp_path / "run"
    cfg = tiny_config("trainer.max_steps=6", "trainer.eval_every=2", "trainer.average_last=2")
    train(cfg, run)
    average, translate, evaluate = load("average"), load("translate"), load("evaluate")
    out = tmp_path / "avg.pt"
    assert average.main([str(run), "--last", "2", "-o", str(out)]) == 0
    assert "step_0000004.pt (step 4), step_0000006.pt (step 6)" in capsys.readouterr().out
    # the trainer's own averaged.pt of the same two checkpoints holds the same weights
    mine, trainers = load_checkpoint(out)["model"], load_checkpoint(run / "checkpoints" / "averaged.pt")["model"]
    assert all(torch.equal(mine[k], trainers[k]) for k in mine)
    assert translate.main([str(out), "the dog sleeps ."]) == 0
    assert evaluate.main([str(out), "--split", "test"]) == 0
    capsys.readouterr()
    assert average.main([str(tmp_path), "--last", "2", "-o", str(out)]) == 1
    assert "no step_*.pt checkpoints" in capsys.readouterr().err
    assert average.main([str(tmp_path / "missing.pt"), str(out), "-o", str(tmp_path / "x.pt")]) == 1
    assert capsys.readouterr().err.startswith("error: no checkpoint at")


def test_the_script_refuses_to_replace_an_input_or_a_file_of_a_runs_checkpoints(tmp_path, capsys):
    """``-o RUN/checkpoints/last.pt`` used to exit 0 and leave the run weights only, never to
    resume again (issue 33, item 1): the output is checked before anything is written."""
    folder = tmp_path / "run" / "checkpoints"
    best = build_checkpoint(folder / "best.pt", max_len=32)
    last = shifted(best, folder / "last.pt", 0.2)
    step = shifted(best, folder / "step_0000004.pt", 0.4)
    outside = shifted(best, tmp_path / "b.pt", 0.6)
    before = {path: path.read_bytes() for path in (best, last, step, outside)}
    average = load("average")
    for output in (
        last,
        best,
        step,
        folder / "averaged.pt",
        outside,
        tmp_path / "run" / "checkpoints" / ".." / "checkpoints" / "last.pt",
    ):
        assert average.main([str(best), str(outside), "-o", str(output)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: -o ") and err.count("\n") == 1
    assert not (folder / "averaged.pt").exists()
    assert {path: path.read_bytes() for path in before} == before
    linked = tmp_path / "link.pt"  # a link to an input is that input
    linked.symlink_to(outside)
    assert average.main([str(best), str(outside), "-o", str(linked)]) == 1
    assert "one of the checkpoints to average" in capsys.readouterr().err
    assert average.main([str(best), str(outside), "-o", str(tmp_path / "run" / "avg.pt")]) == 0


def test_a_safetensors_file_is_named_as_one_not_called_corrupt(tmp_path, capsys):
    from safetensors.torch import save_file

    best = build_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt", max_len=32)
    shared = tmp_path / "model.safetensors"
    save_file({key: value.clone() for key, value in load_checkpoint(best)["model"].items()}, str(shared))
    with pytest.raises(CheckpointError, match=r"is a safetensors file \(the weights of a shared folder"):
        load_checkpoint(shared)
    assert load("average").main([str(best), str(shared), "-o", str(tmp_path / "avg.pt")]) == 1
    err = capsys.readouterr().err
    assert "is a safetensors file" in err and "corrupt" not in err and not (tmp_path / "avg.pt").exists()

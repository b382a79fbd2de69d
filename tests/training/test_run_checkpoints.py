"""A run folder's checkpoints: the layout the ``CheckpointFolder`` object owns, the ``Checkpoints`` the trainer writes (last, best, rotated
step files, averaged), the preference translate/evaluate resolve by, and the final weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from minitrans.core.checkpoint import (
    CheckpointError,
    CheckpointFolder,
    average_state_dicts,
    load_checkpoint,
    resolve_checkpoint,
)
from minitrans.training.checkpoints import Checkpoints
from minitrans.training.state import TrainingStopped


def weights(value: float) -> dict:
    return {"model": {"w": torch.full((3,), float(value)), "count": torch.tensor([int(value)])}}


def test_step_files_rotate_to_the_newest_kept(tmp_path):
    checkpoints = Checkpoints.of_run(tmp_path / "run", keep_steps=2)
    for step in (100, 200, 300):
        checkpoints.save_step(weights(step), step)
    assert [path.name for path in checkpoints.step_files()] == ["step_0000200.pt", "step_0000300.pt"]
    assert checkpoints.folder == tmp_path / "run" / "checkpoints"


def test_the_preferred_checkpoint_is_averaged_then_best_then_last(tmp_path):
    run = tmp_path / "run"
    checkpoints = Checkpoints.of_run(run)
    checkpoints.folder.mkdir(parents=True)
    assert checkpoints.preferred() is None
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        resolve_checkpoint(run)
    checkpoints.save_last(weights(1))
    assert resolve_checkpoint(run) == checkpoints.last
    checkpoints.save_best(weights(2))
    assert resolve_checkpoint(run) == resolve_checkpoint(checkpoints.folder) == checkpoints.best
    checkpoints.save_averaged(weights(3))
    assert resolve_checkpoint(run) == checkpoints.averaged
    assert resolve_checkpoint(checkpoints.best) == checkpoints.best  # a file is taken as it is
    assert Checkpoints.run_folder_of(checkpoints.best) == run


def test_final_weights_average_the_kept_steps_when_asked(tmp_path):
    checkpoints = Checkpoints.of_run(tmp_path, keep_steps=2)
    checkpoints.save_best(weights(9))
    for step in (1, 2, 4):
        checkpoints.save_step(weights(step), step)
    chosen = checkpoints.final_weights()
    assert chosen.is_averaged and chosen.source == "average of last 2 checkpoints"
    expected = average_state_dicts([weights(2)["model"], weights(4)["model"]])
    assert torch.equal(chosen.state["w"], expected["w"]) and torch.equal(chosen.state["w"], torch.full((3,), 3.0))
    assert torch.equal(chosen.state["count"], torch.tensor([4]))  # integers from the last, not averaged


def test_final_weights_without_averaging_are_the_best_and_drop_a_stale_average(tmp_path):
    checkpoints = Checkpoints.of_run(tmp_path, keep_steps=1)
    checkpoints.save_averaged(weights(5))  # from an earlier finish with average_last > 1
    checkpoints.save_step(weights(1), 1)
    assert checkpoints.final_weights().source == "last weights"  # no best.pt: keep the model's own
    assert not checkpoints.averaged.exists()
    checkpoints.save_best(weights(7))
    chosen = checkpoints.final_weights()
    assert chosen.source == "best validation BLEU" and not chosen.is_averaged
    assert torch.equal(chosen.state["w"], load_checkpoint(checkpoints.best)["model"]["w"])


def test_a_run_judged_by_its_last_weights_keeps_no_best_and_translates_with_last(tmp_path):
    checkpoints = Checkpoints.of_run(tmp_path / "run", keep_steps=1, keep_best=False)
    checkpoints.folder.mkdir(parents=True)
    checkpoints.save_last(weights(1))
    checkpoints.save_best(weights(2))  # the trainer asks; the policy keeps nothing
    assert not checkpoints.best.exists()
    best = Checkpoints.of_run(tmp_path / "run").best
    torch.save(weights(3), best)  # a stale best.pt, of a finish judged by best validation BLEU
    chosen = checkpoints.final_weights()
    assert (chosen.state, chosen.source, chosen.is_averaged) == (None, "last weights", False)  # the model's own
    assert not best.exists() and resolve_checkpoint(tmp_path / "run") == checkpoints.last


def test_averaging_still_wins_over_the_last_weights_policy(tmp_path):
    checkpoints = Checkpoints.of_run(tmp_path, keep_steps=2, keep_best=False)
    for step in (2, 4):
        checkpoints.save_step(weights(step), step)
    assert checkpoints.final_weights().source == "average of last 2 checkpoints"


@pytest.mark.parametrize("then", ["resume", "finish"])
def test_a_stopped_run_names_the_command_that_continues_it_in_its_own_folder(then):
    folder = Path("outputs/2026-12-01/18-00-00 x")
    stopped = TrainingStopped("stopped by SIGINT after step 3", 130, folder, then=then)
    line = stopped.resume_line(["trainer.max_steps=300", "hydra.run.dir=elsewhere", "model=rnn"])
    assert line == (
        f"to {then}, run: python scripts/train.py trainer.max_steps=300 model=rnn "
        "'hydra.run.dir=outputs/2026-12-01/18-00-00 x'"
    )


def test_the_run_folder_policy_lives_in_training_and_the_layout_below_every_reader():
    """core/checkpoint.py is file safety only; what a run writes and which weights it is judged by
    (best validation BLEU, averaging) is the trainer's; the layout readers need sits in core."""
    import minitrans.core.checkpoint as file_safety

    assert not hasattr(file_safety, "Checkpoints") and not hasattr(file_safety, "FinalWeights")
    assert "best validation BLEU" not in Path(file_safety.__file__).read_text(encoding="utf-8")
    assert issubclass(Checkpoints, CheckpointFolder) and Checkpoints.__module__ == "minitrans.training.checkpoints"
    assert not any(name.startswith("save_") or name == "final_weights" for name in vars(CheckpointFolder))

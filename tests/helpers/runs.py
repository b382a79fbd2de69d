"""What a finished run folder says: the scalars its TensorBoard events hold, and the training
state of its last.pt."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.core.checkpoint import load_checkpoint


def scalars(run: Path, tag: str) -> dict[int, float]:
    """``{step: value}`` of one scalar ``tag`` over every event file of the folder (a step logged
    twice fails)."""
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()  # reads every event file of the folder, honouring purge_step
    steps = [(event.step, event.value) for event in events.Scalars(tag)]
    assert len(steps) == len({step for step, _ in steps}), f"{tag} logged twice for a step"
    return dict(steps)


def state(run: Path) -> dict:
    """The training state (step, epoch, ...) of the run's last.pt."""
    return load_checkpoint(run / "checkpoints" / "last.pt")["state"]


__all__ = ["scalars", "state"]

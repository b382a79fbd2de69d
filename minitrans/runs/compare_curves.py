"""Learning curves for ``compare.py``: each run's validation cross-entropy (teacher-forced) and
validation BLEU (greedy decoding) by step, read from the run's TensorBoard events, and the first
step at which each reaches a stated BLEU. The claim experiments (``experiment=claim_*``,
docs/claims.md) are read from this figure: a switch that only hurts decoding shows as a falling
loss beside a flat BLEU."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minitrans.runs.compare_plots import _figure, line_styles
from minitrans.runs.run_set import Run, run_labels

LOSS_TAG, BLEU_TAG = "valid/cross_entropy", "valid/bleu"
ENTROPY_PREFIX = "attention_entropy/"  # runs/tblog.py: each layer's mean row entropy on the samples
STATED_BLEU = 30.0  # "steps to BLEU 30" in the legend: a level every claim experiment's baseline reaches


Curve = list[tuple[int, float]]


def validation_curves(folder: str | Path) -> dict[str, Curve]:
    """{"loss": [(step, valid cross-entropy)], "bleu": [(step, valid BLEU)], "entropy": [(step,
    attention entropy averaged over every layer)]} from the events in ``folder`` (empty lists
    where a tag was never logged)."""
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags()["scalars"])
    read = {key: events.Scalars(tag) if tag in tags else [] for key, tag in (("loss", LOSS_TAG), ("bleu", BLEU_TAG))}
    curves = {key: sorted({event.step: event.value for event in found}.items()) for key, found in read.items()}
    by_step: dict[int, list[float]] = {}
    for tag in sorted(tag for tag in tags if tag.startswith(ENTROPY_PREFIX)):
        for event in events.Scalars(tag):
            by_step.setdefault(event.step, []).append(event.value)
    curves["entropy"] = [(step, sum(values) / len(values)) for step, values in sorted(by_step.items())]
    return curves


def steps_to(curve: Curve, level: float) -> int | None:
    """The first logged step whose value reaches ``level``; None when none does."""
    return next((step for step, value in curve if value >= level), None)


def varying_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's sweep overrides that differ between the runs (``causal_mask=false``), so a
    legend names what the experiment changed; run_labels' where no override varies."""
    items = [dict(item.split("=", 1) for item in run.overrides.split(",") if "=" in item) for run in runs]
    keys = [key for key in dict.fromkeys(k for found in items for k in found) if len({f.get(key) for f in items}) > 1]
    if not keys:
        return run_labels(runs)
    return [", ".join(f"{key.rsplit('.', 1)[-1]}={found.get(key, '–')}" for key in keys) for found in items]


def plot_learning_curves(runs: Sequence[Run], path: str | Path, split: str | None = None) -> Path | None:
    """Panels by step, one line per run: validation cross-entropy, validation BLEU (with the step
    each run first reaches STATED_BLEU in its legend) and, where the runs logged it, the mean
    attention entropy of the sample sentences; None unless some run logged at
    least two validations. ``split`` is accepted for compare.py's figure interface (the curves
    are validation curves)."""
    curves = [validation_curves(run.folder) for run in runs]
    if not any(len(curve["bleu"]) >= 2 for curve in curves):
        return None
    with_entropy = any(len(curve["entropy"]) >= 2 for curve in curves)
    fig = _figure(15.0 if with_entropy else 10.0, 4.2)
    loss_ax, bleu_ax, *entropy_ax = fig.subplots(1, 3 if with_entropy else 2)
    styles = line_styles([run.kind for run in runs])
    for label, curve, (color, marker, style) in zip(varying_labels(runs), curves, styles):
        if curve["loss"]:
            loss_ax.plot(*zip(*curve["loss"]), marker=marker, linestyle=style, color=color, label=label, markersize=4)
        if curve["bleu"]:
            reached = steps_to(curve["bleu"], STATED_BLEU)
            when = f"BLEU {STATED_BLEU:g} at step {reached}" if reached is not None else f"never BLEU {STATED_BLEU:g}"
            bleu_ax.plot(
                *zip(*curve["bleu"]),
                marker=marker,
                linestyle=style,
                color=color,
                label=f"{label} ({when})",
                markersize=4,
            )
        if entropy_ax and curve["entropy"]:
            entropy_ax[0].plot(*zip(*curve["entropy"]), marker=marker, linestyle=style, color=color, label=label)
    bleu_ax.axhline(STATED_BLEU, color="grey", linestyle=":", linewidth=1)
    loss_ax.set(xlabel="step", ylabel="cross-entropy (nats per token)", title="validation loss, teacher-forced")
    bleu_ax.set(xlabel="step", ylabel="BLEU", title="validation BLEU, greedy decoding")
    if entropy_ax:
        entropy_ax[0].set(xlabel="step", ylabel="nats", title="attention entropy, mean of all layers (samples)")
    for ax in (loss_ax, bleu_ax, *entropy_ax):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.title.set_fontsize(11)
    path = Path(path)
    fig.savefig(path)
    return path


__all__ = ["STATED_BLEU", "plot_learning_curves", "steps_to", "validation_curves", "varying_labels"]

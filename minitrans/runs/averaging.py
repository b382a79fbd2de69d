"""Checkpoint averaging: the mean of the weights of several checkpoints of one run.

Averaging the last checkpoints of a run (Vaswani et al., 2017; ``onmt_average_models``,
fairseq's ``average_checkpoints.py``) smooths out the noise of the last updates. Only
checkpoints of one model can be averaged: the same model and data configuration, the same
tokenizer, the same weight names and shapes; anything else is refused with one line naming
the first difference. The result is a self-contained weights checkpoint (config, tokenizer,
weights, the record of the training data), which ``translate.py`` and ``evaluate.py`` accept
like any ``best.pt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minitrans.core.checkpoint import CheckpointError, average_state_dicts, load_checkpoint
from minitrans.core.protected import output_problem
from minitrans.core.saved_config import EVALUATION_ONLY, normalized_model

DERIVED = ("d_k", "d_v", "d_attention")  # model keys the config fills in from others (d_k = d_model / heads)


def _difference(first: dict[str, Any], other: dict[str, Any]) -> str | None:
    """The first thing that keeps two checkpoints from being averaged, or None."""
    for section in ("model", "data"):
        a, b = first["config"].get(section, {}), other["config"].get(section, {})
        if section == "model":  # derived values filled in: old and new checkpoints of one model agree
            a, b = normalized_model(a), normalized_model(b)
        # the big one first; a derived key only when nothing it derives from differs
        for key in sorted(set(a) | set(b), key=lambda k: (k not in ("kind", "name"), k in DERIVED, k)):
            if key not in EVALUATION_ONLY and a.get(key) != b.get(key):
                return f"{section}.{key} ({a.get(key)!r} vs {b.get(key)!r})"
    if first["tokenizer"] != other["tokenizer"]:
        return "the tokenizer"
    a, b = first["model"], other["model"]
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            return f"the weight names ({key})"
        if a[key].shape != b[key].shape:
            return f"the shape of {key} ({tuple(a[key].shape)} vs {tuple(b[key].shape)})"
    return None


def check_output(inputs: Sequence[str | Path], output: str | Path) -> None:
    """Refuse, before anything is read or written, an output that would replace one of the
    inputs or a file a run owns (:func:`minitrans.core.protected.output_problem`: its
    ``checkpoints/``, whose ``last.pt`` may be the run's only resumable state). Raises CheckpointError, one line."""
    problem = output_problem(output, [(path, "one of the checkpoints to average") for path in inputs])
    if problem is not None:
        raise CheckpointError(problem)


def average_checkpoints(paths: Sequence[str | Path]) -> dict[str, Any]:
    """A weights checkpoint whose model is the mean of the checkpoints at ``paths`` (the last
    one gives the config and the record of the training data). Raises CheckpointError, one line,
    for an unusable file or checkpoints of different models."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    payloads = []
    for path in paths:
        payload = load_checkpoint(path)
        if not all(key in payload for key in ("config", "tokenizer", "model")):
            raise CheckpointError(f"{path} holds no model config, tokenizer and weights")
        if payloads:
            difference = _difference(payloads[0], payload)
            if difference is not None:
                raise CheckpointError(
                    f"{paths[0]} and {path} differ in {difference}: only checkpoints of one model can be averaged"
                )
        payloads.append(
            {key: payload[key] for key in ("config", "tokenizer", "model", "step", "training_data") if key in payload}
        )
    last = payloads[-1]
    return {
        **last,
        "model": average_state_dicts([payload["model"] for payload in payloads]),
        "step": max(int(payload.get("step", 0)) for payload in payloads),
        "averaged_from": [
            f"{Path(path).name} (step {payload.get('step', '?')})" for path, payload in zip(paths, payloads)
        ],
    }


__all__ = ["average_checkpoints", "check_output"]

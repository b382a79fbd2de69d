"""Resuming a run: which checkpoint it continues from, and what may change when it does.

This is the trainer's policy, kept out of :mod:`minitrans.core.checkpoint` (which only writes and
reads files safely): a run resumes only the model, training data and seed it was trained
with; ``trainer.*`` may change (e.g. a larger ``max_steps`` to train on), and so may what is
evaluated (:data:`EVALUATION_ONLY`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from minitrans.core.checkpoint import CheckpointError, load_checkpoint
from minitrans.core.checks import ConfigError
from minitrans.core.config import TrainConfig, TrainerConfig
from minitrans.core.saved_config import EVALUATION_ONLY, normalized_model
from minitrans.data.tokenizer import Tokenizer
from minitrans.training import distributed
from minitrans.training.checkpoints import Checkpoints

AFRESH = "to start afresh: trainer.resume=false or a new run folder"


def resume_checkpoint(
    checkpoints: Checkpoints, cfg: TrainConfig, device: torch.device
) -> tuple[Path | None, dict | None]:
    """The checkpoint a run continues from and its contents, checked to be of this run (model,
    data and seed) with a usable tokenizer; ``(None, None)`` for a fresh start."""
    path = find_resume_checkpoint(checkpoints, cfg.trainer)
    payload = load_resume_checkpoint(path, device)
    if payload is not None:
        check_same_run(payload.get("config", {}), cfg, path)
        try:
            Tokenizer.from_state(payload["tokenizer"])
        except (KeyError, TypeError, AttributeError, RuntimeError, OSError):
            raise CheckpointError(f"{path} holds no usable tokenizer; {AFRESH}") from None
    return path, payload


def find_resume_checkpoint(checkpoints: Checkpoints, tcfg: TrainerConfig) -> Path | None:
    """The checkpoint a run starts from: its own ``last.pt`` first (so a re-run continues where
    it stopped), then ``trainer.resume_from``; None for a fresh start."""
    if tcfg.resume and checkpoints.last.exists():
        return checkpoints.last
    if tcfg.resume_from is not None:
        if not Path(tcfg.resume_from).is_file():
            raise CheckpointError(f"trainer.resume_from: no checkpoint at {tcfg.resume_from}")
        return Path(tcfg.resume_from)
    return None


def load_resume_checkpoint(path: Path | None, device: torch.device) -> dict | None:
    """The checkpoint's contents (None for a fresh start); a problem says how to start afresh."""
    if path is None:
        return None
    try:
        return load_checkpoint(path, map_location=device)
    except CheckpointError as error:
        raise CheckpointError(f"{error} ({AFRESH})") from None


def _same_value(saved, value) -> bool:
    """Equal, or the same number spelt another way ('2' and '2.0' of model.attention_scale): a
    text field holding a number means the number."""
    if saved == value:
        return True
    if not (isinstance(saved, str) and isinstance(value, str)):
        return False
    try:
        return float(saved) == float(value)
    except ValueError:
        return False


def check_same_run(saved_config: dict, cfg: TrainConfig, path: Path) -> None:
    """Refuse (ConfigError naming the key) a checkpoint of another model, corpus or seed."""
    config = asdict(cfg)
    for section in ("model", "data"):
        saved = saved_config.get(section, {})
        if section == "model":
            saved = normalized_model(saved)
        for key, value in config[section].items():
            if key not in EVALUATION_ONLY and key in saved and not _same_value(saved[key], value):
                raise ConfigError(
                    f"{section}.{key}: {path} was trained with {saved[key]!r}, not {value!r}; resume with "
                    "the original value, use a new run folder, or set trainer.resume=false"
                )
    saved_seed = saved_config.get("seed", cfg.seed)
    if saved_seed != cfg.seed:  # the data order and every random stream follow the seed
        raise ConfigError(
            f"seed: {path} was trained with seed={saved_seed}, not {cfg.seed}; resume with "
            "the original seed, use a new run folder, or set trainer.resume=false"
        )


__all__ = [
    "AFRESH",
    "check_same_run",
    "find_resume_checkpoint",
    "load_final_weights",
    "load_resume_checkpoint",
    "resume_checkpoint",
]


def load_final_weights(model, checkpoints: Checkpoints, dist, device: torch.device, averaged_payload) -> str:
    """Load the weights a run is judged by (see :meth:`Checkpoints.final_weights`), chosen by
    rank 0 and sent to the other ranks; an average is saved as averaged.pt (``averaged_payload()``
    builds its checkpoint). Returns how they were chosen (on rank 0; an empty string elsewhere)."""
    chosen = checkpoints.final_weights(map_location=device) if dist.is_main else None
    if chosen is not None and chosen.state is not None:
        model.load_state_dict(chosen.state)
    with torch.no_grad():
        distributed.broadcast_tensors(list(model.state_dict().values()), dist)
    if chosen is not None and chosen.is_averaged:
        checkpoints.save_averaged(averaged_payload())
    return chosen.source if chosen is not None else ""

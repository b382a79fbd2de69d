"""A run's configuration read back from what a checkpoint or shared folder saved
(``asdict(TrainConfig)``): rebuilt into the typed schemas of :mod:`minitrans.core.config` once,
at load, so a renamed or misspelt key is an error naming it rather than a silent ``None``; and
the saved model config compared across versions (averaging, resuming).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from minitrans.core.config import (
    MODEL_SCHEMAS,
    CleanConfig,
    DataConfig,
    RNNConfig,
    TrainConfig,
    TrainerConfig,
    TransformerConfig,
    local_cache_dir,
)


def model_from_dict(values: dict) -> TransformerConfig | RNNConfig:
    """Rebuild a model config saved in a checkpoint."""
    return MODEL_SCHEMAS[values.get("kind", "transformer")](**values)


def config_from_dict(values: dict[str, Any]) -> TrainConfig:
    """A run's configuration as its checkpoint or export saved it (``asdict(TrainConfig)``),
    rebuilt once so that it is read back typed: a missing key takes the schema's default, a key
    this version does not know is a ValueError naming it (never a silent None downstream). Its
    ``data.cache_dir`` is this machine's (:func:`local_cache_dir`): a checkpoint or shared folder
    made elsewhere never chooses where we write."""
    if not isinstance(values, dict):
        raise ValueError(f"the run's configuration is a {type(values).__name__}, not an object")
    rest = dict(values)
    data = dict(rest.pop("data", None) or {}) | {"cache_dir": local_cache_dir()}
    try:
        clean = CleanConfig(**(data.pop("clean", None) or {}))
        return TrainConfig(
            model=model_from_dict(rest.pop("model", None) or {}),
            data=DataConfig(**data, clean=clean),
            trainer=TrainerConfig(**(rest.pop("trainer", None) or {})),
            **rest,
        )
    except TypeError as error:  # "__init__() got an unexpected keyword argument 'x'"
        raise ValueError(f"the run's configuration has a key this version does not know ({error})") from None


EVALUATION_ONLY = {"cache_dir", "valid_split", "test_splits"}  # data keys of what is evaluated, not trained


def normalized_model(values: dict[str, Any]) -> dict[str, Any]:
    """A saved model config as this version records it: derived values (``d_k``, ``d_v``,
    ``d_attention``) filled in, so a checkpoint written before they were recorded compares
    equal to the same config now."""
    try:
        return asdict(model_from_dict(values))
    except (KeyError, TypeError, ValueError):  # not a config this version can build: compare as saved
        return values


__all__ = ["EVALUATION_ONLY", "config_from_dict", "model_from_dict", "normalized_model"]

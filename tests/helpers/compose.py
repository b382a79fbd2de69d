"""The training configuration composed as ``scripts/train.py`` composes it (``conf/``, the
registered schemas), for tests that read what an experiment or launcher option sets."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from minitrans.core.hydra_config import register_configs

CONF = Path(__file__).resolve().parents[2] / "conf"


def compose_experiment(*overrides: str, hydra: bool = False):
    """``conf/train.yaml`` with ``overrides`` (a DictConfig; with ``hydra``, Hydra's own part too)."""
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose(config_name="train", overrides=list(overrides), return_hydra_config=hydra)
    finally:
        GlobalHydra.instance().clear()

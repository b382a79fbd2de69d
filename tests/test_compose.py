"""Every config file composes into a valid typed configuration."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from minitrans.config import RNNConfig, TrainConfig, TransformerConfig, register_configs, to_dataclass

CONF = Path(__file__).resolve().parents[1] / "conf"
register_configs()


def compose_train(overrides: list[str]):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize("model", options("model"))
@pytest.mark.parametrize("data", options("data"))
def test_every_model_and_data_config_composes(model, data):
    required = {"parallel": ["data.root=corpus", "data.tgt_lang=fr"], "hf": ["data.path=corpus.jsonl"]}
    cfg = to_dataclass(compose_train([f"model={model}", f"data={data}", *required.get(data, [])]))
    assert isinstance(cfg, TrainConfig)
    assert isinstance(cfg.model, TransformerConfig if model == "transformer" else RNNConfig)
    assert cfg.model.kind == model
    assert cfg.data.name == data


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes(experiment):
    cfg = to_dataclass(compose_train([f"experiment={experiment}"]))
    assert isinstance(cfg, TrainConfig)


def test_d_k_is_its_own_knob():
    cfg = to_dataclass(compose_train(["model.num_heads=3", "model.d_k=24"]))
    assert (cfg.model.num_heads, cfg.model.head_dim) == (3, 24)
    default = to_dataclass(compose_train([])).model
    assert default.head_dim == default.d_model // default.num_heads

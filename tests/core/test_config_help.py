"""``train.py --help`` lists the groups without the internal schemas and every key with its
default and the help text of its field's metadata; a schema is refused as a group choice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from helpers import REPO

from minitrans.core.config import CleanConfig, DataConfig, RNNConfig, TrainerConfig, TransformerConfig
from minitrans.core.config_help import ConfigKey, config_reference, help_text, schema_keys, train_help
from minitrans.core.hydra_config import check_command_line
from minitrans.core.knob import knob

CONFIG_DIR = str(REPO / "conf")
SCHEMAS = [TransformerConfig, RNNConfig, DataConfig, CleanConfig, TrainerConfig]


@pytest.mark.parametrize(
    "choice, group, available",
    [
        ("model=transformer_schema", "model", "rnn, rnn_attention, transformer"),
        ("model=rnn_schema", "model", "rnn, rnn_attention, transformer"),
        ("data=data_schema", "data", "generated, hf, multi30k, parallel"),
        ("trainer=trainer_schema", "trainer", "default"),
    ],
)
def test_a_schema_is_not_a_choice(choice, group, available):
    option = choice.split("=")[1]
    assert check_command_line([choice], CONFIG_DIR) == f"{group}: no config {option!r} (available: {available})"


def test_the_group_files_still_get_their_schemas_types():
    assert check_command_line(["model=rnn_attention", "model.d_hiden=3"], CONFIG_DIR).startswith("model.d_hiden:")
    assert "model.num_heads" in check_command_line(["model.num_heads=two"], CONFIG_DIR)
    assert check_command_line(["model=rnn", "data=multi30k", "trainer.lr=0.01"], CONFIG_DIR) is None


def test_every_key_of_every_schema_is_described_in_one_line_with_its_default():
    text = help_text()
    for schema in SCHEMAS:
        for f in dataclasses.fields(schema):
            help_ = f.metadata.get("help")
            assert help_, f"{schema.__name__}.{f.name} has no help to show"
            if f.metadata.get("hidden") or dataclasses.is_dataclass(f.type) or f.name == "clean":
                continue
            lines = [line for line in text.splitlines() if line.split("=")[0].strip() == _key(schema, f.name)]
            assert sum(help_ in line for line in lines) == 1, f.name  # model.* keys: once per model schema
    assert "crash_at_step" not in text  # a testing aid stays out of --help
    assert "  trainer.max_steps=3000 " in text and "  model.d_k=null " in text and "  trainer.betas=[0.9,0.98] " in text
    for key in ("seed", "name"):
        assert f"  {key}=" in text


def test_the_reference_follows_the_schema_a_new_field_appears_with_its_help(monkeypatch):
    @dataclass
    class Extra:
        width: int = knob(7, "how wide")
        hidden: int | None = knob(None, "testing aid", hidden=True)
        items: list[int] = knob(factory=lambda: [1, 2], help="some items")

    assert schema_keys("x.", Extra) == [
        ConfigKey("x.width", "7", "how wide"),
        ConfigKey("x.items", "[1,2]", "some items"),
    ]


def test_the_reference_names_every_documented_section():
    titles = [title for title, _ in config_reference()]
    assert (
        titles[0].startswith("model=transformer")
        and "trainer" in titles
        and "data.clean (training pairs only)" in titles
    )


def _key(schema: type, name: str) -> str:
    prefix = {
        TransformerConfig: "model.",
        RNNConfig: "model.",
        DataConfig: "data.",
        CleanConfig: "data.clean.",
        TrainerConfig: "trainer.",
    }
    return prefix[schema] + name


def test_the_help_lists_the_groups_and_keys_but_no_schema():
    text = train_help(CONFIG_DIR)
    assert "  model: rnn, rnn_attention, transformer" in text and "  debug: overfit, tiny" in text
    assert "  model.num_heads=4 " in text and "_schema" not in text and "hydra:" not in text


@pytest.mark.slow
def test_train_help_shows_groups_without_schemas_and_one_line_per_key(run_train):
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_train("--help")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, result.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 1.0, f"train.py --help took {cpu:.2f} CPU-seconds"
    assert "model: rnn, rnn_attention, transformer" in result.stdout and "trainer.max_steps=3000 " in result.stdout
    assert "_schema" not in result.stdout
    assert any(line.split()[:1] == ["model.num_heads=4"] and "heads" in line for line in result.stdout.splitlines())

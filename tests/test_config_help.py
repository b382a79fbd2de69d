"""``train.py --help`` lists the groups without the internal schemas and every key with the
comment written beside its field; a schema is refused as a group choice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from minitrans.core.config import CleanConfig, DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig
from minitrans.core.config_help import HIDDEN_PREFIX, field_comments, help_config, help_text
from minitrans.core.hydra_config import check_command_line

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")
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


@dataclass
class Example:
    plain: int = 1  # beside the field
    # above the field
    above: str = "x"
    both: float = 0.5  # beside wins  # even with a second hash
    none: list[int] = field(default_factory=list)
    hidden: int | None = None  # testing aid: not in --help


def test_field_comments_come_from_beside_or_above_each_field():
    assert field_comments(Example) == {
        "plain": "beside the field",
        "above": "above the field",
        "both": "beside wins  # even with a second hash",
        "none": "",
        "hidden": "testing aid: not in --help",
    }


def test_every_key_of_every_schema_is_described_in_one_line():
    text = help_text()
    for schema in SCHEMAS:
        comments = field_comments(schema)
        for f in dataclasses.fields(schema):
            assert comments[f.name], f"{schema.__name__}.{f.name} has no comment to show in --help"
            if not comments[f.name].startswith(HIDDEN_PREFIX):
                lines = [line for line in text.splitlines() if line.split()[:1] == [_key(schema, f.name)]]
                assert any(comments[f.name] in line for line in lines), f.name
    assert "crash_at_step" not in text  # a testing aid stays out of --help
    for key in ("seed", "name"):
        assert field_comments(TrainConfig)[key] and f"  {key} " in text


def _key(schema: type, name: str) -> str:
    prefix = {
        TransformerConfig: "model.",
        RNNConfig: "model.",
        DataConfig: "data.",
        CleanConfig: "data.clean.",
        TrainerConfig: "trainer.",
    }
    return prefix[schema] + name


def test_the_help_template_lists_groups_and_keys_but_no_schema():
    help_cfg = help_config()
    assert "$APP_CONFIG_GROUPS" in help_cfg["template"] and "model.num_heads" in help_cfg["template"]
    assert "_schema" not in help_cfg["template"]


@pytest.mark.slow
def test_train_help_shows_groups_without_schemas_and_one_line_per_key(run_train):
    result = run_train("--help")
    assert result.returncode == 0, result.stderr
    assert "model: rnn, rnn_attention, transformer" in result.stdout
    assert "_schema" not in result.stdout
    assert any(line.split()[:1] == ["model.num_heads"] and "heads" in line for line in result.stdout.splitlines())

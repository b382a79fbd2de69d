"""A bad configuration ends scripts/train.py with one ``error:`` line naming the key, exit 2,
and no traceback: typos on the command line or inside a YAML file, wrong types, impossible
values, and data problems found only when the corpus is read."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from minitrans.config import ConfigError, TrainerConfig, TransformerConfig, check_command_line

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def assert_one_error_line(result, *names: str) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output
    last = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("error: "), last
    for name in names:
        assert name in last, last
    return last


@pytest.fixture
def config_dir_with_experiments(tmp_path) -> Path:
    """An extra config folder (``--config-dir``) with a user's own experiment files."""
    folder = tmp_path / "myconf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "typo.yaml").write_text("# @package _global_\ntrainer:\n  lrr: 0.1\n")
    (folder / "badtype.yaml").write_text("# @package _global_\nmodel:\n  num_heads: four\n")
    (folder / "fine.yaml").write_text("# @package _global_\ntrainer:\n  lr: 0.002\n")
    return folder.parent


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["trainer.lrr=0.1"], ["trainer.lrr", "unknown key", "trainer.lr"]),
        (["+trainer.lrr=0.1"], ["trainer.lrr", "unknown key"]),
        (["+colour=red"], ["colour", "unknown key"]),
        (["trainer.max_steps=lots"], ["trainer.max_steps", "lots"]),
        (["model.num_heads=0"], ["model.num_heads", "positive"]),
        (["model.num_heads=-2"], ["model.num_heads", "positive"]),
        (["model.d_model=30", "model.num_heads=4"], ["model.num_heads", "divisible"]),
        (["model.dropout=1.0"], ["model.dropout", "[0, 1)"]),
        (["model.dropout=-0.1"], ["model.dropout", "[0, 1)"]),
        (["trainer.checkpoint_every=0"], ["trainer.checkpoint_every", "positive"]),
        (["experiment=nosuch"], ["experiment", "nosuch", "available"]),
        (["model=nosuch"], ["model", "nosuch"]),
    ],
)
def test_a_bad_command_line_is_one_error_line(run_train, args, names):
    assert_one_error_line(run_train(*args, timeout=60), *names)


@pytest.mark.parametrize(
    ("experiment", "names"),
    [("typo", ["trainer.lrr", "unknown key", "experiment/typo.yaml"]), ("badtype", ["model.num_heads", "four"])],
)
def test_a_typo_inside_a_yaml_file_is_one_error_line(run_train, config_dir_with_experiments, experiment, names):
    result = run_train("--config-dir", str(config_dir_with_experiments), f"experiment={experiment}", timeout=60)
    assert_one_error_line(result, *names)


def test_the_command_line_check_accepts_what_is_fine(config_dir_with_experiments):
    assert check_command_line(["model=rnn", "trainer.lr=0.01"], CONFIG_DIR) is None
    assert check_command_line([f"--config-dir={config_dir_with_experiments}", "experiment=fine"], CONFIG_DIR) is None
    assert check_command_line(["-m", "model.num_heads=1,2,4", "model.d_k=16,32"], CONFIG_DIR) is None


def write_multi30k(folder: Path, train_lines: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pairs = {"train": train_lines, "val": 2, "test_2016_flickr": 2}
    for split, count in pairs.items():
        for lang, text in (("de", "Ein Hund rennt ."), ("en", "A dog runs .")):
            data = "".join(f"{text} {i}\n" for i in range(count)).encode()
            (folder / f"{split}.{lang}.gz").write_bytes(gzip.compress(data))
    return folder


@pytest.mark.slow
def test_a_missing_data_folder_is_one_error_line(tmp_path, run_train):
    result = run_train("data=multi30k", f"data.root={tmp_path / 'nowhere'}", f"hydra.run.dir={tmp_path / 'run'}")
    assert_one_error_line(result, "data.root", "nowhere", "prepare.py")


@pytest.mark.slow
def test_an_empty_corpus_is_one_error_line(tmp_path, run_train):
    root = write_multi30k(tmp_path / "multi30k", train_lines=0)
    result = run_train("data=multi30k", f"data.root={root}", f"hydra.run.dir={tmp_path / 'run'}")
    assert_one_error_line(result, "data", "train", "empty")


def test_impossible_values_are_refused_by_the_schemas():
    with pytest.raises(ConfigError, match=r"^trainer\.crash_at_step: must be positive"):
        TrainerConfig(crash_at_step=0)
    with pytest.raises(ConfigError, match=r"^model\.num_heads: d_model=30 is not divisible"):
        TransformerConfig(d_model=30, num_heads=4)
    assert TransformerConfig(d_model=30, num_heads=4, d_k=8).head_dim == 8  # explicit d_k: any head count

"""A bad configuration ends scripts/train.py with one ``error:`` line naming the key, exit 2,
and no traceback: typos on the command line or inside a YAML file, wrong types, impossible
values, and data problems found only when the corpus is read."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from helpers import REPO
from helpers.scripts import assert_one_error_line

from minitrans.core.checks import ConfigError
from minitrans.core.config import TrainerConfig, TransformerConfig
from minitrans.core.hydra_config import check_command_line

CONFIG_DIR = str(REPO / "conf")


def problem(*args: str) -> str:
    """The one-line problem scripts/train.py prints (after ``error: ``) for this command line."""
    message = check_command_line(list(args), CONFIG_DIR)
    assert message is not None, f"{args} was accepted"
    assert "\n" not in message
    return message


@pytest.fixture
def config_dir_with_experiments(tmp_path) -> Path:
    """An extra config folder (``--config-dir``) with a user's own experiment files."""
    folder = tmp_path / "myconf" / "experiment"
    folder.mkdir(parents=True)
    (folder / "typo.yaml").write_text("# @package _global_\ntrainer:\n  lrr: 0.1\n")
    (folder / "badtype.yaml").write_text("# @package _global_\nmodel:\n  num_heads: four\n")
    (folder / "fine.yaml").write_text("# @package _global_\ntrainer:\n  lr: 0.002\n")
    return folder.parent


# In process: the same check scripts/train.py runs before Hydra starts (one interpreter, not 14).
@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["trainer.lrr=0.1"], ["trainer.lrr: unknown key", "did you mean 'trainer.lr'?"]),
        (["model.num_hedas=4"], ["model.num_hedas: unknown key", "did you mean 'model.num_heads'?"]),
        (["+trainer.lrr=0.1"], ["trainer.lrr: unknown key"]),
        (["+colour=red"], ["colour: unknown key"]),
        (["trainer.max_steps=lots"], ["trainer.max_steps", "lots"]),
        (["model.num_heads=0"], ["model.num_heads: must be in [1, 16384], got 0"]),
        (["model.num_heads=-2"], ["model.num_heads: must be in [1, 16384], got -2"]),
        (["model.d_model=30", "model.num_heads=4"], ["model.num_heads", "divisible"]),
        (["model.dropout=1.0"], ["model.dropout", "[0, 1)"]),
        (["model.dropout=-0.1"], ["model.dropout", "[0, 1)"]),
        (["trainer.checkpoint_every=0"], ["trainer.checkpoint_every: must be in [1, "]),
        (["experiment=nosuch"], ["experiment", "nosuch", "available: ", "multi30k"]),
        (["model=nosuch"], ["model", "nosuch", "transformer"]),
    ],
)
def test_a_bad_command_line_is_named_in_one_line(args, names):
    message = problem(*args)
    for name in names:
        assert name in message, message


def test_a_suggestion_is_offered_only_when_a_field_is_close():
    assert "did you mean" not in problem("trainer.zzzz=1")
    assert problem("trainer.zzzz=1").startswith("trainer.zzzz: unknown key")


@pytest.mark.parametrize(
    ("experiment", "names"),
    [("typo", ["trainer.lrr", "unknown key", "experiment/typo.yaml"]), ("badtype", ["model.num_heads", "four"])],
)
def test_a_typo_inside_a_yaml_file_is_named_in_one_line(config_dir_with_experiments, experiment, names):
    message = problem("--config-dir", str(config_dir_with_experiments), f"experiment={experiment}")
    for name in names:
        assert name in message, message


@pytest.mark.slow
def test_the_script_exits_2_with_one_error_line_and_writes_nothing(tmp_path, run_train):
    """The exit-code contract, end to end: no traceback, status 2, and not a file written (the
    script runs in an empty folder; Hydra would otherwise create outputs/ there)."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    for args, names in (
        (["trainer.lrr=0.1"], ["error: trainer.lrr: unknown key", "did you mean 'trainer.lr'?"]),
        (["model.num_heads=0", "hydra.run.dir=run"], ["error: model.num_heads: must be in [1, 16384], got 0"]),
    ):
        assert_one_error_line(run_train(*args, timeout=60, cwd=workdir), *names)
        assert list(workdir.iterdir()) == []


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
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_data_problems_found_when_the_corpus_is_read_name_the_key(tmp_path, tiny_config):
    from minitrans.training.run_data import prepare_training_data

    missing = tiny_config("data=multi30k", f"data.root={tmp_path / 'nowhere'}")
    with pytest.raises(ConfigError, match=r"^data\.root: .*nowhere.*prepare\.py"):
        prepare_training_data(missing)
    root = write_multi30k(tmp_path / "multi30k", train_lines=0)
    with pytest.raises(ConfigError, match=r"^data\.train_split: .*train.*empty"):
        prepare_training_data(tiny_config("data=multi30k", f"data.root={root}"))


def test_impossible_values_are_refused_by_the_schemas():
    with pytest.raises(ConfigError, match=r"^trainer\.crash_at_step: must be in \[1, "):
        TrainerConfig(crash_at_step=0)
    with pytest.raises(ConfigError, match=r"^model\.num_heads: d_model=30 is not divisible"):
        TransformerConfig(d_model=30, num_heads=4)
    assert TransformerConfig(d_model=30, num_heads=4, d_k=8).d_k == 8  # explicit d_k: any head count


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("trainer.clip_grad_norm=-1", "trainer.clip_grad_norm: must be in (0, inf), got -1"),
        ("trainer.clip_grad_norm=0", "trainer.clip_grad_norm: must be in (0, inf)"),
        ("trainer.length_penalty=nan", "trainer.length_penalty: must be in [0, 5], got nan"),
        ("trainer.length_penalty=-inf", "trainer.length_penalty: must be in [0, 5], got -inf"),
        ("trainer.max_output_ratio=nan", "trainer.max_output_ratio: must be in (0, 100], got nan"),
        ("trainer.lr=inf", "trainer.lr: must be in (0, inf), got inf"),
        ("trainer.lr=nan", "trainer.lr: must be in (0, inf), got nan"),
        ("trainer.beam_size=10000", "trainer.beam_size: must be in [1, 100], got 10000"),
        ("trainer.eval_sentences=0", "trainer.eval_sentences: must be in [1, "),
        ("trainer.sample_sentences=-1", "trainer.sample_sentences: must be in [0, "),
        ("trainer.min_lr_ratio=nan", "trainer.min_lr_ratio: must be in [0, 1]"),
        ("trainer.weight_decay=-1", "trainer.weight_decay: must be in [0, 10]"),
        ("trainer.betas=[nan,0.9]", "trainer.betas: must be in [0, 1)"),
        ("trainer.max_minutes=inf", "trainer.max_minutes: must be in (0, inf)"),
        ("model.d_model=20000", "model.d_model: must be in [1, 16384], got 20000"),
        ("model.max_len=1000000000", "model.max_len: must be in [1, 65536]"),
        ("model.max_len=1e9", "model.max_len"),
        ("data.num_test=10000000", "data.num_test: must be in [1, 100_000]"),
        ("seed=100000000000000000000", "seed: must be in [0, 4_294_967_295]"),
        ("seed=1e20", "seed"),
        ("seed=-1", "seed: must be in [0, "),
    ],
)
def test_every_number_is_finite_and_in_range_with_the_range_in_the_message(override, expected):
    problem = check_command_line([override], CONFIG_DIR)
    assert problem is not None and problem.startswith(expected), problem
    assert "\n" not in problem


def script_main(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_script", Path(CONFIG_DIR).parent / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


@pytest.mark.parametrize("script", ["translate", "evaluate"])
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--length-penalty", "nan"], "--length-penalty: must be in [0, 5], got nan"),
        (["--length-penalty", "inf"], "--length-penalty: must be in [0, 5], got inf"),
        (["--length-penalty=-inf"], "--length-penalty: must be in [0, 5], got -inf"),
        (["--max-output-ratio", "nan"], "--max-output-ratio: must be in (0, 100], got nan"),
        (["--beam", "10000"], "--beam: must be in [1, 100], got 10000"),
        (["--beam", "0"], "--beam: must be in [1, 100], got 0"),
        (["--beam", "two"], "--beam: not an integer: 'two'"),
    ],
)
def test_a_number_out_of_range_on_a_scripts_command_line_is_one_line_and_exit_2(script, flags, expected, capsys):
    with pytest.raises(SystemExit) as stop:
        script_main(script)(["RUN", *flags])
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith(expected), last


def test_evaluate_refuses_a_negative_limit(capsys):
    with pytest.raises(SystemExit) as stop:
        script_main("evaluate")(["RUN", "--limit", "-5"])
    assert stop.value.code == 2 and "--limit: must be in [1, inf), got -5" in capsys.readouterr().err


def test_a_device_this_machine_lacks_is_a_config_error():
    import torch

    from minitrans.training.setup import training_device as pick_device

    if not torch.backends.mps.is_available():
        with pytest.raises(ConfigError, match="^trainer.device: mps was asked for"):
            pick_device("mps")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="^trainer.device: cuda was asked for"):
            pick_device("cuda")
    with pytest.raises(ConfigError, match="unknown device 'tpu'"):
        pick_device("tpu")


@pytest.mark.parametrize(
    ("entry", "flags", "expected"),
    [
        ("bench.training", ["--dropout", "1"], "--dropout: must be in [0, 1), got 1.0"),
        ("bench.training", ["--steps", "0"], "--steps: must be in [1, 1_000_000], got 0"),
        ("bench.training", ["--threads", "nan"], "--threads: not an integer: 'nan'"),
        ("bench.decoding", ["RUN", "--beams", "1", "10000"], "--beams: must be in [1, 100], got 10000"),
        ("serve", ["RUN", "--max-beam", "10000"], "--max-beam must be in [1, 100], got 10000"),
    ],
)
def test_the_other_entry_points_bound_their_numbers_too(entry, flags, expected, capsys):
    import importlib

    main = script_main("serve") if entry == "serve" else importlib.import_module(f"minitrans.{entry}").main
    with pytest.raises(SystemExit) as stop:
        main(flags)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(expected)


def test_what_the_command_line_check_relies_on_in_hydra_is_still_there():
    """The check reads the command line with Hydra's own parser and a missing group option from
    compose's MissingConfigException; a Hydra upgrade that changes either fails here, loudly."""
    from hydra.errors import MissingConfigException

    from minitrans.core.hydra_config import parse_hydra_command_line

    args = parse_hydra_command_line(["-m", "--config-dir", "extra", "-cn", "other", "--cfg", "job", "a=1", "b=2"])
    assert (args.multirun, args.config_dir, args.config_name, args.cfg) == (True, "extra", "other", "job")
    assert args.overrides == ["a=1", "b=2"]
    assert parse_hydra_command_line(["--no-such-flag"]) is None  # Hydra reports it in its own words
    error = MissingConfigException("missing", missing_cfg_file="model/typo", options=["rnn"])
    assert (error.missing_cfg_file, error.options) == ("model/typo", ["rnn"])
    assert check_command_line(["experiment=typo"], CONFIG_DIR).startswith("experiment: no config 'typo' (available: ")


def test_the_openmp_wait_policy_and_the_device_choices_are_written_once():
    repo = Path(CONFIG_DIR).parent
    sources = [*(repo / "minitrans").rglob("*.py"), *(repo / "scripts").glob("*.py")]
    setting = [p.relative_to(repo).as_posix() for p in sources if "OMP_WAIT_POLICY" in p.read_text(encoding="utf-8")]
    assert setting == ["minitrans/__init__.py"]
    listing = [
        p.relative_to(repo).as_posix() for p in sources if '"cpu", "cuda", "mps"' in p.read_text(encoding="utf-8")
    ]
    assert listing == ["minitrans/core/config.py"]


@pytest.mark.slow
def test_importing_the_package_makes_idle_openmp_threads_sleep_unless_told_otherwise():
    import os
    import subprocess
    import sys

    code = "import os, minitrans.core.utils, torch; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "PASSIVE\n"
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "ACTIVE\n"


def test_a_number_given_as_a_string_is_named_as_one():
    """A hand-edited config.json with ``"d_model": "32"`` printed "got 32", which reads as valid."""
    with pytest.raises(ConfigError, match=r"model.d_model: must be in \[1, 16384\], got '32' \(a str, not a number\)"):
        TransformerConfig(d_model="32")
    with pytest.raises(ConfigError, match=r"model.num_heads: must be in \[1, 16384\], got 0$"):
        TransformerConfig(num_heads=0)


def test_language_codes_that_differ_only_in_case_are_one_language():
    """train.en beside train.EN with src_lang=en tgt_lang=EN trained "en → EN"."""
    from minitrans.core.config import DataConfig

    with pytest.raises(ConfigError, match=r"data.tgt_lang: source and target are both 'en' \('EN'\)"):
        DataConfig(src_lang="en", tgt_lang="EN")


# -- a run's configuration read back typed --------------------------------------------------
def test_a_saved_configuration_is_rebuilt_typed_and_an_unknown_key_is_named():
    from dataclasses import asdict

    from minitrans.core.config import DataConfig, RNNConfig, TrainConfig
    from minitrans.core.saved_config import config_from_dict

    for cfg in (
        TrainConfig(model=TransformerConfig(d_model=32, num_heads=2), data=DataConfig(src_lang="de", tgt_lang="en")),
        TrainConfig(model=RNNConfig(kind="rnn_attention", d_hidden=16), trainer=TrainerConfig(bleu_tokenize="char")),
    ):
        assert config_from_dict(asdict(cfg)) == cfg
    rebuilt = config_from_dict({"model": {"kind": "rnn"}, "data": {"tgt_lang": "fr"}})  # missing keys: defaults
    assert rebuilt.data.tgt_lang == "fr" and rebuilt.data.src_lang == "en" and rebuilt.model.kind == "rnn"
    saved = asdict(TrainConfig(model=TransformerConfig()))
    saved["data"]["tgt_langauge"] = "fr"  # a knob renamed or misspelt: said, not read back as None
    with pytest.raises(ValueError, match="tgt_langauge"):
        config_from_dict(saved)


def test_nothing_above_the_schemas_reads_a_runs_configuration_through_dict_lookups():
    """The translator rebuilds the run's configuration once (``run_config``); inference, the web
    app, the benchmarks and the scripts read it typed, never as ``config.get("data", {})...``."""
    import re

    root = Path(CONFIG_DIR).parent
    files = [*(root / "minitrans").glob("inference/*.py"), *(root / "minitrans").glob("serve/*.py")]
    files += [*(root / "minitrans").glob("bench/*.py"), *(root / "scripts").glob("*.py")]
    chains = re.compile(
        r"""\.get\(["'](data|model|trainer)["'], \{\}\)|config or \{\}\)"""
    )  # (config or {}).get("data", {})
    found = [
        f"{p.relative_to(root)}: {line.strip()}"
        for p in files
        for line in p.read_text().splitlines()
        if chains.search(line)
    ]
    assert found == []


def test_the_tests_prepare_corpora_in_a_cache_of_their_own_never_the_users():
    import os
    import tempfile
    from pathlib import Path

    from minitrans.core.config import DataConfig

    cache = Path(DataConfig().cache_dir).expanduser().resolve()
    assert cache.is_relative_to(Path(tempfile.gettempdir()).resolve()) and "minitrans-test-cache" in cache.name
    assert os.environ["MINITRANS_CACHE_DIR"] == str(cache)  # the scripts the tests start inherit it


@pytest.mark.parametrize(
    "swept, job, words",
    [
        ("model=transformer,bogus", "model=bogus", "no config 'bogus'"),
        ("model.num_heads=2,x", "model.num_heads=x", "model.num_heads"),
        ("experiment=bottleneck,nope", "experiment=nope", "no config 'nope'"),
    ],
)
def test_a_sweep_job_that_cannot_compose_is_one_line_naming_it_before_any_runs(swept, job, words):
    problem = check_command_line(["-m", "debug=tiny", swept, "seed=0,1"], CONFIG_DIR)
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"sweep job {job}: ") and words in problem

"""Shared fixtures: a tiny training configuration (the ``debug=tiny`` recipe), as Hydra overrides
or as a TrainConfig, and a way to run ``scripts/train.py`` in a subprocess. Tiny means seconds per
run on one CPU core."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
TRAIN_SCRIPT = REPO / "scripts" / "train.py"

# Whatever a test prepares without naming a cache (corpora, tokenizers) goes to a cache of this
# process's own, never the user's ~/.cache/minitrans or $MINITRANS_CACHE_DIR; set at import, before
# any test module builds a configuration, and inherited by every script a test starts.
TEST_CACHE = tempfile.mkdtemp(prefix="minitrans-test-cache-")
os.environ["MINITRANS_CACHE_DIR"] = TEST_CACHE
atexit.register(shutil.rmtree, TEST_CACHE, ignore_errors=True)

# pytest-xdist runs the tests in several processes (pytest -n auto): each takes its share of
# the cores for torch's own threads, instead of every process starting one thread per core.
if workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))

# -- Hydra's sweep plugins: the `sweep` extra, not the README's set-up ------------------------------
# A test that needs one skips with the install command, as the demo and export tests do. With
# MINITRANS_TEST_WITHOUT_SWEEP=1 the suite pretends none is installed, as on a machine set up by
# the README alone (CI runs the quick tests that way too): Hydra finds its plugins by walking the
# hydra_plugins namespace package's path, so hiding that path hides every plugin from Hydra itself,
# and a test that composes a plugin's option without skipping fails there.
SWEEP_INSTALL = 'pip install -e ".[sweep]"'
SWEEP_PLUGINS = {
    "joblib": "hydra_joblib_launcher",
    "submitit": "hydra_submitit_launcher",
    "optuna": "hydra_optuna_sweeper",
}
PLUGIN_OF_OPTION = {"joblib": "joblib", "submitit_local": "submitit", "submitit_slurm": "submitit", "optuna": "optuna"}
HIDE_SWEEP_PLUGINS = os.environ.get("MINITRANS_TEST_WITHOUT_SWEEP", "") not in ("", "0")

if HIDE_SWEEP_PLUGINS:
    try:
        import hydra_plugins
    except ImportError:
        pass  # none installed: nothing to hide
    else:
        hydra_plugins.__path__ = []


def has_sweep_plugin(plugin: str) -> bool:
    """Whether Hydra's ``plugin`` (joblib, submitit or optuna) is installed and not hidden."""
    if HIDE_SWEEP_PLUGINS:
        return False
    try:
        return importlib.util.find_spec(f"hydra_plugins.{SWEEP_PLUGINS[plugin]}") is not None
    except ImportError:
        return False


def sweep_plugin_reason(plugin: str) -> str:
    hidden = " (hidden by MINITRANS_TEST_WITHOUT_SWEEP)" if HIDE_SWEEP_PLUGINS else ""
    return f"Hydra's {plugin} plugin is not installed{hidden}: it is in the sweep extra, {SWEEP_INSTALL}"


def needs_sweep_plugin(*plugins: str) -> pytest.MarkDecorator:
    """``@needs_sweep_plugin("optuna")``: skip, with the install command, where the plugin is absent."""
    missing = [plugin for plugin in plugins if not has_sweep_plugin(plugin)]
    return pytest.mark.skipif(bool(missing), reason=sweep_plugin_reason(missing[0]) if missing else "")


def plugins_of_config(path: Path) -> set[str]:
    """The sweep plugins a config file needs through its defaults list (``override /hydra/sweeper:
    optuna``, a launcher file's ``submitit_slurm``), following the files of its own group it extends."""
    import yaml

    needed: set[str] = set()
    for entry in (yaml.safe_load(path.read_text()) or {}).get("defaults", []):
        for key, option in entry.items() if isinstance(entry, dict) else [("", entry)]:
            if option in PLUGIN_OF_OPTION and (not key or "hydra/" in key):
                needed.add(PLUGIN_OF_OPTION[option])
            elif not key and (path.parent / f"{option}.yaml").exists():
                needed |= plugins_of_config(path.parent / f"{option}.yaml")
    return needed


# conf/debug/tiny.yaml (what users get with debug=tiny), on one thread and without a bar, plus
# the recipe the tests were written against: dropout on (so resuming must restore its random
# state) and a schedule that needs no end point; tests/training/test_schedule.py covers the decays.
TINY = [
    "debug=tiny",
    "trainer.num_threads=1",
    "trainer.progress=false",
    "model.dropout=0.1",
    "trainer.schedule=inverse_sqrt",
]


@pytest.fixture(scope="session")
def tiny_overrides(tmp_path_factory) -> list[str]:
    """Hydra overrides for a tiny run; the tokenizer/corpus cache is shared by the session."""
    cache = tmp_path_factory.mktemp("minitrans-cache")
    return [*TINY, f"data.cache_dir={cache}"]


@pytest.fixture(scope="session")
def tiny_config(tiny_overrides):
    """``tiny_config(*overrides)`` -> a validated TrainConfig, composed as scripts/train.py does."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from minitrans.core.hydra_config import register_configs, to_dataclass

    register_configs()

    def make(*overrides: str):
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
                return to_dataclass(compose(config_name="train", overrides=[*tiny_overrides, *overrides]))
        finally:
            GlobalHydra.instance().clear()

    return make


def train_command(*args: str) -> list[str]:
    return [sys.executable, str(TRAIN_SCRIPT), *args]


# The two-process run that the resume tests of tests/training/test_launch.py and tests/training/test_two_nodes.py
# compare against: every step's loss logged, a checkpoint every third step, no validation on the way.
TWO_PROCESS_RUN = [
    "trainer.processes=2",
    "trainer.log_every=1",
    "trainer.eval_every=1000",
    "trainer.checkpoint_every=3",
    "trainer.max_steps=60",
]


@pytest.fixture(scope="session")
def two_process_reference(tiny_overrides, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The run folder and the finished process of ``scripts/train.py`` with the tiny settings and
    :data:`TWO_PROCESS_RUN`, never interrupted; trained once per session for every test that
    compares a stopped and resumed run with it (one run of 2 processes costs about 10 s)."""
    run = tmp_path_factory.mktemp("two-process-reference") / "run"
    done = subprocess.run(
        train_command(*tiny_overrides, *TWO_PROCESS_RUN, f"hydra.run.dir={run}"),
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return run, done


def script_env() -> dict[str, str]:
    """The environment for a training subprocess: one thread, no colour, no stray torchrun."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HYDRA_FULL_ERROR="0", PYTHONUNBUFFERED="1")
    return env


@pytest.fixture
def run_train():
    """``run_train(*args, timeout=...)`` runs scripts/train.py and returns the CompletedProcess."""

    def run(*args: str, timeout: float = 120, cwd: Path = REPO) -> subprocess.CompletedProcess:
        return subprocess.run(
            train_command(*args), cwd=cwd, env=script_env(), capture_output=True, text=True, timeout=timeout
        )

    return run


class SubprocessInAQuickTest(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _quick_tests_start_no_processes(request, monkeypatch):
    """``-m "not slow"`` must leave out every test that starts another interpreter: a test not
    marked slow fails if it launches a process (subprocess, or multiprocessing's spawn)."""
    if request.node.get_closest_marker("slow") is not None:
        return

    def refuse(*args, **kwargs):
        raise SubprocessInAQuickTest(f"{request.node.nodeid} starts a process: mark it @pytest.mark.slow")

    import multiprocessing.util

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", refuse)


def last_weights(run: Path) -> dict[str, torch.Tensor]:
    """The model weights of a run folder's checkpoints/last.pt."""
    from minitrans.core.checkpoint import load_checkpoint

    return load_checkpoint(run / "checkpoints" / "last.pt")["model"]


def assert_bitwise_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    """Two state dicts hold the same names and bitwise the same tensors."""
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name

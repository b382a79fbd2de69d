"""Every command the README and the documentation pages give (shell blocks and inline
``python scripts/…`` spans, :mod:`helpers.doc_commands`) is alive: each script it runs imports
only what exists and answers ``--help`` (quick), and each command runs as written on a tiny run
(slow), its placeholders (``RUN``, ``runs/quickstart``, ``multirun/DATE/TIME``, ``A.pt``,
``in.txt``) made in a scratch folder the command runs in. tests/docs/test_docs.py checks that each
command line parses; a script that parses and then dies is what this file catches.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import runpy
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import REPO, script_env
from helpers.doc_commands import documented_invocations, gen_reference

INVOCATIONS = documented_invocations()
SCRIPTS = sorted({script for _, script, _, _ in INVOCATIONS})

# What is not run here, and why; each still has its imports and --help checked, and its command
# lines parsed (tests/docs/test_docs.py).
NOT_RUN = {
    "scripts/train.py": "trains (minutes for most documented runs); the tiny run below is trained by it",
    "scripts/serve.py": "a server that runs until stopped: tests/docs/test_docs.py's Quick start starts it",
    "scripts/screenshots.py": "drives a browser",
    "scripts/benchmark.py": "times training for minutes",
    "docs/exercises/check.py": "checks a learner's own file: tests/docs/test_exercises.py runs it on right and wrong ones",
    "python -m minitrans.bench.speed_measures": "times every speed measure for minutes (tests/bench/test_benchmark.py runs it small)",
    "scripts/bench_processes.py": "trains in several processes for minutes",
    "scripts/bench_device.py": "trains and decodes for minutes (tests/bench/test_device_check.py runs it small)",
    "scripts/bench_data.py": "reads the Multi30k files of another checkout",
    "data/multi30k/prepare.py": "fetches Multi30k",
}
# Options whose value a command writes (made in the scratch folder by the command itself) and
# options whose value is a text file a command reads.
OUTPUT_OPTIONS = {"-o", "--output", "--out", "--attention", "--card", "--json"}
TEXT_INPUT_OPTIONS = {"-i", "--input", "--score-reference"}
# The tiny run is of the generated corpus: a split only Multi30k has is asked of the run's own.
SPLITS = {"val": "valid", "test_2016_flickr": "test"}
SENTENCE = "the dog sees the man ."
# each distinct command once (``compare.py multirun/DATE/TIME`` is on many pages), named by its first page
_FIRST: dict[tuple, tuple[str, str, list[str], bool]] = {}
for _page, _script, _args, _fails in INVOCATIONS:
    if _script not in NOT_RUN:
        _FIRST.setdefault((_script, tuple(_args), _fails), (_page, _script, _args, _fails))
RUNNABLE = list(_FIRST.values())


def script_path(script: str) -> Path | None:
    return None if script.startswith("python -m") else REPO / script


# -- quick: the scripts import what exists and answer --help -------------------------------------
def imported_names(path: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) of every ``minitrans`` import in a file, those inside functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "minitrans":
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "minitrans"]
    return found


# the optional extras a documented command may need, by the module that is missing without them
EXTRAS = {"fastapi": "demo", "uvicorn": "demo", "ctranslate2": "export"}


def missing_imports(path: Path) -> list[str]:
    missing = []
    for module_name, name in imported_names(path):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            if getattr(error, "name", None) in EXTRAS:  # an extra this machine lacks, not a name that moved
                continue
            missing.append(f"{module_name} ({error})")
            continue
        if name is not None and name != "*" and not hasattr(module, name):
            try:
                importlib.import_module(f"{module_name}.{name}")
            except ImportError:
                missing.append(f"{name} from {module_name}")
    return missing


@pytest.mark.parametrize("script", [s for s in SCRIPTS if script_path(s)])
def test_a_documented_script_imports_only_what_exists(script):
    """Imports inside ``main`` run only when the command does: a name that moved fails here."""
    assert missing_imports(script_path(script)) == [], script


def test_the_import_check_finds_a_name_that_moved(tmp_path):
    dead = tmp_path / "dead.py"
    dead.write_text("def main():\n    from minitrans.inference.translator import Translator, load_hf_folder\n")
    assert missing_imports(dead) == ["load_hf_folder from minitrans.inference.translator"]


def run_in_process(script: str, args: list[str]) -> tuple[int, str]:
    """``python SCRIPT ARGS`` (or ``python -m``) in this process: its exit status and output."""
    out, saved_argv = io.StringIO(), sys.argv
    target = gen_reference.EXTRA_COMMANDS.get(script)
    sys.argv = [target or str(REPO / script), *args]
    try:
        with redirect_stdout(out), redirect_stderr(out):
            if target:
                runpy.run_module(target, run_name="__main__", alter_sys=False)
            else:
                runpy.run_path(str(REPO / script), run_name="__main__")
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code if isinstance(exit_info.code, int) else (0 if exit_info.code is None else 1)
    finally:
        sys.argv = saved_argv
    return code, out.getvalue()


def _has_argparse(script: str) -> bool:
    path = script_path(script)
    return path is None or "argparse" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s != "scripts/train.py" and _has_argparse(s)])
def test_a_documented_script_answers_help(script):
    code, output = run_in_process(script, ["--help"])
    assert code == 0 and output.startswith("usage:"), output[-2000:]


def test_every_documented_script_runs_below_or_says_why_not():
    assert set(NOT_RUN) <= set(SCRIPTS), set(NOT_RUN) - set(SCRIPTS)
    assert "scripts/attention_stats.py" in SCRIPTS and "scripts/attention_stats.py" not in NOT_RUN
    assert len(RUNNABLE) >= 40


# -- slow: each command runs on a tiny run -------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_run(tiny_overrides, tmp_path_factory) -> dict:
    """A debug=tiny run keeping five step checkpoints (``average.py --last 5``), and its
    CTranslate2 export where ctranslate2 is installed."""
    root = tmp_path_factory.mktemp("doc-commands")
    run = root / "run"
    env = script_env() | {"MINITRANS_CACHE_DIR": str(root / "cache")}  # what the commands derive: not the user's
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "train.py"),
            *tiny_overrides,
            "trainer.eval_every=8",
            "trainer.average_last=5",
            f"hydra.run.dir={run}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    made = {"run": run, "env": env}
    if importlib.util.find_spec("ctranslate2") is not None:
        from minitrans.export.ct2_export import export_ctranslate2

        made["ct2"] = export_ctranslate2(run, root / "ct2")
    return made


def place_inputs(script: str, args: list[str], folder: Path, made: dict[str, Path]) -> list[str]:
    """Make in ``folder`` each input the command names (a run folder, a checkpoint, an export, a
    text file) from the tiny run, and return the arguments with corpus-specific splits replaced."""
    args = [SPLITS.get(arg, arg) if i and args[i - 1] == "--split" else arg for i, arg in enumerate(args)]
    positional, options = split_arguments(script, args)
    for option, value in options:
        if option in TEXT_INPUT_OPTIONS:
            (folder / value).parent.mkdir(parents=True, exist_ok=True)
            (folder / value).write_text(f"{SENTENCE}\n", encoding="utf-8")
    paths = positional[:1] if script == "scripts/translate.py" else positional
    if script == "scripts/export.py":
        paths = positional[:1]  # the second is the folder it writes
    for value in paths:
        if value.isdigit():
            continue
        target = folder / value
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if value.endswith(".pt"):
            shutil.copy(made["run"] / "checkpoints" / "best.pt", target)
        elif "ct2" in value:
            if "ct2" not in made:
                pytest.skip("ctranslate2 is not installed (pip install 'minitrans[export]')")
            shutil.copytree(made["ct2"], target)
        else:
            shutil.copytree(made["run"], target)
    return args


def split_arguments(script: str, args: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The positional arguments, and (option, value) of the options that take a value, as the
    script's parser reads them (a script without one: every argument is positional)."""
    if not _has_argparse(script):
        return list(args), []
    parser = gen_reference.script_parser(script if script.startswith("python -m") else script.removeprefix("scripts/"))
    takes_value = {option: action.nargs != 0 for action in parser._actions for option in action.option_strings}
    positional, options = [], []
    words = iter(args)
    for word in words:
        if word.startswith("-") and word in takes_value:
            if takes_value[word]:
                options.append((word, next(words, "")))
        elif word.startswith("--") and "=" in word:
            option, value = word.split("=", 1)
            options.append((option, value))
        else:
            positional.append(word)
    return positional, options


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "script", "args", "fails"),
    RUNNABLE,
    ids=[f"{page}:{script}:{' '.join(args)[:60]}" for page, script, args, _ in RUNNABLE],
)
def test_a_documented_command_runs_on_a_tiny_run(page, script, args, fails, tiny_run, tmp_path):
    if any("ctranslate2" in arg for arg in args) and importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("ctranslate2 is not installed (pip install 'minitrans[export]')")
    args = place_inputs(script, args, tmp_path, tiny_run)
    command = (
        [sys.executable, "-m", gen_reference.EXTRA_COMMANDS[script]]
        if script in gen_reference.EXTRA_COMMANDS
        else [sys.executable, str(REPO / script)]
    )
    env = tiny_run["env"] | {"PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [*command, *args], cwd=tmp_path, env=env, input=f"{SENTENCE}\n", capture_output=True, text=True, timeout=300
    )
    shown = f"{page}: {script} {' '.join(args)}\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, shown
    if fails:
        assert done.returncode != 0, shown
    else:
        assert done.returncode == 0, shown

"""The exercises' checker (docs/exercises/check.py): a correct solution of each exercise passes,
each usual wrong one gets the hint that names its mistake, and the untouched template is told
it is not written yet. The checker is fed each version as a learner's file would feed it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import FIXTURES, REPO

EXERCISES = REPO / "docs" / "exercises"
SOLUTIONS = FIXTURES / "exercises"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


checker = load(EXERCISES / "check.py", "exercises_check")
NAMES = list(checker.EXERCISES)
solutions = {name: load(SOLUTIONS / f"{name}.py", f"exercise_solution_{name}") for name in NAMES}
MISTAKES = [(name, key) for name in NAMES for key in solutions[name].WRONG]


def test_there_are_at_least_eight_exercises_each_with_a_template_and_wrong_versions():
    assert len(NAMES) >= 8
    for name, ex in checker.EXERCISES.items():
        template = load(ex.template, f"exercise_template_{name}")
        assert all(callable(getattr(template, f, None)) for f in ex.functions), name
        assert len(solutions[name].WRONG) >= 3, name


@pytest.mark.parametrize("name", NAMES)
def test_a_correct_solution_passes(name):
    passed, key, line = checker.check(name, solutions[name])
    assert (passed, key) == (True, "pass"), line
    assert line.startswith(f"{name}: PASS")


@pytest.mark.parametrize("name", NAMES)
def test_the_template_is_not_written_yet(name):
    template = load(checker.EXERCISES[name].template, f"exercise_template_{name}")
    assert checker.check(name, template)[:2] == (False, "not_written")


@pytest.mark.parametrize(("name", "mistake"), MISTAKES, ids=[f"{name}-{key}" for name, key in MISTAKES])
def test_a_wrong_solution_gets_the_hint_for_its_mistake(name, mistake):
    functions = {f: getattr(solutions[name], f) for f in checker.EXERCISES[name].functions}
    functions.update(solutions[name].WRONG[mistake])
    passed, key, line = checker.check(name, SimpleNamespace(**functions))
    assert not passed
    assert key == mistake, line


def test_the_command_checks_a_file_and_answers_in_one_line(tmp_path, capsys):
    mine = tmp_path / "my_attention.py"
    mine.write_text((SOLUTIONS / "attention.py").read_text(encoding="utf-8"), encoding="utf-8")
    assert checker.main(["attention", str(mine)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "attention: PASS. Your attention() computes what the notes model computes."
    ]

    mine.write_text("def attention(q, k, v, mask=None):\n    return (q @ k.transpose(-2, -1)).softmax(-1) @ v, None\n")
    assert checker.main(["attention", str(mine)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("attention: not yet.") and "weights should be a tensor" in line

    mine.write_text("def attention(q, k, v, mask=None):\n    return q @ k\n")
    assert checker.main(["attention", str(mine)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert "attention() raised RuntimeError" in line and f"line 2 of {mine}" in line

    mine.write_text("def attention(q, k, v, mask=None)\n")
    assert checker.main(["attention", str(mine)]) == 1
    assert "does not run: SyntaxError" in capsys.readouterr().out


def test_the_command_lists_the_exercises_and_refuses_a_bad_command_line(tmp_path, capsys):
    assert checker.main(["--list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == len(NAMES) and listing[0].startswith("1. attention")
    assert all(f"docs/exercises/{name}.py" in line for name, line in zip(NAMES, listing))
    for argv, reason in (
        (["attention", str(tmp_path / "absent.py")], "no such file"),
        (["atention", str(tmp_path)], "invalid choice: 'atention'"),
        (["attention"], "name an exercise and your file"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            checker.main(argv)
        assert exit_info.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("python docs/exercises/check.py: error: ") and reason in last, last


def test_the_page_has_one_section_per_exercise_in_the_checkers_order():
    page = (REPO / "docs" / "exercises.md").read_text(encoding="utf-8")
    sections = [line.removeprefix("## ") for line in page.splitlines() if line[:4] in {f"## {n}" for n in range(10)}]
    assert sections == [f"{ex.number}. {ex.title}" for ex in checker.EXERCISES.values()]
    assert "python docs/exercises/check.py attention my_attention.py" in page

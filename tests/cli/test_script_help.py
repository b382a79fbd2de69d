"""Every option of benchmark.py and compare.py says what it does in --help, in plain text."""

from __future__ import annotations

import importlib.util
import re

import pytest
from helpers import REPO


def script_help(name: str, capsys) -> str:
    spec = importlib.util.spec_from_file_location(f"{name}_help", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def undescribed_options(text: str) -> list[str]:
    """Options in argparse's listing with no description beside or below them."""
    lines = text.split("\n")
    missing = []
    for i, line in enumerate(lines):
        match = re.match(r"^  (-\w, )?(--[\w-]+)(.*)$", line)
        if not match or match.group(2) == "--help":
            continue
        beside = re.search(r"\S\s{2,}\S", line.strip())
        below = (
            i + 1 < len(lines) and re.match(r"^\s{6,}\S", lines[i + 1]) and not lines[i + 1].lstrip().startswith("-")
        )
        if not (beside or below):
            missing.append(match.group(2))
    return missing


@pytest.mark.parametrize("name", ["benchmark", "compare"])
def test_every_option_is_described_without_markup(name, capsys):
    text = script_help(name, capsys)
    assert undescribed_options(text) == []
    assert "``" not in text and ":py:" not in text


def test_the_checker_finds_an_undescribed_option():
    text = "options:\n  --steps STEPS\n  --json JSON           also write the figures\n"
    assert undescribed_options(text) == ["--steps"]

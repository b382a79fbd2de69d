"""The scripts as a user meets them: a script loaded as a module (``load_script("translate")``),
stdin fed with bytes as a pipe would, and the one ``error:`` line a bad command must end with."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str):
    """``scripts/NAME.py`` as a module (its ``main`` callable, its helpers importable)."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pipe_stdin(monkeypatch, data: bytes) -> None:
    """``sys.stdin`` reads ``data``, and is not a terminal (as when text is piped in)."""
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    monkeypatch.setattr(stdin, "isatty", lambda: False)
    monkeypatch.setattr(sys, "stdin", stdin)


def assert_one_error_line(result, *names: str) -> str:
    """A finished ``subprocess.run`` of a script ended with exit status 2 and one ``error:`` line
    naming each of ``names``, no traceback; returns that line."""
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output
    last = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("error: "), last
    for name in names:
        assert name in last, last
    return last


__all__ = ["assert_one_error_line", "load_script", "pipe_stdin"]

"""The quick suite (``pytest -m "not slow"``) really leaves out every test that starts another
interpreter: conftest refuses a process to any test not marked slow. Here, that guard itself."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import SubprocessInAQuickTest


def test_a_quick_test_cannot_start_a_process():
    with pytest.raises(SubprocessInAQuickTest, match="mark it @pytest.mark.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_quick_test_cannot_spawn_a_worker():
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(target=print)
    with pytest.raises(SubprocessInAQuickTest):
        process.start()


@pytest.mark.slow
def test_a_slow_test_may_start_a_process():
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout == "42\n"

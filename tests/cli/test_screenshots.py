"""scripts/screenshots.py refuses what it cannot do in one line, before starting anything."""

from __future__ import annotations

import importlib.util

import pytest
from helpers import REPO


@pytest.fixture(scope="module")
def screenshots():
    spec = importlib.util.spec_from_file_location("screenshots_script", REPO / "scripts" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_unknown_tab_is_refused_with_the_choices(screenshots, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        screenshots.main([str(tmp_path), "--prefix", "x", "--tabs", "scalars,graphs"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown tab(s) graphs" in err and "custom_scalars" in err


def test_every_tab_by_default_and_finished_runs_wait_for_hparams(screenshots):
    assert set(screenshots.TABS) == {"scalars", "custom_scalars", "images", "text", "hparams"}
    assert screenshots._hparams_enabled(b'{"hparams": {"enabled": true}}\n[]')
    assert not screenshots._hparams_enabled(b'{"hparams": {"enabled": false}}\n[]')

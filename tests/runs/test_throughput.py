"""scripts/throughput.py's table: a run's logged rates and resident sets, window by window of
wall-clock minutes, read back from a TensorBoard event file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from helpers import REPO
from torch.utils.tensorboard import SummaryWriter

from minitrans.runs.throughput import CPU_TAG, RSS_TAG, TOKENS_TAG, format_windows, throughput_windows


def write_run(folder: Path, points: list[tuple[int, float, float, float | None]]) -> None:
    """(step, seconds since the start, tokens/s, RSS MiB or None) events; with an RSS, a
    tokens/CPU-s of twice the rate."""
    writer = SummaryWriter(log_dir=str(folder))
    for step, seconds, rate, rss in points:
        writer.add_scalar(TOKENS_TAG, rate, step, walltime=1000.0 + seconds)
        if rss is not None:
            writer.add_scalar(CPU_TAG, 2 * rate, step, walltime=1000.0 + seconds)
            writer.add_scalar(RSS_TAG, rss, step, walltime=1000.0 + seconds)
    writer.close()


def test_windows_hold_the_mean_rate_and_the_last_resident_set(tmp_path):
    write_run(
        tmp_path,
        [(50, 0, 4000, 900), (100, 200, 3800, 1000), (150, 310, 3000, 1500), (200, 599, 3200, 1400), (250, 905, 10, 0)],
    )
    windows = throughput_windows(tmp_path, every_minutes=5)
    assert [(w.start_minute, w.first_step, w.last_step) for w in windows] == [
        (0, 50, 100),
        (5, 150, 200),
        (15, 250, 250),
    ]
    assert [w.tokens_per_second for w in windows] == [3900, 3100, 10]
    assert [w.tokens_per_cpu_second for w in windows] == [7800, 6200, 20]
    assert [w.rss_mib for w in windows] == [1000, 1400, 0]
    table = format_windows(windows, 5)
    assert "| 0-5 | 50-100 | 3,900 | 7,800 | 1,000 |" in table and "| 5-10 | 150-200 | 3,100 | 6,200 | 1,400 |" in table


def test_a_run_without_resident_sets_shows_dashes_and_an_empty_run_no_rows(tmp_path):
    write_run(tmp_path / "old", [(50, 0, 4000, None)])
    (window,) = throughput_windows(tmp_path / "old")
    assert window.rss_mib is None and format_windows([window], 5).endswith("| 4,000 | - | - |")
    (tmp_path / "empty").mkdir()
    assert throughput_windows(tmp_path / "empty") == []


def test_the_script_prints_the_table(tmp_path, capsys):
    write_run(tmp_path, [(50, 0, 4000, 900)])
    spec = importlib.util.spec_from_file_location("throughput_script", REPO / "scripts" / "throughput.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(tmp_path), "--every", "2"]) == 0
    assert "| 0-2 | 50-50 | 4,000 | 8,000 | 900 |" in capsys.readouterr().out
    assert script.main([str(tmp_path / "nothing")]) == 1

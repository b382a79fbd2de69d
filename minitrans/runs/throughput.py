"""A run's speed and memory over time, read back from its TensorBoard events.

The trainer logs ``train/tokens_per_second`` (target tokens per second of training steps, over
the last ``log_every`` steps), ``train/tokens_per_cpu_second`` (the same tokens over this
process's CPU time, which a busy neighbour does not change) and ``train/rss_mib`` (the
process's resident set) at the same steps. :func:`throughput_windows` cuts a run into windows of wall-clock minutes since its first
logged step (validations take wall-clock time too, but not tokens/s: the rate counts training
seconds only), so a run whose steps slow down, or whose memory grows, shows it row by row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

TOKENS_TAG = "train/tokens_per_second"
CPU_TAG = "train/tokens_per_cpu_second"
RSS_TAG = "train/rss_mib"


@dataclass
class Window:
    start_minute: float
    first_step: int
    last_step: int
    tokens_per_second: float  # the mean of the rates logged in the window
    tokens_per_cpu_second: float | None  # the same for the CPU-time rate (None: not logged)
    rss_mib: float | None  # the last resident set logged in the window (None: not logged)


def throughput_windows(run_dir: str | Path, every_minutes: float = 5.0) -> list[Window]:
    """``run_dir``'s logged rates and resident sets in windows of ``every_minutes`` of wall-clock
    time; empty when the run logged no rate yet."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    if TOKENS_TAG not in tags:
        return []
    rates = events.Scalars(TOKENS_TAG)
    rss = {event.step: event.value for event in events.Scalars(RSS_TAG)} if RSS_TAG in tags else {}
    cpu = {event.step: event.value for event in events.Scalars(CPU_TAG)} if CPU_TAG in tags else {}
    start, width = rates[0].wall_time, every_minutes * 60
    grouped: dict[int, list] = {}
    for event in rates:
        grouped.setdefault(int((event.wall_time - start) // width), []).append(event)
    windows = []
    for index, group in sorted(grouped.items()):
        logged = [rss[event.step] for event in group if event.step in rss]
        cpu_rates = [cpu[event.step] for event in group if event.step in cpu]
        windows.append(
            Window(
                start_minute=index * every_minutes,
                first_step=group[0].step,
                last_step=group[-1].step,
                tokens_per_second=sum(event.value for event in group) / len(group),
                tokens_per_cpu_second=sum(cpu_rates) / len(cpu_rates) if cpu_rates else None,
                rss_mib=logged[-1] if logged else None,
            )
        )
    return windows


def format_windows(windows: list[Window], every_minutes: float) -> str:
    """A Markdown table, one row per window."""
    lines = ["| minutes | steps | tokens/s | tokens/CPU-s | RSS MiB |", "|---|---|---:|---:|---:|"]
    for window in windows:
        cpu = "-" if window.tokens_per_cpu_second is None else f"{window.tokens_per_cpu_second:,.0f}"
        rss = "-" if window.rss_mib is None else f"{window.rss_mib:,.0f}"
        lines.append(
            f"| {window.start_minute:g}-{window.start_minute + every_minutes:g} "
            f"| {window.first_step}-{window.last_step} | {window.tokens_per_second:,.0f} | {cpu} | {rss} |"
        )
    return "\n".join(lines)


__all__ = ["CPU_TAG", "RSS_TAG", "TOKENS_TAG", "Window", "format_windows", "throughput_windows"]

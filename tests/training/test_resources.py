"""The trainer's resource points: tokens per CPU-second of this process (what a busy neighbour
does not change) and the resident set, at the steps the rate is logged."""

from __future__ import annotations

import sys
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

from minitrans.training.resources import ThroughputLog


def busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def read(folder) -> dict[str, list]:
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: events.Scalars(tag) for tag in events.Tags()["scalars"]}


def test_the_rate_counts_cpu_time_since_the_last_point_and_not_sleep_or_evaluation(tmp_path):
    throughput = ThroughputLog()
    with SummaryWriter(str(tmp_path)) as writer:
        busy(0.2)
        time.sleep(0.3)  # waiting for a core costs wall-clock time, not CPU time
        throughput.add(1000, 0.5)
        assert throughput.log(writer, step=50) == pytest.approx(2000)  # per wall-clock second of the steps
        busy(0.5)  # a validation
        throughput.after_evaluation()
        busy(0.1)
        throughput.add(1000, 0.1)
        throughput.log(writer, step=100)
    scalars = read(tmp_path)
    first, second = (point.value for point in scalars["train/tokens_per_cpu_second"])
    assert 1000 / 0.3 < first < 1000 / 0.19
    assert 1000 / 0.2 < second < 1000 / 0.09
    if sys.platform.startswith("linux"):
        assert [point.step for point in scalars["train/rss_mib"]] == [50, 100]
        assert all(point.value > 10 for point in scalars["train/rss_mib"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_tiny_run_logs_both_beside_its_rate(tmp_path, tiny_config):
    from minitrans.training.trainer import train

    train(tiny_config(), tmp_path / "run")
    scalars = read(tmp_path / "run")
    steps = [point.step for point in scalars["train/tokens_per_second"]]
    assert [point.step for point in scalars["train/rss_mib"]] == steps
    assert [point.step for point in scalars["train/tokens_per_cpu_second"]] == steps

"""What a run costs the machine as it goes: training tokens per CPU-second and the resident set.

``train/tokens_per_second`` divides by wall-clock seconds of training steps, so on a shared
machine it falls whenever another job takes a core, and a run that really slows down cannot be
told from a busy neighbour. ``train/tokens_per_cpu_second`` divides by the CPU time this process
used over the same steps, which other jobs do not change; ``train/rss_mib`` is its resident set.
All three are logged at every ``log_every`` step. Validation's CPU time is left out
(:meth:`ResourceLog.after_evaluation`), as its wall-clock time is left out of the rate.
"""

from __future__ import annotations

import time

from torch.utils.tensorboard import SummaryWriter

from minitrans.core.memory import release_free_memory, resident_mib


class ThroughputLog:
    """``add`` after each training step with its target tokens and seconds; ``log`` at each
    logging step (writes the rate, the CPU rate and the resident set; returns the rate);
    ``after_evaluation`` once a validation and its checkpoints are done."""

    def __init__(self) -> None:
        self.tokens, self.seconds = 0, 0.0  # since the last logged point
        self._cpu_seconds = time.process_time()

    def add(self, tokens: int, seconds: float) -> None:
        self.tokens += tokens
        self.seconds += seconds

    def log(self, writer: SummaryWriter, step: int) -> float:
        rate = self.tokens / max(self.seconds, 1e-9)  # target tokens per training second
        now = time.process_time()
        cpu_seconds, self._cpu_seconds = now - self._cpu_seconds, now
        writer.add_scalar("train/tokens_per_second", rate, step)
        writer.add_scalar("train/tokens_per_cpu_second", self.tokens / max(cpu_seconds, 1e-9), step)
        rss = resident_mib()
        if rss is not None:
            writer.add_scalar("train/rss_mib", rss, step)
        self.tokens, self.seconds = 0, 0.0
        return rate

    def after_evaluation(self) -> None:
        """Give the C heap's free pages back (validation's decoding leaves the most behind), then
        restart the CPU clock, so the next point counts training steps only."""
        release_free_memory()
        self._cpu_seconds = time.process_time()


__all__ = ["ThroughputLog"]

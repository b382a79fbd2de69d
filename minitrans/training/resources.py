"""What a run costs the machine as it goes: training tokens per CPU-second and the resident set.

``train/tokens_per_second`` divides by wall-clock seconds of training steps, so on a shared
machine it falls whenever another job takes a core, and a run that really slows down cannot be
told from a busy neighbour. ``train/tokens_per_cpu_second`` divides by the CPU time this process
used over the same steps, which other jobs do not change; ``train/rss_mib`` is its resident set.
Both are logged at every ``log_every`` step, beside the rate. Validation's CPU time is left out
(:meth:`ResourceLog.after_evaluation`), as its wall-clock time is left out of the rate.
"""

from __future__ import annotations

import time

from torch.utils.tensorboard import SummaryWriter

from minitrans.core.memory import release_free_memory, resident_mib


class ResourceLog:
    """``log`` at each logging step with the target tokens trained since the last one;
    ``after_evaluation`` once a validation and its checkpoints are done."""

    def __init__(self) -> None:
        self._cpu_seconds = time.process_time()

    def log(self, writer: SummaryWriter, tokens: int, step: int) -> None:
        now = time.process_time()
        cpu_seconds, self._cpu_seconds = now - self._cpu_seconds, now
        writer.add_scalar("train/tokens_per_cpu_second", tokens / max(cpu_seconds, 1e-9), step)
        rss = resident_mib()
        if rss is not None:
            writer.add_scalar("train/rss_mib", rss, step)

    def after_evaluation(self) -> None:
        """Give the C heap's free pages back (validation's decoding leaves the most behind), then
        restart the CPU clock, so the next point counts training steps only."""
        release_free_memory()
        self._cpu_seconds = time.process_time()


__all__ = ["ResourceLog"]

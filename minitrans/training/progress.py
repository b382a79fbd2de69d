"""The training progress bar: it counts what ends the run.

With a step budget (``trainer.max_steps`` only) the bar counts steps. With a time budget
(``trainer.max_minutes``) it counts minutes of training toward that budget, and shows the
step beside the loss: a bar toward a step limit that the time budget will end long before
(``0/100000 [35:24:30 remaining]``) tells the user nothing true.

While the bar is open, log records go through ``tqdm.write`` (``logging_redirect_tqdm``), so
a log line is printed above the bar instead of being glued to its end, and the bar is drawn
once more below it; the bar is closed once, so its last state is printed once. After training
the bar stays up, labelled with what the run does then (final validation, test).

Only a terminal gets the bar: into a redirected stream (``> train.log 2>&1``) tqdm writes
nothing (its ``disable=None``), and the log's lines (one per validation) say how the run goes.
"""

from __future__ import annotations

import contextlib
import logging

from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm


class TrainingProgress(contextlib.AbstractContextManager):
    """``with TrainingProgress(max_steps, max_minutes, step, seconds) as bar: bar.update(...)``."""

    def __init__(
        self,
        max_steps: int,
        max_minutes: float | None,
        step: int = 0,
        train_seconds: float = 0.0,
        enabled: bool = True,
        file=None,
    ) -> None:
        self.by_time = max_minutes is not None
        self.enabled = enabled
        self._redirect = None
        if self.by_time:
            self.bar = tqdm(
                total=float(max_minutes),
                initial=min(train_seconds / 60, max_minutes),
                unit="min",
                desc="train",
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3g}/{total:g} min [{elapsed}<{remaining}{postfix}]",
                disable=None if enabled else True,  # None: tqdm leaves out a stream that is no terminal
                dynamic_ncols=True,
                file=file,
            )
        else:
            self.bar = tqdm(
                total=max_steps,
                initial=step,
                unit="step",
                desc="train",
                disable=None if enabled else True,  # None: tqdm leaves out a stream that is no terminal
                dynamic_ncols=True,
                file=file,
            )
        self._closed = False

    def __enter__(self) -> TrainingProgress:
        if self.enabled:  # log lines go above the bar, not glued to its end
            self._redirect = logging_redirect_tqdm(loggers=[logging.getLogger()])
            self._redirect.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, step: int, train_seconds: float) -> None:
        """Move to ``step`` (a step budget) or ``train_seconds`` (a time budget)."""
        done = min(train_seconds / 60, self.bar.total) if self.by_time else step
        self.bar.update(done - self.bar.n)  # tqdm redraws at most every mininterval

    def show(self, step: int, **values) -> None:
        """Values beside the bar (loss, tokens/s ...); with a time budget, the step too."""
        if self.by_time:
            values = {"step": f"{step:,}", **values}
        self.bar.set_postfix(values, refresh=False)

    def stage(self, name: str) -> None:
        """Label what the run does after training (the final validation, the test sets), so the
        finished bar does not sit at 100 % unlabelled."""
        self.bar.set_description_str(name, refresh=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.bar.close()
        if self._redirect is not None:
            self._redirect.__exit__(None, None, None)
            self._redirect = None


__all__ = ["TrainingProgress"]

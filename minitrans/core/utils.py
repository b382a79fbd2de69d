"""Seeding, random generator state, device choice, eval mode, and stop signals: one place for each."""

from __future__ import annotations

import os
import random
import shutil
import signal
import tempfile
from contextlib import contextmanager

import numpy as np
import torch

from minitrans.core.config import DEVICES


@contextmanager
def atomic_file(path: str | os.PathLike):
    """A binary file to write ``path`` through: a temporary file in the same folder, flushed,
    fsynced and renamed over ``path`` when the block ends; a full disk, an exception or a kill
    leaves the old file (or none), never a partial one. The one atomic write of the project
    (checkpoints, summary.json, hypotheses, tokenizer models, caches)."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it private; give it a normal file's mode
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.filename is None:  # a write's ENOSPC names no file
            raise OSError(error.errno, error.strerror or str(error), path) from error
        raise


def disk_space(path: str | os.PathLike) -> str:
    """How much room the disk that holds ``path`` has left, for an error line: "12345 bytes free
    on the disk of /data" (of the nearest folder that exists)."""
    folder = os.path.abspath(path)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return f"the free space on the disk of {folder} is unknown"
    return f"{free} bytes free on the disk of {folder}"


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through :func:`atomic_file`."""
    with atomic_file(path) as file:
        file.write(data.encode("utf-8") if isinstance(data, str) else data)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (every device) from one number."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_rng_state() -> dict:
    """Every random generator the training loop touches, in a form weights_only can load."""
    state = {
        "python": random.getstate(),
        "numpy": _numpy_state_to_plain(np.random.get_state()),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if _has_mps():
        state["mps"] = torch.mps.get_rng_state()
    return state


def _has_mps() -> bool:
    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


@contextmanager
def preserved_rng():
    """Leave every random generator as it was found: evaluation in the middle of training then
    cannot shift the training stream, so a resumed run draws the same numbers as one that
    never stopped."""
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def set_rng_state(state: dict) -> None:
    """Restore :func:`get_rng_state`'s output (its tensors may have been loaded onto a GPU)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(_numpy_state_from_plain(state["numpy"]))
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        for index, device_state in enumerate(state["cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(device_state.cpu(), index)
    if "mps" in state and _has_mps():
        torch.mps.set_rng_state(state["mps"].cpu())


def _numpy_state_to_plain(state: tuple) -> dict:
    name, keys, pos, has_gauss, cached = state
    return {
        "name": name,
        "keys": torch.from_numpy(keys.astype(np.int64)),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached": float(cached),
    }


def _numpy_state_from_plain(plain: dict) -> tuple:
    keys = plain["keys"].cpu().numpy().astype(np.uint32)
    return (plain["name"], keys, plain["pos"], plain["has_gauss"], plain["cached"])


@contextmanager
def eval_mode(model: torch.nn.Module):
    """Run the block with ``model`` in eval mode (no dropout), then put back the mode it had."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def pick_device(name: str = "auto") -> torch.device:
    """'auto' takes CUDA, then Apple's MPS, then the CPU."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _has_mps():
            return torch.device("mps")
        return torch.device("cpu")
    # ValueError, worded for any caller: the trainer names its key (trainer.device), scripts their flag
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("cuda was asked for, but torch sees no CUDA device")
    if name == "mps" and not _has_mps():
        raise ValueError("mps was asked for, but torch sees no Apple MPS device")
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r} ({', '.join(DEVICES)})")
    return torch.device(name)


class SignalReceived(BaseException):
    """Raised by :class:`StopRequest` with ``immediate=True``; a BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class Interrupted(KeyboardInterrupt):
    """A second stop signal (see :class:`StopRequest`): stop at once, without a checkpoint;
    ``signum`` says which signal, for the exit code (128 + signum)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# SIGUSR2: a cluster's "you are about to be preempted or timed out" (submitit's default, Slurm's --signal)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR2") if hasattr(signal, name))


_early_stops: list[int] = []  # SIGINTs that reached a training process before its loop's StopRequest


def interrupt_early(signum, frame) -> None:
    """A training process's SIGINT handler until the loop's :class:`StopRequest`: stop at once,
    as Python's own handler would (``Interrupted``, exit 128 + signum), and remember it. Python
    only prints an exception raised inside a finalizer (a ``__del__``, a weakref callback), so a
    Ctrl-C landing there was lost, and the run trained on (the flaky run-folder lock test): the
    loop's StopRequest now starts with the remembered signal and stops after one step."""
    _early_stops.append(signum)
    raise Interrupted(signum)


class StopRequest:
    """While active, SIGINT (Ctrl-C), SIGTERM and SIGUSR2 only set ``signal``; the training loop
    checks it after each step, writes a checkpoint and stops. A second signal stops at once. With
    ``immediate=True`` (a phase with nothing left to save, e.g. the final evaluation) the first
    signal raises :class:`SignalReceived` at once. A SIGUSR2 is handed on, once the block is left,
    to the handler that was there before (submitit's: it requeues the job, which resumes)."""

    def __init__(self, immediate: bool = False) -> None:
        self.signal: int | None = None
        self.immediate = immediate
        self._previous: dict = {}

    def __enter__(self) -> StopRequest:
        if _early_stops and not self.immediate:  # a stop that an earlier phase swallowed
            self.signal = _early_stops[-1]
        _early_stops.clear()
        for sig in STOP_SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame) -> None:
        if self.immediate:
            self.signal = signum
            raise SignalReceived(signum)
        if self.signal is not None:
            raise Interrupted(signum)
        self.signal = signum

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        handler = self._previous.get(getattr(signal, "SIGUSR2", None))
        if self.signal == getattr(signal, "SIGUSR2", None) and callable(handler):
            handler(self.signal, None)  # the checkpoint is written: now the job may be requeued

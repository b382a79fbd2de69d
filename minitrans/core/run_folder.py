"""A run folder belongs to one run: new folders that cannot collide, a folder checked before
anything is written into it, an exclusive lock while a process trains in it, and the leftovers
of interrupted saves cleaned when the next process takes it over.

The lock is ``filelock``'s on ``RUN/.lock`` (``flock`` on Unix, ``msvcrt`` on Windows): the
operating system drops it when the process ends, however it ends (a SIGKILL included), so a
crashed run never leaves its folder locked. ``RUN/.lock.holder`` names the holder (process id
and host) for the message a second process gets (read only while the lock is held: afterwards
it names the last holder). Under torchrun only rank 0 holds it. ``scripts/train.py`` takes it
before Hydra writes into a named folder and hands it down to the training processes it starts
(:func:`hand_down`): a child's :class:`RunLock` then relies on its parent's. The lock
is advisory and, on some network filesystems, local to one machine: runs sharing a folder
across machines must not rely on it.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from pathlib import Path

from filelock import FileLock, Timeout

from minitrans.core.checks import ConfigError

LOCK_NAME = ".lock"
HOLDER_NAME = ".lock.holder"
HANDED_DOWN = "MINITRANS_RUN_LOCK"  # "PID FOLDER": process PID holds FOLDER's lock for its children


_claimed: dict[str, str] = {}  # one claim per name and process, however often Hydra resolves it


def claim_new_folder(base: str | Path) -> str:
    """Create and return ``base``, or ``base_1``, ``base_2``, ... when it exists: ``mkdir`` is
    atomic, so two processes started in the same second get two folders. Hydra's default run
    folder (conf/hydra/default.yaml) is named through it."""
    if str(base) in _claimed:
        return _claimed[str(base)]
    _claimed[str(base)] = _claim(Path(base))
    return _claimed[str(base)]


def _claim(base: Path) -> str:
    base.parent.mkdir(parents=True, exist_ok=True)
    for number in range(10_000):
        candidate = base if number == 0 else base.with_name(f"{base.name}_{number}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return str(candidate)
    raise ConfigError(f"hydra.run.dir: could not find a free folder next to {base}")


MAX_NAME_BYTES = 200  # of a sweep job's folder name; most filesystems allow 255 bytes


def job_folder_name(name: str) -> str:
    """A sweep job's folder name (``NUM_OVERRIDES``, conf/hydra/default.yaml) that the filesystem
    takes: a ``/`` in an override's value (``data.path=corpora/x.tsv``) becomes ``_`` instead of
    a nested folder, and a name longer than :data:`MAX_NAME_BYTES` bytes (many overrides) keeps
    its start and ends in a hash of the whole, so distinct jobs keep distinct folders."""
    name = name.replace("/", "_").replace(os.sep, "_")
    if len(name.encode("utf-8")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    head = name.encode("utf-8")[: MAX_NAME_BYTES - len(digest) - 1].decode("utf-8", errors="ignore")
    return f"{head}~{digest}"


def check_run_dir(path: str | None, key: str = "hydra.run.dir") -> None:
    """Refuse, before anything is written, a run folder that is empty (it would mean the
    current directory), a file, not writable, or in use by another training process."""
    if path is None:
        return
    if not str(path).strip():
        raise ConfigError(f"{key}: empty; name a folder for the run (e.g. {key}=runs/base)")
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{key}: {path} exists and is not a folder")
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{key}: {existing} is not a folder, so {path} cannot be made")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}: {existing} is not writable")
    holder = lock_holder(folder)
    if holder is not None:
        raise ConfigError(busy_message(folder, holder, key))


def busy_message(folder: Path, holder: str, key: str = "hydra.run.dir") -> str:
    return f"{key}: {folder} is in use by another training process ({holder}); wait for it to end or use another folder"


def _file_lock(folder: Path) -> FileLock:
    # one lock object per folder and process (filelock's singleton), shared by every thread: a
    # second RunLock in the same process (a test, a notebook that builds a new Trainer) re-enters
    # it, and the last release lets it go
    # (keyed by the absolute path: two objects for one file would lock each other out)
    return FileLock(Path(os.path.abspath(folder)) / LOCK_NAME, timeout=0, is_singleton=True, thread_local=False)


def hand_down(folder: str | Path) -> None:
    """Tell the processes this one starts from now on that it holds ``folder``'s lock for them."""
    os.environ[HANDED_DOWN] = f"{os.getpid()} {os.path.abspath(folder)}"


def _held_by_parent(folder: Path) -> bool:
    pid, _, held = os.environ.get(HANDED_DOWN, "").partition(" ")
    return pid == str(os.getppid()) and held == os.path.abspath(folder)  # a dead parent's lock is gone


def lock_holder(folder: str | Path) -> str | None:
    """Who holds ``folder``'s lock ("pid 123 on host"), or None when nobody does."""
    folder = Path(folder)
    if not (folder / LOCK_NAME).is_file():
        return None
    lock = _file_lock(folder)
    if lock.is_locked:
        return f"{_holder(folder)} (this process)"
    try:
        lock.acquire()
    except Timeout:
        return _holder(folder)
    lock.release()
    return None


def _holder(folder: Path) -> str:
    try:
        return (folder / HOLDER_NAME).read_text().strip() or "holder unknown"
    except OSError:
        return "holder unknown"


class RunLock:
    """Hold ``folder``'s lock (a :class:`ConfigError` naming the holder if another process has
    it) until :meth:`release`, the end of a ``with`` block, or the end of this object or of the
    process, whichever comes first."""

    def __init__(self, folder: str | Path, key: str = "hydra.run.dir") -> None:
        self.folder, self.key = Path(folder), key  # key: the setting a refusal names
        self._lock: FileLock | None = None

    def acquire(self) -> RunLock:
        if self._lock is not None or _held_by_parent(self.folder):
            return self
        try:  # a place no folder can be made (/proc/x, below a file): one line, not a traceback
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"{self.key}: {self.folder} cannot be made ({error.strerror or error})") from None
        lock = _file_lock(self.folder)
        first = not lock.is_locked
        try:
            lock.acquire()
        except Timeout:
            raise ConfigError(busy_message(self.folder, _holder(self.folder), self.key)) from None
        if first:
            since = time.strftime("%Y-%m-%d %H:%M:%S")
            (self.folder / HOLDER_NAME).write_text(f"pid {os.getpid()} on {socket.gethostname()}, since {since}\n")
        self._lock = lock
        return self

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def clean_interrupted_saves(folder: str | Path) -> list[Path]:
    """Delete the temporary files of saves that never finished (a kill or a full disk during
    ``save_checkpoint`` or a tokenizer save); call it only while holding the folder's lock."""
    folder = Path(folder)
    removed = []
    for pattern in ("checkpoints/.*.tmp", "tokenizer/*.tmp", ".*.tmp"):
        for path in folder.glob(pattern):
            if path.is_file():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed

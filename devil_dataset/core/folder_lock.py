"""One writer per output folder: a lock file recording who writes it (process id, host, command, start time).

Every command that writes an output folder (``devil build``, ``inpaint``, ``evaluate --out``, ``demo``) holds
:data:`LOCK_NAME` in it for the whole run. A second writer of the same folder is refused with
:class:`FolderLockedError` naming the holder (the CLI exits 2), or waits for it (``wait=True``, the commands'
``--wait-lock``). The exclusion is an ``fcntl.flock`` on the lock file, which the kernel drops when its process
ends, so the lock of a killed run (``kill -9``, a crash) is simply taken over by the next one.

Leftover temporaries of interrupted writes are removed only under the lock
(:func:`devil_dataset.core.atomic.remove_stale_temporaries` checks :func:`holds_lock`), so a second run can no
longer delete the files the first one is writing.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with hold_folder_lock(folder, command="devil build") as lock:
    ...     holds_lock(folder), read_lock_holder(folder)["command"]
    (True, 'devil build')
    >>> holds_lock(folder)
    False
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import IO, Iterator

from .errors import DevilError

LOCK_NAME = ".devil-lock"
# How often a waiting writer (--wait-lock) tries again, and how often it says it is still waiting.
WAIT_POLL_S = 0.5
WAIT_REPORT_S = 30.0


class FolderLockedError(DevilError):
    """Another process holds the output folder's lock; the message names it (pid, host, command, start)."""


def read_lock_holder(folder: str | os.PathLike) -> dict:
    """The holder record of ``folder``'s lock file (``{}`` when there is none or it is unreadable)."""
    try:
        record = json.loads((Path(folder) / LOCK_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def describe_holder(record: dict) -> str:
    """``pid 12 on host h (devil build --sample --out ds), since 2026-01-01 10:00:00`` from a holder record.

    >>> describe_holder({"pid": 12, "host": "h", "command": "devil build", "started": "2026-01-01 10:00:00"})
    'pid 12 on host h (devil build), since 2026-01-01 10:00:00'
    >>> describe_holder({})
    'another process'
    """
    if not record:
        return "another process"
    text = f"pid {record.get('pid', '?')} on host {record.get('host', '?')}"
    if record.get("command"):
        text += f" ({record['command']})"
    if record.get("started"):
        text += f", since {record['started']}"
    return text


def _command_line() -> str:
    argv = list(sys.argv)
    if argv and Path(argv[0]).name in ("devil", "__main__.py"):
        argv[0] = "devil"
    return " ".join(argv)


class FolderLock:
    """The held lock of one folder (see :func:`hold_folder_lock`); :meth:`release` gives it back."""

    def __init__(self, folder: Path, handle: IO[str], record: dict, created: list[Path]):
        self.folder, self.handle, self.record, self.count = folder, handle, record, 1
        self.created = created  # folders made by acquiring the lock (innermost first)

    @property
    def path(self) -> Path:
        return self.folder / LOCK_NAME

    def release(self, *, failed: bool = False) -> None:
        """Give the lock back (after as many releases as acquisitions in this process); removes the lock file.

        ``failed=True`` (the run raised) also removes the folders the lock created if they are still empty, so a
        failed run leaves no empty output folder behind.
        """
        self.count -= 1
        if self.count > 0:
            return
        _HELD.pop(self.folder, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # still ours: a waiter re-checks the inode after getting the flock
        self.handle.close()
        if failed:
            for folder in self.created:
                try:
                    folder.rmdir()
                except OSError:  # not empty (or gone): keep it and its parents
                    break


# Folders this process holds (resolved path -> lock): a nested writer (build() inside `devil build`) re-enters.
_HELD: dict[Path, FolderLock] = {}


def holds_lock(directory: str | os.PathLike) -> bool:
    """True when this process holds the lock of ``directory`` or of a folder containing it."""
    path = Path(directory).resolve()
    return any(path == held or held in path.parents for held in _HELD)


def _try_lock(lock_path: Path) -> IO[str] | None:
    """An open lock file with the flock taken, or None while another process holds it."""
    while True:
        handle = open(lock_path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return None
            raise
        try:  # the holder may have removed the file between our open and our flock: lock the current one
            if os.stat(lock_path).st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()


def acquire_folder_lock(folder: str | os.PathLike, *, command: str | None = None, wait: bool = False,
                        say=None) -> FolderLock:
    """Lock ``folder`` (created if missing) for this process, recording pid, host, command and start time.

    Re-entrant within a process. Held by another process: :class:`FolderLockedError` naming the holder, or with
    ``wait=True`` wait until it is released (``say``, e.g. ``print``, gets a line now and every
    :data:`WAIT_REPORT_S` seconds). A lock file left by a process that died is taken over (``say`` is told).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise DevilError(f"{folder}: exists and is not a directory")
    created = [p for p in (folder.absolute(), *folder.absolute().parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DevilError(f"cannot write {folder}: cannot create the folder ({exc.strerror or exc})") from None
    key = folder.resolve()
    if key in _HELD:
        _HELD[key].count += 1
        return _HELD[key]
    lock_path = key / LOCK_NAME
    waited_since, reported = time.monotonic(), -WAIT_REPORT_S
    while (handle := _open_lock(folder, lock_path)) is None:
        holder = describe_holder(read_lock_holder(key))
        if not wait:
            raise FolderLockedError(
                f"{folder}: another run is writing this folder: {holder}. Wait for it to finish (or pass "
                f"--wait-lock), or write to another folder; if that process is gone, delete {lock_path}")
        waited = time.monotonic() - waited_since
        if say is not None and waited - reported >= WAIT_REPORT_S:
            reported = waited
            say(f"{folder}: waiting for the run holding its lock: {holder} ({waited:.0f} s so far)")
        time.sleep(WAIT_POLL_S)
    previous = read_lock_holder(key)
    if previous and say is not None:
        say(f"{folder}: took over the lock of {describe_holder(previous)}, which is no longer running")
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command or _command_line(),
              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(record) + "\n")
    handle.flush()
    lock = FolderLock(key, handle, record, created)
    _HELD[key] = lock
    return lock


def _open_lock(folder: Path, lock_path: Path) -> IO[str] | None:
    """:func:`_try_lock`, with a folder this process may not write (``chmod 555``, ``chattr +i``, a read-only
    mount) reported as a :class:`DevilError` naming it instead of a ``PermissionError`` traceback."""
    try:
        return _try_lock(lock_path)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise DevilError(f"cannot write {folder}: {exc.strerror} (its lock file {LOCK_NAME} cannot be "
                             "created); make the folder writable or write to another one") from None
        raise


@contextlib.contextmanager
def hold_folder_lock(folder: str | os.PathLike, *, command: str | None = None, wait: bool = False,
                     say=None) -> Iterator[FolderLock]:
    """Hold ``folder``'s lock for the block (:func:`acquire_folder_lock`); when the block raises, the folders
    the lock created are removed again if still empty."""
    lock = acquire_folder_lock(folder, command=command, wait=wait, say=say)
    try:
        yield lock
    except BaseException:
        lock.release(failed=True)
        raise
    lock.release()


__all__ = ["FolderLock", "FolderLockedError", "LOCK_NAME", "acquire_folder_lock", "describe_holder",
           "hold_folder_lock", "holds_lock", "read_lock_holder"]

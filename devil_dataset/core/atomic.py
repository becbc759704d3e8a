"""Atomic file and directory writes: a reader never sees a half-written output.

Every writer in the package goes through these helpers, so an interrupted run leaves either the old
state or the complete new file, never a partial one (temporary names start with ``.tmp-``).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Iterator

from .folder_lock import hold_folder_lock, holds_lock

TMP_PREFIX = ".tmp-"
#: A temporary file of this writer older than this is stale whatever wrote it (another machine on a shared disk).
STALE_AFTER_S = 24 * 3600


def _host_tag() -> str:
    """This machine's name as a file-name part (letters, digits, ``-`` and ``_`` only)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40] or "host"


def _temp_prefix(target_name: str) -> str:
    """The name start of :func:`atomic_write_bytes`' temporary file for ``target_name``:
    ``.tmp-<target name>.<host>.<pid>.`` (then a random part), so a later run can tell whose it is."""
    return f"{TMP_PREFIX}{target_name}.{_host_tag()}.{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_write_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporary files a killed :func:`atomic_write_bytes` of ``path`` left beside it, and only those:
    names ``.tmp-<name of path>.<host>.<pid>.<random>`` whose process is gone (this host), or any such file, or an
    older ``.tmp-<name of path>.<random>`` one, not modified for :data:`STALE_AFTER_S`. A concurrent writer's file
    (its process alive) is kept. Called by every :func:`atomic_write_bytes`, so the next run cleans up.

        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> dead = d / f".tmp-r.json.{_host_tag()}.999999999.x1"; _ = dead.write_text("{")
        >>> live = d / f".tmp-r.json.{_host_tag()}.{os.getpid()}.x2"; _ = live.write_text("{")
        >>> other = d / ".tmp-other.json.h.1.x3"; _ = other.write_text("{")
        >>> remove_stale_write_temporaries(d / "r.json") == [dead], live.exists(), other.exists()
        (True, True, True)
    """
    path = Path(path)
    start = f"{TMP_PREFIX}{path.name}."
    host = _host_tag()
    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(path.parent) if e.name.startswith(start) and e.is_file(follow_symlinks=False)]
    except OSError:
        return removed
    now = time.time()
    for e in entries:
        parts = e.name[len(start):].split(".")
        mine = len(parts) >= 3 and parts[0] == host and parts[1].isdigit()
        try:
            old = now - e.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S
        except OSError:
            continue
        if (mine and int(parts[1]) != os.getpid() and not _pid_alive(int(parts[1]))) or old:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
                removed.append(Path(e.path))
    return removed


def _default_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` would give (0666 minus the umask); mkstemp would give 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same directory and ``os.replace``.

    Example:
        >>> import tempfile, pathlib
        >>> p = atomic_write_bytes(pathlib.Path(tempfile.mkdtemp()) / "x.bin", b"abc")
        >>> p.read_bytes()
        b'abc'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_write_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), dir=path.parent)
    try:
        os.fchmod(fd, _default_file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 text atomically (see :func:`atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it is renamed onto ``path``.

    Use it for writers that want a filename (``np.savez``, ``pyarrow.parquet.write_table``, PIL):

        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("ok")
        >>> target.read_text()
        'ok'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f"{TMP_PREFIX}{os.getpid()}-{path.name}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary directory that becomes ``path`` once the block succeeds.

    With ``overwrite=False`` an existing ``path`` raises ``FileExistsError`` before anything is written.

        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "clip"
        >>> with atomic_directory(d) as tmp:
        ...     _ = (tmp / "a.txt").write_text("1")
        >>> sorted(p.name for p in d.iterdir())
        ['a.txt']
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path}: already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX + path.name + ".", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            old = path.parent / f"{TMP_PREFIX}old-{os.getpid()}-{path.name}"
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_stale_temporaries(directory: str | os.PathLike) -> list[Path]:
    """Delete leftovers of interrupted atomic writes (``.tmp-*``) in ``directory``; return what was removed.

    Only under the folder's lock (:mod:`devil_dataset.core.folder_lock`): a caller that does not hold the lock of
    ``directory`` (or of a folder containing it) takes it for the cleaning, so a run writing that folder right now
    makes this raise :class:`~devil_dataset.core.folder_lock.FolderLockedError` instead of deleting its files.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    if not holds_lock(directory):
        with hold_folder_lock(directory):
            return remove_stale_temporaries(directory)
    removed: list[Path] = []
    for p in directory.glob(TMP_PREFIX + "*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        removed.append(p)
    return removed

def unwritable_reason(folder: str | os.PathLike) -> str | None:
    """Why ``folder`` cannot be written (creating it and its parents, then a probe file written and removed there:
    read-only, immutable, a file in the way), or ``None`` when it can. Commands call it before any work.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "f"; _ = f.write_text("x")
    >>> unwritable_reason(f / "sub") is not None, unwritable_reason(f.parent / "new") is None
    (True, True)
    """
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return None


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"abc")
    >>> file_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

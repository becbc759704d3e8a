"""core/folder_lock.py: one writer per output folder, checked with real second processes."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core.atomic import remove_stale_temporaries
from devil_dataset.core.folder_lock import (
    LOCK_NAME,
    FolderLockedError,
    acquire_folder_lock,
    hold_folder_lock,
    holds_lock,
    read_lock_holder,
)
from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs

CLI = "import sys; from devil_dataset.cli import main; sys.exit(main(sys.argv[1:]))"

# A second process that holds FOLDER's lock, says "locked" and sleeps until killed (or for SECONDS).
HOLDER = """
import sys, time
from devil_dataset.core.folder_lock import acquire_folder_lock
acquire_folder_lock(sys.argv[1], command="devil build --sample --out ds")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _start_holder(folder: Path, seconds: float = 60) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_writer_is_refused_naming_the_holder(tmp_path):
    holder = _start_holder(tmp_path / "ds")
    try:
        with pytest.raises(FolderLockedError) as err:
            acquire_folder_lock(tmp_path / "ds")
        message = str(err.value)
        assert f"pid {holder.pid} on host {socket.gethostname()} (devil build --sample --out ds)" in message
        assert "--wait-lock" in message
        # temporaries are cleaned only under the lock: the holder's files are not touched
        (tmp_path / "ds" / ".tmp-frame.png").write_bytes(b"x")
        with pytest.raises(FolderLockedError):
            remove_stale_temporaries(tmp_path / "ds")
        assert (tmp_path / "ds" / ".tmp-frame.png").exists()
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path):
    holder = _start_holder(tmp_path / "ds")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert read_lock_holder(tmp_path / "ds")["pid"] == holder.pid  # the dead run's file is still there
    said: list[str] = []
    with hold_folder_lock(tmp_path / "ds", command="devil build", say=said.append):
        assert read_lock_holder(tmp_path / "ds")["pid"] == os.getpid()
        assert said[0].startswith(f"{tmp_path / 'ds'}: took over the lock of pid {holder.pid} ")
        assert said[0].endswith("which is no longer running")
    assert not (tmp_path / "ds" / LOCK_NAME).exists()  # released: the lock file is gone


def test_wait_lock_waits_for_the_holder(tmp_path):
    holder = _start_holder(tmp_path / "ds", seconds=1.5)
    start = time.monotonic()
    said: list[str] = []
    with hold_folder_lock(tmp_path / "ds", wait=True, say=said.append):
        waited = time.monotonic() - start
    holder.wait()
    assert waited > 0.5 and said and "waiting for the run holding its lock" in said[0]


def test_reentrant_in_one_process_and_covers_subfolders(tmp_path):
    with hold_folder_lock(tmp_path / "out"):
        assert holds_lock(tmp_path / "out" / "data" / "all")
        with hold_folder_lock(tmp_path / "out"):
            pass
        assert holds_lock(tmp_path / "out")
        assert json.loads((tmp_path / "out" / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not holds_lock(tmp_path / "out")


def test_a_failed_run_removes_the_empty_folders_it_created(tmp_path):
    with pytest.raises(RuntimeError):
        with hold_folder_lock(tmp_path / "a" / "b"):
            raise RuntimeError("boom")
    assert not (tmp_path / "a").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        with hold_folder_lock(tmp_path / "kept"):
            (tmp_path / "kept" / "partial.txt").write_text("x")
            raise RuntimeError("boom")
    assert (tmp_path / "kept" / "partial.txt").exists()


def test_two_devil_inpaint_processes_on_one_folder(tmp_path):
    """The CLI: a second `devil inpaint` into a folder being written exits 2 naming the first."""
    frames = np.random.default_rng(0).integers(0, 256, (3, 16, 24, 3), dtype=np.uint8)
    hole = np.zeros((3, 16, 24), bool)
    hole[:, 4:8, 6:12] = True
    write_frame_pngs(frames, tmp_path / "in" / "clip", "gt")
    write_mask_pngs(hole, tmp_path / "in" / "clip")
    holder = _start_holder(tmp_path / "preds")
    try:
        result = subprocess.run([sys.executable, "-c", CLI, "inpaint", "--method", "telea", "--inputs",
                                 str(tmp_path / "in"), "--out", str(tmp_path / "preds")],
                                capture_output=True, text=True)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2, result.stderr
    assert f"another run is writing this folder: pid {holder.pid}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "preds" / "clip").exists()
    # once the first run is gone, the same command runs (and takes over the dead run's lock file)
    done = subprocess.run([sys.executable, "-c", CLI, "inpaint", "--method", "telea", "--inputs", str(tmp_path / "in"),
                           "--out", str(tmp_path / "preds")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "preds" / "clip").glob("frame_*_pred.png"))) == 3
    assert not (tmp_path / "preds" / LOCK_NAME).exists()


def test_a_second_devil_build_exits_2_and_leaves_the_first_runs_files(tmp_path):
    """The case: `devil build --sample --out ds` twice; the second no longer deletes the first's
    temporaries as leftovers of a killed run (the first then died in write_video)."""
    holder = _start_holder(tmp_path / "ds")
    (tmp_path / "ds" / ".tmp-scene-00.mp4.x").write_bytes(b"being written")
    try:
        result = subprocess.run([sys.executable, "-c", CLI, "build", "--sample", "--out", str(tmp_path / "ds"),
                                 "--quiet"], capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2 and f"pid {holder.pid} on host" in result.stderr, result.stderr
    assert (tmp_path / "ds" / ".tmp-scene-00.mp4.x").read_bytes() == b"being written"


def test_an_unwritable_output_folder_is_exit_2_cannot_write(unwritable_folder, tmp_path, capsys):
    """The lock file of a folder that cannot be written (chmod 555, chattr +i) is a clear error
    naming the folder, not a PermissionError traceback."""
    from devil_dataset.cli import main
    from devil_dataset.core.errors import DevilError

    with pytest.raises(DevilError, match=f"cannot write {unwritable_folder}: "):
        acquire_folder_lock(unwritable_folder)
    with pytest.raises(DevilError, match=f"cannot write {unwritable_folder / 'sub'}: cannot create the folder"):
        acquire_folder_lock(unwritable_folder / "sub")
    rng = np.random.default_rng(0)
    write_frame_pngs(rng.integers(0, 256, (2, 16, 16, 3), dtype=np.uint8), tmp_path / "in" / "clip", "gt")
    write_mask_pngs(np.ones((2, 16, 16), bool), tmp_path / "in" / "clip")
    capsys.readouterr()
    code = main(["inpaint", "--method", "telea", "--inputs", str(tmp_path / "in"), "--out", str(unwritable_folder)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"devil: error: cannot write {unwritable_folder}: ") and "Traceback" not in err

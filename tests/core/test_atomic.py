"""Atomic writes leave either the old state or the complete new output."""
import pytest

from devil_dataset.core.atomic import atomic_directory, atomic_path, atomic_write_bytes, remove_stale_temporaries


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "a" / "f.bin"
    atomic_write_bytes(p, b"old")
    atomic_write_bytes(p, b"new content")
    assert p.read_bytes() == b"new content"
    assert [x.name for x in p.parent.iterdir()] == ["f.bin"]


def test_failed_write_keeps_old_file(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]


def test_atomic_directory_all_or_nothing(tmp_path):
    target = tmp_path / "clip"
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as tmp:
            (tmp / "frame_0000.png").write_bytes(b"x")
            raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
    with atomic_directory(target) as tmp:
        (tmp / "frame_0000.png").write_bytes(b"x")
    assert [p.name for p in target.iterdir()] == ["frame_0000.png"]
    with pytest.raises(FileExistsError):
        with atomic_directory(target):
            pass
    with atomic_directory(target, overwrite=True) as tmp:
        (tmp / "b").write_bytes(b"y")
    assert [p.name for p in target.iterdir()] == ["b"]


def test_remove_stale_temporaries(tmp_path):
    (tmp_path / ".tmp-x").write_text("partial")
    (tmp_path / ".tmp-dir").mkdir()
    (tmp_path / "keep").write_text("ok")
    removed = remove_stale_temporaries(tmp_path)
    assert len(removed) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["keep"]


def test_atomic_write_uses_normal_file_mode(tmp_path):
    import os
    p = atomic_write_bytes(tmp_path / "m.json", b"{}")
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert os.stat(p).st_mode & 0o777 == os.stat(plain).st_mode & 0o777

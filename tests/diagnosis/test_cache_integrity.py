"""The attribute cache on a folder that cannot be written runs without storing (and says
so), and an entry changed on disk (a flipped bit, still valid JSON) is recomputed and reported, never served."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
from devil_dataset.diagnosis.attributes import AttributeOptions
from devil_dataset.diagnosis.pairs import directory_pairs
from devil_dataset.diagnosis.run import compute_attributes

OPTIONS = AttributeOptions((32, 32), "orb")


@pytest.fixture
def release_dir(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    for i, name in enumerate(("a", "b")):
        write_frame_pngs(rng.integers(0, 255, (12, 32, 32, 3), dtype=np.uint8), tmp_path / "gt" / name)
        hole = np.zeros((12, 32, 32), bool)
        hole[:, 4:10 + 6 * i, 4:12] = True
        write_mask_pngs(hole, tmp_path / "gt" / name)
    return tmp_path / "gt"


def test_damaged_entry_is_recomputed_and_reported(release_dir, tmp_path):
    pairs = directory_pairs(release_dir)
    cache = tmp_path / "cache"
    first, _ = compute_attributes(pairs, options=OPTIONS, cache_dir=cache, progress=False)
    entries = [p for p in cache.rglob("*.json") if '"value": 0.' in p.read_text()]
    target = next(p for p in entries if str(first.rows[0].scores["fg_size"]) in p.read_text())
    doc = json.loads(target.read_text())
    doc["content"]["value"] = 0.9  # a flipped bit that still parses
    target.write_text(json.dumps(doc))
    again, stats = compute_attributes(pairs, options=OPTIONS, cache_dir=cache, progress=False)
    assert again.rows[0].scores["fg_size"] == first.rows[0].scores["fg_size"] != 0.9
    assert stats.damaged == [str(target)]
    assert stats.computed == {"fg_size": 1}  # only the damaged score is computed again
    assert str(target) in stats.notes()[0] and "checksum mismatch" in stats.notes()[0]
    _, clean = compute_attributes(pairs, options=OPTIONS, cache_dir=cache, progress=False)  # rewritten whole
    assert clean.damaged == [] and sum(clean.computed.values()) == 0


def test_unwritable_cache_folder_runs_without_storing(release_dir, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    code = main(["diagnose", "--gt-dir", str(release_dir), "--out", str(tmp_path / "out"), "--scoring-size", "32x32",
                 "--detector", "orb", "--quiet", "--cache", str(tmp_path / "a-file" / "cache")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"--cache {tmp_path / 'a-file' / 'cache'} cannot be written" in err and "without storing" in err
    assert (tmp_path / "out" / "attributes.tsv").is_file()


def test_write_failing_mid_run_is_reported_not_raised(release_dir, unwritable_folder):
    """A cache folder that turns unwritable after the up-front check: every write fails, none raises."""
    table, stats = compute_attributes(directory_pairs(release_dir), options=OPTIONS, cache_dir=unwritable_folder,
                                      cache_writable=True, progress=False)
    assert len(table.rows) == 2 and stats.write_error.startswith("PermissionError")
    assert "could not be written (PermissionError" in stats.notes()[0]


def test_immutable_cache_folder_is_read_not_written(release_dir, tmp_path, capsys, unwritable_folder):
    """Item 16 on a real read-only folder (chattr +i as root, chmod 555 otherwise): no PermissionError traceback,
    exit 0, the run says it stores nothing."""
    argv = ["diagnose", "--gt-dir", str(release_dir), "--scoring-size", "32x32", "--detector", "orb", "--quiet",
            "--cache", str(unwritable_folder)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"--cache {unwritable_folder} cannot be written (PermissionError" in err and "Traceback" not in err
    assert list(unwritable_folder.iterdir()) == []


def test_unwritable_out_folder_exits_2_before_any_work(release_dir, tmp_path, capsys, unwritable_folder,
                                                       monkeypatch):
    """Item 15: an --out that cannot be written is refused before the attribute pass."""
    import importlib

    module = importlib.import_module("devil_dataset.diagnosis.procedure")
    monkeypatch.setattr(module, "compute_attributes", lambda *a, **k: pytest.fail("ran the pass"))
    assert main(["diagnose", "--gt-dir", str(release_dir), "--cache", "none", "--out",
                 str(unwritable_folder / "sub")]) == 2
    assert f"devil: error: --out {unwritable_folder / 'sub'}: cannot write there (PermissionError" in \
        capsys.readouterr().err


def test_entry_no_longer_utf8_is_recomputed_and_named(release_dir, tmp_path):
    """A damaged first byte (invalid UTF-8): recomputed and named like any damaged entry, never a traceback."""
    pairs = directory_pairs(release_dir)
    cache = tmp_path / "cache"
    first, _ = compute_attributes(pairs, options=OPTIONS, cache_dir=cache, progress=False)
    target = sorted(cache.rglob("*.json"))[0]
    target.write_bytes(b"\xff" + target.read_bytes()[1:])
    again, stats = compute_attributes(pairs, options=OPTIONS, cache_dir=cache, progress=False)
    assert again.rows == first.rows and stats.damaged == [str(target)]
    assert sum(stats.computed.values()) >= 1 and str(target) in stats.notes()[0]


def test_bad_predictions_named_before_the_attribute_pass(release_dir, tmp_path, capsys):
    """The ground-truth diagnosis checks its inputs first too (one procedure): two predictions that are files, not
    folders, are named in one error (exit 2) and --out is left empty."""
    bad = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for p in bad:
        p.write_text("x")
    code = main(["diagnose", "--gt-dir", str(release_dir), "--out", str(tmp_path / "out"), "--cache", "none",
                 "--quiet", "--predictions", f"a={bad[0]}", f"b={bad[1]}"])
    err = capsys.readouterr().err
    assert code == 2 and "2 bad inputs (nothing written)" in err and all(f"{p}: not a folder" in err for p in bad)
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").rglob("*")) == []

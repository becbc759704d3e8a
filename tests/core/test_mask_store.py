"""Stored masks: the 832x480 benchmark mask in one call, time reversal, npz and release-png storage."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core import mask_store
from devil_dataset.core.cover_crop import cover_crop_mask
from devil_dataset.core.errors import DevilError
from devil_dataset.core.mask_stats import mask_stats
from devil_dataset.core.mask_store import (
    output_path,
    read_mask_folder,
    read_mask_npz,
    read_stored,
    render_masks_at,
    store_mask,
    stored_mask,
    time_reverse,
    write_mask_npz,
)
from devil_dataset.core.masks import mask_seed, render_mask
from devil_dataset.core.release_format import read_mask_pngs

FIXTURES = Path(__file__).parents[2].parent / "shared" / "fixtures" / "original-masks"
PRESET = "fgs-h_fgm-h_fgd-h"


def test_stored_mask_is_cover_crop_of_the_render_and_reverses():
    full = render_mask(PRESET, mask_seed(2), num_frames=4)
    hole = stored_mask(PRESET, 2, num_frames=4)
    assert hole.shape == (4, 480, 832) and hole.dtype == bool
    assert np.array_equal(hole, cover_crop_mask(full))
    reversed_ = stored_mask(PRESET, 2, reverse=True, num_frames=4)
    assert np.array_equal(reversed_, hole[[3, 2, 1, 0]])
    assert np.array_equal(time_reverse(time_reverse(hole)), hole)


def test_render_at_several_sizes_at_once():
    raw, small, other = render_masks_at(PRESET, 2, [(1920, 1080), (832, 480), (640, 640)], num_frames=2)
    assert np.array_equal(raw, render_mask(PRESET, mask_seed(2), num_frames=2))
    assert np.array_equal(small, cover_crop_mask(raw))
    assert np.array_equal(other, cover_crop_mask(raw, (640, 640)))


def test_npz_round_trip_is_deterministic(tmp_path):
    hole = stored_mask(PRESET, 0, num_frames=3)
    meta = mask_store.mask_metadata(PRESET, 0, hole, reverse=False, stats=mask_stats(hole))
    a, b = write_mask_npz(tmp_path / "a.npz", hole, meta), write_mask_npz(tmp_path / "b.npz", hole, meta)
    assert a.read_bytes() == b.read_bytes()
    back, back_meta = read_mask_npz(a)
    assert np.array_equal(back, hole) and back_meta == json.loads(json.dumps(meta))
    with np.load(a) as f:  # the fixture layout, readable without our code
        assert int(f["seed"]) == mask_seed(0) and str(f["preset"]) == PRESET and list(f["shape"]) == [3, 480, 832]
        assert np.array_equal(np.unpackbits(f["hole_packed"], axis=-1, count=832).astype(bool), hole)


def test_reads_a_release_fixture():
    path = FIXTURES / "fgs-l_fgm-h_fgd-h_seedindex0.npz"
    if not path.is_file():
        pytest.skip(f"release mask fixture {path} is absent (expected ../shared/fixtures next to the checkout)")
    hole, meta = read_stored(path)
    assert hole.shape == (90, 1080, 1920) and meta == {"seed": mask_seed(0)}


def test_store_release_png_and_npz(tmp_path):
    path, written = store_mask(tmp_path, PRESET, 1, fmt="release-png", reverse=True, num_frames=3)
    assert written and path == tmp_path / f"devil_{PRESET}" / "00001-reversed"
    assert sorted(p.name for p in path.iterdir()) == [
        "frame_0000_mask.png", "frame_0001_mask.png", "frame_0002_mask.png", "mask.json"]
    hole, meta = read_mask_folder(path)
    expected = stored_mask(PRESET, 1, reverse=True, num_frames=3)
    assert np.array_equal(hole, expected) and np.array_equal(read_mask_pngs(path), expected)
    assert meta["reversed"] is True and meta["seed"] == mask_seed(1) and meta["labels"]["fgs"] == "h"
    assert meta["stats"]["mean_area"] == pytest.approx(mask_stats(expected).mean_area)

    path, written = store_mask(tmp_path, PRESET, 1, fmt="npz", size=(1920, 1080), num_frames=2)
    hole, meta = read_stored(path)
    assert path.name == f"devil_{PRESET}_00001.npz" and hole.shape == (2, 1080, 1920)
    # statistics are always measured on the 832x480 benchmark mask
    assert meta["stats"]["width"] == 832 and meta["width"] == 1920


def test_store_resumes_and_refuses_other_settings(tmp_path):
    path, written = store_mask(tmp_path, PRESET, 0, fmt="npz", num_frames=2)
    stamp = path.stat().st_mtime_ns
    assert store_mask(tmp_path, PRESET, 0, fmt="npz", num_frames=2) == (path, False)
    assert path.stat().st_mtime_ns == stamp
    with pytest.raises(DevilError, match="other settings"):
        store_mask(tmp_path, PRESET, 0, fmt="npz", num_frames=3)


def test_interrupted_folder_write_leaves_nothing(tmp_path, monkeypatch):
    def failing(hole, directory):
        (Path(directory) / "frame_0000_mask.png").write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(mask_store, "write_mask_pngs", failing)
    with pytest.raises(KeyboardInterrupt):
        store_mask(tmp_path, PRESET, 0, fmt="release-png", num_frames=2)
    assert not (tmp_path / f"devil_{PRESET}" / "00000").exists()
    assert [p.name for p in (tmp_path / f"devil_{PRESET}").iterdir()] == []


def test_bad_stored_paths(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(DevilError, match="expected a .npz"):
        read_stored(tmp_path / "x.txt")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(DevilError, match="not a mask npz"):
        read_stored(tmp_path / "bad.npz")
    target = output_path(tmp_path, PRESET, 0, "release-png")
    target.parent.mkdir(parents=True)
    target.write_text("a file where a mask folder belongs")
    with pytest.raises(DevilError, match="not a folder"):
        store_mask(tmp_path, PRESET, 0, fmt="release-png", num_frames=1)
    with pytest.raises(ValueError, match="unknown format"):
        output_path(tmp_path, PRESET, 0, "tiff")

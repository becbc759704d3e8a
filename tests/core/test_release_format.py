"""The release's PNG conventions: mode '1' masks with 1 = known, frame_%04d_<kind>.png."""
import numpy as np
import pytest
from PIL import Image

from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import read_frame_pngs, read_mask_pngs, write_frame_pngs, write_mask_pngs


def test_mask_png_convention(tmp_path):
    hole = np.zeros((2, 6, 9), bool)
    hole[0, 1:3, 2:5] = True
    write_mask_pngs(hole, tmp_path)
    with Image.open(tmp_path / "frame_0000_mask.png") as im:
        assert im.mode == "1"
        known = np.asarray(im)
    assert known.dtype == bool and not known[1, 2] and known[0, 0]
    assert np.array_equal(read_mask_pngs(tmp_path), hole)


def test_frame_round_trip(tmp_path):
    frames = np.random.default_rng(0).integers(0, 256, (3, 5, 7, 3), dtype=np.uint8)
    write_frame_pngs(frames, tmp_path, "pred")
    assert np.array_equal(read_frame_pngs(tmp_path, "pred"), frames)


def test_gap_in_numbering_is_named(tmp_path):
    frames = np.zeros((3, 4, 4, 3), np.uint8)
    write_frame_pngs(frames, tmp_path, "gt")
    (tmp_path / "frame_0001_gt.png").unlink()
    with pytest.raises(DevilError, match=r"missing \[1\]"):
        read_frame_pngs(tmp_path, "gt")


def test_unreadable_png_names_file(tmp_path):
    write_frame_pngs(np.zeros((1, 4, 4, 3), np.uint8), tmp_path, "gt")
    (tmp_path / "frame_0000_gt.png").write_bytes(b"not a png")
    with pytest.raises(DevilError, match="frame_0000_gt.png"):
        read_frame_pngs(tmp_path, "gt")

"""The release-layout example (builder/release_example.py): the devkit's shape, the inpainter's output, replaced."""
from __future__ import annotations

import numpy as np

from devil_dataset.builder.release_example import (
    DEVKIT_NUM_FRAMES,
    DEVKIT_SIZE,
    INPUTS_DIR,
    OUTPUTS_DIR,
    write_release_example,
)
from devil_dataset.core.release_format import read_frame_pngs, read_mask_pngs


def test_writes_the_devkit_shape_and_what_the_inpainter_returns(tmp_path):
    seen = {}

    def mark_hole(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
        seen["shapes"] = frames.shape, hole.shape
        out = frames.copy()
        out[hole] = 7
        return out

    inputs, outputs = write_release_example(tmp_path / "ex", mark_hole)
    assert (inputs, outputs) == (tmp_path / "ex" / INPUTS_DIR, tmp_path / "ex" / OUTPUTS_DIR)
    w, h = DEVKIT_SIZE
    assert seen["shapes"] == ((DEVKIT_NUM_FRAMES, h, w, 3), (DEVKIT_NUM_FRAMES, h, w))
    gt, hole, pred = read_frame_pngs(inputs, "gt"), read_mask_pngs(inputs), read_frame_pngs(outputs, "pred")
    assert gt.shape == pred.shape == (DEVKIT_NUM_FRAMES, h, w, 3) and hole.any(axis=(1, 2)).all()
    assert np.array_equal(pred[~hole], gt[~hole]) and (pred[hole] == 7).all()


def test_an_existing_example_is_replaced(tmp_path):
    keep = lambda frames, hole: frames  # noqa: E731
    _, outputs = write_release_example(tmp_path, keep)
    (outputs / "stale.txt").write_text("old")
    write_release_example(tmp_path, keep)
    assert not (outputs / "stale.txt").exists()
    assert len(list(outputs.glob("frame_*_pred.png"))) == DEVKIT_NUM_FRAMES

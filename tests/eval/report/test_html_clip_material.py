"""The HTML report's stream making (devil_dataset/eval/report/clip_material.py): the frames of each stream as the
report has always made them (error map, masked input, area shrink: the reference arithmetic below), and clip
material found by the stream's key only."""
from __future__ import annotations

import cv2
import numpy as np

from devil_dataset.eval.report.clip_material import (
    ClipMaterial,
    error_grey,
    masked_input,
    shrink,
    shrink_masked,
    stream_key,
)


def _frames(seed: int, shape=(2, 300, 520, 3)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_error_grey_is_the_gain_times_the_mean_error_truncated():
    gt, pred = _frames(0), _frames(1)
    total = np.abs(gt.astype(np.int32) - pred).sum(axis=-1)
    want = np.minimum(total.astype(np.float32) * np.float32(4 / 3), 255).astype(np.uint8)
    assert np.array_equal(error_grey(gt, pred), want)
    assert error_grey(gt, gt).max() == 0 and error_grey(np.zeros_like(gt), np.full_like(gt, 255)).min() == 255


def test_masked_input_paints_only_the_hole():
    gt = _frames(2)
    hole = np.random.default_rng(3).random(gt.shape[:3]) < 0.3
    out = masked_input(gt, hole)
    assert np.array_equal(out[hole], np.broadcast_to(np.array([0, 160, 0], np.uint8), out[hole].shape))
    assert np.array_equal(out[~hole], gt[~hole]) and out is not gt
    assert np.array_equal(shrink_masked(gt, hole), shrink(out))
    assert np.array_equal(shrink_masked(gt[:, :100, :200], hole[:, :100, :200]), out[:, :100, :200])


def test_shrink_is_opencv_area_resize_to_the_even_clip_size():
    frames = _frames(4)
    out = shrink(frames)
    assert out.shape == (2, 148, 256, 3)
    assert all(np.array_equal(o, cv2.resize(f, (256, 148), interpolation=cv2.INTER_AREA)) for o, f in zip(out, frames))
    grey = frames[..., 0]
    assert np.array_equal(shrink(grey)[1], cv2.resize(grey[1], (256, 148), interpolation=cv2.INTER_AREA))
    small = frames[:, :100, :200]
    assert shrink(small) is small  # already at most the clip size


def test_material_is_found_by_its_stream_key_only(tmp_path):
    material = ClipMaterial(tmp_path / "clips")
    gt, pred = _frames(5, (3, 40, 60, 3)), _frames(6, (3, 40, 60, 3))
    hole = np.zeros(gt.shape[:3], bool)
    material.make_unit("ds/clip", gt, "hole1", hole)
    material.make_prediction("ds/clip", gt, "pred1", pred)
    for key in (stream_key("gt", "ds/clip"), stream_key("masked", "ds/clip", "hole1"), stream_key("pred", "pred1"),
                stream_key("error", "ds/clip", "pred1")):
        assert material.find(key) is not None
    assert material.find(stream_key("pred", "pred2")) is None
    assert material.find(stream_key("masked", "ds/clip", "hole2")) is None
    assert material.find(stream_key("error", "ds/other", "pred1")) is None
    # made once: an existing stream is not encoded again
    stamp = material.find(stream_key("pred", "pred1"))[0].stat().st_mtime_ns
    material.make_prediction("ds/clip", gt, "pred1", pred)
    assert material.find(stream_key("pred", "pred1"))[0].stat().st_mtime_ns == stamp

"""SSIM's exact window sums (devil_dataset.eval.kernels.ssim_window): exact against integer arithmetic, the same floats
for any crop and any OpenCV dispatch state, and a map of exactly 1 where the frames agree."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from devil_dataset.eval.kernels import ssim_window as sw


def _exact_means(gt: np.ndarray, test: np.ndarray) -> list[np.ndarray]:
    """(ux, uy, uxx, uyy, uxy) from Python integers: each value is an integer multiple of 2**-31, so each window
    sum is an exact integer over 2**31 (or 2**62 for products), rounded once to float64, then divided by 49."""
    m = {u: int(sw.UNIT_VALUES[u] * 2**31) for u in range(256)}
    assert all(m[u] == sw.UNIT_VALUES[u] * 2**31 for u in range(256))  # the values are such multiples
    x = np.vectorize(m.get, otypes=[object])(gt)
    y = np.vectorize(m.get, otypes=[object])(test)
    h, w, c = gt.shape
    out = []
    for a, scale in ((x, 31), (y, 31), (x * x, 62), (y * y, 62), (x * y, 62)):
        sums = np.empty((h - 6, w - 6, c), np.float64)
        for i in range(h - 6):
            for j in range(w - 6):
                for k in range(c):
                    sums[i, j, k] = int(a[i : i + 7, j : j + 7, k].sum()) / 2**scale  # correctly rounded
        out.append(sums / 49.0)
    return out


@pytest.mark.parametrize("kind", ["random", "bright", "dark", "extremes"])
@pytest.mark.parametrize("optimized", [False, True])
def test_window_means_are_the_exact_sums_rounded_once(kind, optimized):
    """The box filter's sums equal the exact integer sums, whatever OpenCV's SIMD and IPP switches say."""
    rng = np.random.default_rng(len(kind))
    shape = (13, 16, 3)
    gt = {"random": rng.integers(0, 256, shape), "bright": rng.integers(250, 256, shape),
          "dark": rng.integers(0, 3, shape), "extremes": rng.choice([1, 254, 255], shape)}[kind].astype(np.uint8)
    test = rng.integers(0, 256, shape, dtype=np.uint8) if kind == "random" else 255 - gt
    was_optimized, had_ipp = cv2.useOptimized(), cv2.ipp.useIPP()
    try:
        cv2.setUseOptimized(optimized)
        cv2.ipp.setUseIPP(optimized)
        got = sw.window_means(gt, test)
    finally:
        cv2.setUseOptimized(was_optimized)
        cv2.ipp.setUseIPP(had_ipp)
    for g, e in zip(got, _exact_means(gt, test)):
        assert g.dtype == np.float64 and np.array_equal(g, e)


def test_window_means_of_a_crop_are_the_same_floats():
    """A statistic depends on its own window only: any crop holding the window gives the same float."""
    rng = np.random.default_rng(2)
    gt = rng.integers(0, 256, (60, 90, 3), dtype=np.uint8)
    test = rng.integers(0, 256, gt.shape, dtype=np.uint8)
    whole = sw.window_means(gt, test)
    for r0, r1, c0, c1 in [(0, 7, 0, 7), (5, 40, 11, 90), (17, 60, 0, 33)]:
        part = sw.window_means(gt[r0:r1, c0:c1], test[r0:r1, c0:c1])
        for p, w in zip(part, whole):
            assert np.array_equal(p, w[r0 : r1 - 6, c0 : c1 - 6])


def test_map_is_exactly_one_where_the_frames_agree_and_its_mean_needs_only_the_rest():
    rng = np.random.default_rng(3)
    gt = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    test = gt.copy()
    test[20:24, 30:33] = rng.integers(0, 256, (4, 3, 3), dtype=np.uint8)
    s = sw.ssim_map(*sw.window_means(gt, test), data_range=2.0)
    differs = (s != 1).any(axis=-1)
    rows, cols = np.flatnonzero(differs.any(axis=1)), np.flatnonzero(differs.any(axis=0))
    # map pixel (i, j) has the window of frame pixel (i + 3, j + 3): only windows over the changed box differ
    assert rows.min() >= 20 - 6 and rows.max() <= 23 and cols.min() >= 30 - 6 and cols.max() <= 32
    assert differs.sum() > 0
    count = s.shape[0] * s.shape[1]
    part = s[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    assert sw.map_mean(part, count) == sw.map_mean(s, count) < 1.0
    expected = np.mean([1 + (s[..., k] - 1).sum() / count for k in range(3)])
    assert sw.map_mean(s, count) == pytest.approx(expected, rel=1e-15)


def test_window_means_reject_mismatched_small_or_non_uint8_crops():
    a = np.zeros((6, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="at least 7x7"):
        sw.window_means(a, a)
    with pytest.raises(ValueError, match="at least 7x7"):
        sw.window_means(np.zeros((8, 8, 3), np.uint8), np.zeros((8, 9, 3), np.uint8))
    with pytest.raises(ValueError, match="need uint8 frames.*float32"):
        sw.window_means(np.zeros((8, 8, 3), np.float32), np.zeros((8, 8, 3), np.uint8))


def test_single_channel_crops_keep_their_channel_axis():
    rng = np.random.default_rng(5)
    gt = rng.integers(0, 256, (9, 11, 1), dtype=np.uint8)
    means = sw.window_means(gt, gt)
    assert all(m.shape == (3, 5, 1) for m in means)
    assert np.array_equal(sw.ssim_map(*means, data_range=1.0), np.ones((3, 5, 1)))

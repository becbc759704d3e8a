"""SSIM's local statistics and map in float64, from exact 7x7 window sums (the release's metrics).

The release computes SSIM with scikit-image 0.17.2, which converts both frames to float64 before filtering
(``docs/release-metrics.md``). Its window filter is a running sum, whose rounding depends on everything earlier on
the line; here the window sums are **exact**, so every local statistic is a pure function of its own 7x7 window:

* a frame value x = float32(u / 255) (the release's metrics) is a multiple of 2**-31 (:data:`_VALUE_STEP`), so a sum of
  up to 64 of them (< 2**6) needs 37 bits and is exact in float64, in any order and by any algorithm;
* a product x * y is a multiple of 2**-62 and does not sum exactly. It is split into ``x_hi * y_hi``, with each
  value rounded to a multiple of 2**-20 (:data:`_HIGH_STEP`: products are multiples of 2**-40 below 1, and sums
  of 64 need 46 bits), and the remainder ``x * y - x_hi * y_hi``, which float64 holds exactly (a multiple of 2**-62
  of size at most 2**-20, as |x - x_hi| <= 2**-21: sums of 64 need 48 bits). Both parts sum exactly; their sum is
  then rounded once, so each window sum is the correctly rounded true sum.

Being exact, the sums come from OpenCV's box filter (the fastest here; its running sums and SIMD paths cannot
change an exact result), and :func:`window_means` of any crop gives the same floats at the pixels whose window the
crop holds. The map (:func:`ssim_map`) follows scikit-image's statements in float64, so where the two frames agree
on a whole window the map is exactly 1 (identical statistics; doubling is exact). An SSIM value therefore needs the
map only around the pixels that differ, and :func:`map_mean` sums only its entries that are not 1: the same float
for a crop or the whole frame, and within 3e-15 of the release's own float64 value (measured, ``tests/eval``).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 256, (20, 20, 3), dtype=np.uint8); b = a.copy(); b[10, 10] ^= 255
    >>> s = ssim_map(*window_means(a, b), data_range=2.0)  # the 49 windows over pixel (10, 10) differ from 1
    >>> s.shape, int((s != 1).any(axis=-1).sum())
    ((14, 14, 3), 49)
"""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

# The release's metrics: the 7x7 uniform window (scikit-image's win_size), and SSIM's constants.
WINDOW = 7
PAD = (WINDOW - 1) // 2
SSIM_K1 = 0.01
SSIM_K2 = 0.03

#: x = float32(u / 255) for each uint8 value u (the release reads frames so), held in float64.
UNIT_VALUES = (np.arange(256, dtype=np.float32) / np.float32(255)).astype(np.float64)
# Every value above is a multiple of this: the smallest nonzero one, 1/255, lies in [2**-8, 2**-7), where float32
# steps by 2**-31 (checked below).
_VALUE_STEP = 2.0**-31
# The step of the high part of a value in the product split (see the module docstring).
_HIGH_STEP = 2.0**-20
#: Each value of :data:`UNIT_VALUES` rounded to a multiple of 2**-20: the high part of the product split.
HIGH_VALUES = np.round(UNIT_VALUES / _HIGH_STEP) * _HIGH_STEP
assert np.all(UNIT_VALUES / _VALUE_STEP == np.round(UNIT_VALUES / _VALUE_STEP))  # noqa: S101 - import-time proof
assert np.all(np.abs(UNIT_VALUES - HIGH_VALUES) <= _HIGH_STEP / 2)  # noqa: S101


def window_sums(plane: np.ndarray) -> np.ndarray:
    """Sums over every 7x7 window wholly inside a float64 [h, w, C] array: [h - 6, w - 6, C].

    Exact for the arrays :func:`window_means` makes (see the module docstring); for other inputs the sums round.
    """

    sums = cv2.boxFilter(plane, -1, (WINDOW, WINDOW), normalize=False, borderType=cv2.BORDER_REFLECT)
    if sums.ndim == 2:  # OpenCV drops a last axis of size 1
        sums = sums[:, :, None]
    return sums[PAD:-PAD, PAD:-PAD]


LocalMeans = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def window_means(gt: np.ndarray, test: np.ndarray) -> LocalMeans:
    """The local means (ux, uy, uxx, uyy, uxy) of x, y, x * x, y * y and x * y over each 7x7 window wholly inside
    two uint8 [h, w, C] crops (x from ``gt``, y from ``test``): five float64 [h - 6, w - 6, C] arrays, each the
    correctly rounded window sum divided by 49. Same floats for any crop that holds the window."""
    if gt.shape != test.shape or gt.ndim != 3 or min(gt.shape[:2]) < WINDOW:
        raise ValueError(f"ssim window means need two [h, w, C] crops of at least {WINDOW}x{WINDOW}, got "
                         f"{gt.shape} and {test.shape}")
    if gt.dtype != np.uint8 or test.dtype != np.uint8:
        raise ValueError(f"ssim window means need uint8 frames (values u / 255), got {gt.dtype} and {test.dtype}")
    x, y = np.take(UNIT_VALUES, gt), np.take(UNIT_VALUES, test)
    x_hi, y_hi = np.take(HIGH_VALUES, gt), np.take(HIGH_VALUES, test)

    def product_sums(a: np.ndarray, b: np.ndarray, a_hi: np.ndarray, b_hi: np.ndarray) -> np.ndarray:
        high = a_hi * b_hi
        low = np.subtract(a * b, high)  # exact: see the module docstring
        return np.add(window_sums(high), window_sums(low))

    n = float(WINDOW * WINDOW)
    means = (window_sums(x), window_sums(y), product_sums(x, x, x_hi, x_hi), product_sums(y, y, y_hi, y_hi),
             product_sums(x, y, x_hi, y_hi))
    ux, uy, uxx, uyy, uxy = (np.divide(m, n, out=m) for m in means)
    return ux, uy, uxx, uyy, uxy


def ssim_map(ux: np.ndarray, uy: np.ndarray, uxx: np.ndarray, uyy: np.ndarray, uxy: np.ndarray, *,
             data_range: float) -> np.ndarray:
    """The SSIM map (A1 * A2) / (B1 * B2) from the local means, scikit-image's statements in float64 (sample
    covariance); ``uxx``, ``uyy`` and ``uxy`` are overwritten."""
    n = WINDOW * WINDOW
    cov_norm = n / (n - 1)
    c1, c2 = (SSIM_K1 * data_range) ** 2, (SSIM_K2 * data_range) ** 2
    ux2, uy2 = ux * ux, uy * uy
    vx = np.multiply(np.subtract(uxx, ux2, out=uxx), cov_norm, out=uxx)  # vx = cov_norm * (uxx - ux * ux)
    vy = np.multiply(np.subtract(uyy, uy2, out=uyy), cov_norm, out=uyy)
    buf = np.multiply(ux, uy)
    vxy = np.multiply(np.subtract(uxy, buf, out=uxy), cov_norm, out=uxy)
    a1 = np.add(np.multiply(np.multiply(ux, 2, out=buf), uy, out=buf), c1, out=buf)  # 2 * ux * uy + C1
    a2 = np.add(np.multiply(vxy, 2, out=vxy), c2, out=vxy)  # 2 * vxy + C2
    b1 = np.add(np.add(ux2, uy2, out=ux2), c1, out=ux2)  # ux ** 2 + uy ** 2 + C1
    b2 = np.add(np.add(vx, vy, out=vx), c2, out=vx)  # vx + vy + C2
    return np.divide(np.multiply(a1, a2, out=a1), np.multiply(b1, b2, out=b1), out=a1)


def map_mean(part: np.ndarray, count: int) -> float:
    """SSIM of a frame from ``part`` of its map (float64 [h, w, C], holding every entry that is not 1; the rest of
    the ``count`` scored entries per channel are 1): :func:`mean_from_offsets` of its entries minus 1.

    >>> map_mean(np.ones((2, 2, 3)), 100)
    1.0
    """
    d = np.subtract(part, 1.0)
    return mean_from_offsets([plane[plane != 0] for plane in np.moveaxis(d, -1, 0)], count)


def mean_from_offsets(offsets: Sequence[np.ndarray], count: int) -> float:
    """SSIM of a frame from each channel's map entries minus 1 that are not 0, in row-major order: per channel
    1 + (their sum) / ``count`` (the scored entries), then the mean of the channels, as scikit-image averages them.
    The sum is numpy's pairwise sum of exactly those values, so the value does not depend on which part of the map
    (or which device) produced them.

    >>> mean_from_offsets([np.array([-0.5]), np.array([]), np.array([])], 10)
    0.9833333333333334
    """
    per_channel = [1.0 + float(np.sum(np.asarray(o, np.float64))) / count for o in offsets]
    return float(np.mean(np.array(per_channel, np.float64)))


__all__ = ["HIGH_VALUES", "PAD", "SSIM_K1", "SSIM_K2", "UNIT_VALUES", "WINDOW", "map_mean", "mean_from_offsets",
           "ssim_map", "window_means", "window_sums"]

"""Intervals of frame-weighted means: the ProPainter / E2FGVI table averages PSNR and SSIM over all frames
of all videos, so a video weighs by its frame count. Videos, not frames, are the independent units: the interval
resamples videos (with their frame sums and counts) and recomputes the frame-weighted mean, a seeded BCa bootstrap
as :mod:`devil_dataset.eval.stats.intervals` uses for video means.

    >>> s = frame_weighted_summary([30.0, 64.0, 99.0], [1, 2, 3])  # per-video sums of frame values, frame counts
    >>> s["n"], s["frames"], round(s["mean"], 4)
    (3, 6, 32.1667)
    >>> s["ci"][0] <= s["mean"] <= s["ci"][1]
    True
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from .intervals import BOOTSTRAP_METHOD, BOOTSTRAP_RESAMPLES, DEFAULT_LEVEL


def _ratio(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(sums, axis=axis) / np.sum(counts, axis=axis)


def _interval(sums: np.ndarray, counts: np.ndarray, level: float, seed: int) -> list[float]:
    from scipy.stats import bootstrap

    if len(sums) < 2 or not np.all(np.isfinite(sums)):
        return [float("nan"), float("nan")]
    means = sums / counts
    if np.ptp(means) == 0:
        return [float(means[0]), float(means[0])]
    for method in (BOOTSTRAP_METHOD, "percentile"):  # BCa undefined (e.g. 2 videos): the percentile interval
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = bootstrap((sums, counts), _ratio, paired=True, confidence_level=level,
                            n_resamples=BOOTSTRAP_RESAMPLES, method=method, vectorized=True,
                            random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return [lo, hi]
    return [float("nan"), float("nan")]


def frame_weighted_summary(sums: Sequence[float], counts: Sequence[int], *, level: float = DEFAULT_LEVEL,
                           seed: int = 0) -> dict[str, Any]:
    """The frame-weighted mean ``sum(sums) / sum(counts)`` of per-video frame-value ``sums`` over frame ``counts``
    (videos in a fixed order), with a seeded paired bootstrap interval over videos. A video with no frame values
    (count 0) is left out; an infinite sum gives an infinite mean and no interval.

    >>> frame_weighted_summary([5.0], [2])["ci"]
    [nan, nan]
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    s, c = np.asarray(sums, np.float64), np.asarray(counts, np.float64)
    keep = c > 0
    s, c = s[keep], c[keep]
    total = float(c.sum())
    if not total:
        mean = float("nan")
    else:  # exactly rounded sums; an infinite frame value (an identical frame's PSNR) makes the mean infinite
        mean = math.fsum(s) / total if np.all(np.isfinite(s)) else float(np.sum(s)) / total
    return {"n": int(len(s)), "frames": int(total), "mean": mean, "ci": _interval(s, c, level, seed), "level": level,
            "method": f"bootstrap {BOOTSTRAP_METHOD}, {BOOTSTRAP_RESAMPLES} resamples over videos of the "
                      f"frame-weighted mean, seed {seed}"}


__all__ = ["frame_weighted_summary"]

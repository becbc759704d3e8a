"""Frame-weighted means and their bootstrap intervals over videos."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.stats.frame_weighted import frame_weighted_summary


def test_mean_weighs_videos_by_frames_and_the_interval_resamples_videos():
    rng = np.random.default_rng(0)
    counts = rng.integers(25, 105, 20)
    means = rng.normal(30, 2, 20) + (counts > 60) * 3.0  # long videos score higher: weighting matters
    s = frame_weighted_summary(means * counts, counts)
    assert s["mean"] == pytest.approx(np.sum(means * counts) / np.sum(counts), abs=1e-12)
    assert abs(s["mean"] - means.mean()) > 0.1
    assert s["n"] == 20 and s["frames"] == int(counts.sum())
    lo, hi = s["ci"]
    assert lo < s["mean"] < hi and hi - lo < 4
    assert frame_weighted_summary(means * counts, counts) == s  # seeded: the same interval


def test_degenerate_inputs():
    assert frame_weighted_summary([6.0, 9.0], [2, 3])["ci"] == [3.0, 3.0]
    assert frame_weighted_summary([float("inf"), 3.0], [1, 1])["mean"] == float("inf")
    empty = frame_weighted_summary([0.0], [0])
    assert empty["n"] == 0 and np.isnan(empty["mean"])
    with pytest.raises(ValueError):
        frame_weighted_summary([1.0], [1], level=1.5)

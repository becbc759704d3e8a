"""Mask statistics: exact values on synthetic masks, and separation of the presets on release masks."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.cover_crop import cover_crop_mask
from devil_dataset.core.mask_stats import MaskStats, centroids, mask_stats, shifted_intersection, summarize
from devil_dataset.core.mask_store import stored_mask
from devil_dataset.core.masks import PRESETS, mask_seed, render_mask

DIAG = math.hypot(832, 480)


def _square_track(offsets, side=60):
    hole = np.zeros((len(offsets), 480, 832), bool)
    for t, (dx, dy) in enumerate(offsets):
        x0, y0 = 200 + dx, 100 + dy
        hole[t, max(y0, 0) : max(y0 + side, 0), max(x0, 0) : max(x0 + side, 0)] = True  # clipped at the border
    return hole


def test_translation_has_displacement_but_no_pose_motion():
    s = mask_stats(_square_track([(0, 0), (12, 5), (24, 10), (24, 10)]))
    assert s.pose_motion == 0.0
    assert s.centroid_speed == pytest.approx((13 + 13 + 0) / 3 / DIAG)
    assert s.centroid_path == pytest.approx(26 / DIAG)
    assert s.mean_area == pytest.approx(3600 / (832 * 480))
    inter = 48 * 55  # overlap of two 60 px squares offset by (12, 5)
    assert s.consecutive_iou == pytest.approx((2 * inter / (7200 - inter) + 1) / 3)
    union = np.zeros((480, 832), bool)
    for dx, dy in [(0, 0), (12, 5), (24, 10)]:
        union[100 + dy : 160 + dy, 200 + dx : 260 + dx] = True
    assert s.union_coverage == pytest.approx(union.mean())
    assert (s.num_frames, s.width, s.height, s.empty_frames) == (4, 832, 480, 0)


def test_shape_change_is_pose_motion():
    hole = np.zeros((2, 480, 832), bool)
    hole[0, 100:160, 100:160] = True      # 60x60 square
    hole[1, 85:175, 110:150] = True       # 40x90 bar, same centroid
    s = mask_stats(hole)
    assert s.centroid_speed == pytest.approx(0.0)
    inter = 40 * 60
    assert s.pose_motion == pytest.approx(1 - inter / (3600 + 3600 - inter))


def test_statistics_survive_the_frame_border_and_time_reversal():
    # A blob sliding out of the left border: sets are compared, so no pixels are lost by the alignment shift.
    hole = _square_track([(-190, 0), (-210, 0), (-230, 0)])
    assert hole[2].sum() == 30 * 60
    s, r = mask_stats(hole), mask_stats(hole[::-1])
    for name in ("mean_area", "centroid_speed", "centroid_path", "pose_motion", "consecutive_iou", "union_coverage"):
        assert getattr(s, name) == pytest.approx(getattr(r, name), abs=1e-12), name


def test_empty_frames_are_skipped():
    hole = _square_track([(0, 0), (0, 0), (0, 0)])
    hole[1] = False
    s = mask_stats(hole)
    assert s.empty_frames == 1 and math.isnan(s.pose_motion) and math.isnan(s.centroid_speed)
    assert np.isnan(centroids(hole)[1]).all()


def test_shifted_intersection_and_input_checks():
    a = np.zeros((5, 5), bool)
    a[2, 2] = True
    b = np.zeros((5, 5), bool)
    b[0, 4] = True
    assert shifted_intersection(a, b, -2, 2) == 1 and shifted_intersection(a, b, 2, -2) == 0
    assert shifted_intersection(a, b, 9, 0) == 0
    with pytest.raises(ValueError, match="T, H, W"):
        mask_stats(np.zeros((480, 832), bool))


def test_full_resolution_masks_are_cover_cropped_first():
    hole = render_mask("fgs-h_fgm-l_fgd-l", mask_seed(1), num_frames=3)
    assert mask_stats(hole) == mask_stats(cover_crop_mask(hole))


def test_to_dict_round_trip_and_summary():
    s = mask_stats(_square_track([(0, 0), (3, 4)]))
    assert MaskStats.from_dict(s.to_dict()) == s
    summary = summarize([s, s])
    assert summary["mean_area"]["median"] == pytest.approx(s.mean_area) and summary["mean_area"]["n"] == 2


# --- separation of the presets on the release's masks --------------------------------------------------------
# Measured with 20 masks per preset at 90 frames (docs/masks.md): medians fgs-h / fgs-l area 3.9x,
# fgd-h / fgd-l centroid speed 4.2x, fgm-h / fgm-l pose motion 3.9x; P(high > low) 1.00, 0.999, 0.965.


def _stats_by_preset(count: int, num_frames: int) -> dict[str, list[MaskStats]]:
    return {p: [mask_stats(stored_mask(p, i, num_frames=num_frames)) for i in range(count)] for p in PRESETS}


def _group(stats: dict[str, list[MaskStats]], setting: str, name: str) -> np.ndarray:
    return np.array([getattr(s, name) for p, group in stats.items() if setting in p.split("_") for s in group])


def _check_separation(stats, *, min_ratio: float, min_auc: float) -> dict:
    report = {}
    for attr, name in (("fgs", "mean_area"), ("fgd", "centroid_speed"), ("fgm", "pose_motion")):
        low, high = _group(stats, f"{attr}-l", name), _group(stats, f"{attr}-h", name)
        ratio = np.median(high) / np.median(low)
        auc = float((high[:, None] > low[None, :]).mean())  # probability that a high mask exceeds a low one
        report[attr] = (ratio, auc)
        assert ratio >= min_ratio, f"{attr}: median {name} high/low = {ratio:.2f} < {min_ratio}"
        assert auc >= min_auc, f"{attr}: P({attr}-h > {attr}-l) on {name} = {auc:.3f} < {min_auc}"
    return report


@pytest.fixture(scope="module")
def mask_stats_small():
    return _stats_by_preset(count=5, num_frames=30)


def test_presets_separate_quick(mask_stats_small):
    """Default variant: 5 masks per preset (20 per setting), first 30 frames; margins 2x and 85%."""
    _check_separation(mask_stats_small, min_ratio=2.0, min_auc=0.85)


@pytest.mark.slow
def test_presets_separate_release_masks():
    """Slow (~30-60 s): 20 release masks per preset at 1920x1080, 90 frames, cover-cropped to 832x480.

    Margins: median ratio >= 2.5 and P(high > low) >= 0.9 per attribute over all presets, and for every pair
    of presets differing only in that attribute the high preset's median is at least 2x the low one's."""
    stats = _stats_by_preset(count=20, num_frames=90)
    _check_separation(stats, min_ratio=2.5, min_auc=0.9)
    for attr, name in (("fgs", "mean_area"), ("fgd", "centroid_speed"), ("fgm", "pose_motion")):
        for low in (p for p in PRESETS if f"{attr}-l" in p.split("_")):
            high = low.replace(f"{attr}-l", f"{attr}-h")
            medians = [np.median([getattr(s, name) for s in stats[p]]) for p in (low, high)]
            ratio = medians[1] / medians[0]
            assert ratio >= 2.0, f"{low} -> {high}: median {name} ratio {ratio:.2f}"

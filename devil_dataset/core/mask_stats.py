"""Measured statistics of one occlusion mask, so a user can check that a preset's labels hold per mask.

All statistics are measured on the mask as the benchmark uses it: cover-cropped to 832x480
(:func:`devil_dataset.core.cover_crop.cover_crop_mask`; :func:`mask_stats` does it when given a 1920x1080 mask).
Lengths are relative to the frame diagonal (sqrt(832**2 + 480**2) = 960.5 px), areas to the frame area.

- ``mean_area``: mean over frames of the hole fraction (foreground size, fgs).
- ``centroid_speed`` / ``centroid_path``: per-frame displacement of the hole centroid, its mean over consecutive
  frame pairs and its sum over the clip (foreground displacement, fgd).
- ``pose_motion``: mean over consecutive pairs of 1 - IoU after translating frame t+1 by the rounded centroid
  offset onto frame t (shape change with the displacement removed: foreground pose motion, fgm). Pixels are
  treated as sets, so nothing is lost at the frame border and the value does not change under time reversal.
- ``consecutive_iou``: mean IoU of consecutive frames without alignment (low for fast or deforming masks).
- ``union_coverage``: fraction of pixels that are a hole in at least one frame.

Pairs with an empty frame are skipped (``empty_frames`` counts empty frames); ``nan`` when no pair is left.

    >>> import numpy as np
    >>> hole = np.zeros((3, 480, 832), bool)
    >>> for t in range(3):
    ...     hole[t, 100:200, 100 + 10 * t:200 + 10 * t] = True
    >>> s = mask_stats(hole)
    >>> round(s.mean_area, 4), round(s.pose_motion, 6), round(s.centroid_speed * 960.5, 1)
    (0.025, 0.0, 10.0)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .cover_crop import cover_crop_mask
from .slices import EVAL_SIZE


@dataclass(frozen=True)
class MaskStats:
    """Statistics of one mask (see the module docstring for the definitions)."""

    num_frames: int
    width: int
    height: int
    mean_area: float
    centroid_speed: float
    centroid_path: float
    pose_motion: float
    consecutive_iou: float
    union_coverage: float
    empty_frames: int

    def to_dict(self) -> dict[str, float | int]:
        """Plain dict (JSON-ready; nan stays a float).

        >>> MaskStats(1, 2, 2, 0.5, 0.0, 0.0, 0.0, 1.0, 0.5, 0).to_dict()["mean_area"]
        0.5
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "MaskStats":
        """Inverse of :meth:`to_dict` (unknown keys are an error)."""
        return cls(**data)


STAT_NAMES: tuple[str, ...] = ("mean_area", "centroid_speed", "centroid_path", "pose_motion", "consecutive_iou",
                               "union_coverage")


def _projections(hole: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame hole counts per column [T, W] and per row [T, H] (uint8 sums: ~5x faster than bool sums)."""
    u8 = np.ascontiguousarray(hole).view(np.uint8)
    acc = np.uint16 if max(hole.shape[1:]) < 2**16 else np.int64
    return u8.sum(axis=1, dtype=acc).astype(np.int64), u8.sum(axis=2, dtype=acc).astype(np.int64)


def hole_areas(hole: np.ndarray) -> np.ndarray:
    """Per-frame hole pixel counts of a bool mask [T, H, W]."""
    return _projections(hole)[1].sum(axis=1)


def centroids(hole: np.ndarray) -> np.ndarray:
    """Per-frame hole centroids (x, y) in pixels, float [T, 2]; nan for an empty frame.

        >>> h = np.zeros((1, 4, 6), bool); h[0, 1:3, 2:4] = True
        >>> centroids(h).tolist()
        [[2.5, 1.5]]
    """
    return _centroids(*_projections(hole))


def _centroids(cols: np.ndarray, rows: np.ndarray) -> np.ndarray:
    area = rows.sum(axis=1).astype(np.float64)
    cx = cols @ np.arange(cols.shape[1], dtype=np.float64)
    cy = rows @ np.arange(rows.shape[1], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([cx / area, cy / area], axis=1)


def shifted_intersection(a: np.ndarray, b: np.ndarray, dx: int, dy: int) -> int:
    """``|a ∩ (b shifted by (dx, dy))|`` for bool [H, W] frames, pixels as sets (nothing wraps around).

        >>> a = np.zeros((4, 4), bool); a[1, 1] = True
        >>> b = np.zeros((4, 4), bool); b[0, 0] = True
        >>> shifted_intersection(a, b, 1, 1)
        1
    """
    h, w = a.shape
    if abs(dx) >= w or abs(dy) >= h:
        return 0
    a_win = a[max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)]
    b_win = b[max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)]
    return int(np.count_nonzero(a_win & b_win))


def mask_stats(hole: np.ndarray, *, size: tuple[int, int] = EVAL_SIZE) -> MaskStats:
    """Statistics of a bool hole mask [T, H, W]; a mask of another size is cover-cropped to ``size`` first.

        >>> mask_stats(np.ones((2, 480, 832), bool)).union_coverage
        1.0
    """
    hole = np.asarray(hole, dtype=bool)
    if hole.ndim != 3 or len(hole) == 0:
        raise ValueError(f"expected a bool mask [T, H, W] with T >= 1, got shape {hole.shape}")
    if hole.shape[1:] != (size[1], size[0]):
        hole = cover_crop_mask(hole, size)
    t, h, w = hole.shape
    diag = math.hypot(w, h)
    cols, rows = _projections(hole)
    areas = rows.sum(axis=1)
    cent = _centroids(cols, rows)
    speeds, pose, ious = [], [], []
    for k in range(t - 1):
        if areas[k] == 0 or areas[k + 1] == 0:
            continue
        offset = cent[k + 1] - cent[k]
        speeds.append(math.hypot(*offset) / diag)
        a, b = hole[k], hole[k + 1]
        inter = np.count_nonzero(a & b)
        ious.append(inter / (areas[k] + areas[k + 1] - inter))
        dx, dy = (int(v) for v in np.round(-offset))  # move frame k+1 onto frame k
        aligned = shifted_intersection(a, b, dx, dy)
        pose.append(1.0 - aligned / (areas[k] + areas[k + 1] - aligned))
    nan = float("nan")
    return MaskStats(
        num_frames=t, width=w, height=h,
        mean_area=float(areas.mean() / (h * w)),
        centroid_speed=float(np.mean(speeds)) if speeds else nan,
        centroid_path=float(np.sum(speeds)) if speeds else nan,
        pose_motion=float(np.mean(pose)) if pose else nan,
        consecutive_iou=float(np.mean(ious)) if ious else nan,
        union_coverage=float(np.count_nonzero(hole.any(axis=0)) / (h * w)),
        empty_frames=int(np.count_nonzero(areas == 0)),
    )


def summarize(stats: list[MaskStats]) -> dict[str, dict[str, float]]:
    """Median and interquartile range of each statistic over several masks (nan values ignored).

        >>> s = [MaskStats(2, 4, 4, a, 0.0, 0.0, 0.0, 1.0, a, 0) for a in (0.1, 0.2, 0.3)]
        >>> summarize(s)["mean_area"]["median"]
        0.2
    """
    out: dict[str, dict[str, float]] = {}
    for name in STAT_NAMES:
        values = np.array([getattr(s, name) for s in stats], dtype=np.float64)
        values = values[~np.isnan(values)]
        if len(values) == 0:
            out[name] = {"median": float("nan"), "q25": float("nan"), "q75": float("nan"), "n": 0}
            continue
        q25, med, q75 = np.percentile(values, [25, 50, 75])
        out[name] = {"median": float(med), "q25": float(q25), "q75": float(q75), "n": int(len(values))}
    return out

"""The bounding box of a hole, and copies restricted to it.

Scoring and inpainting touch only the hole of each frame; working inside the hole's bounding box instead of the
whole frame gives the same arrays for a fraction of the memory traffic.

    >>> import numpy as np
    >>> hole = np.zeros((4, 5), bool); hole[1:3, 2] = True
    >>> hole_window(hole)
    (slice(1, 3, None), slice(2, 3, None))
    >>> frame = np.zeros((4, 5, 3), np.uint8)
    >>> paste_in_hole(frame, 7, hole)
    >>> int(frame.sum()), int(frame[1, 2, 0])
    (42, 7)
"""
from __future__ import annotations

import numpy as np


def hole_window(hole: np.ndarray) -> tuple[slice, slice] | None:
    """The (rows, columns) slices of the bounding box of a bool [H, W] hole; None when it has no pixel."""
    rows = np.flatnonzero(hole.any(axis=1))
    if len(rows) == 0:
        return None
    cols = np.flatnonzero(hole.any(axis=0))
    return slice(int(rows[0]), int(rows[-1]) + 1), slice(int(cols[0]), int(cols[-1]) + 1)


def paste_in_hole(frame: np.ndarray, source: np.ndarray | int, hole: np.ndarray) -> None:
    """``frame[hole] = source[hole]`` in place (``source`` a frame of the same shape, or a scalar), touching only
    the hole's bounding box. ``frame`` is [H, W, C], ``hole`` bool [H, W]."""
    window = hole_window(hole)
    if window is None:
        return
    part = source[window] if isinstance(source, np.ndarray) else source
    np.copyto(frame[window], part, where=hole[window][..., None])


__all__ = ["hole_window", "paste_in_hole"]

"""A minimal "your own method" for `devil benchmark --callable docs/examples/temporal_median.py:inpaint`.

Each hole pixel gets the median of the same pixel in the frames where it is known; pixels never known get the
nearest known colour of their frame (OpenCV's Telea). The contract: uint8 frames [T, H, W, 3] and a bool hole
[T, H, W] (True = hole) in, uint8 frames [T, H, W, 3] out; hole pixels of the input must not be read.

    >>> import numpy as np
    >>> frames = np.full((3, 8, 8, 3), 100, np.uint8); hole = np.zeros((3, 8, 8), bool); hole[1, 2:5, 2:5] = True
    >>> out = inpaint(frames, hole)
    >>> int(out[1, 3, 3, 0]), out.dtype.name
    (100, 'uint8')
"""
from __future__ import annotations

import warnings

import cv2
import numpy as np


def inpaint(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Temporal median of the known values per pixel, Telea where a pixel is never known."""
    known = np.where(hole[..., None], np.nan, frames.astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": a pixel that is a hole in every frame
        median = np.nanmedian(known, axis=0)  # [H, W, 3]; NaN where the pixel is a hole in every frame
    out = frames.copy()
    for t in range(len(frames)):
        fill = hole[t] & ~np.isnan(median[..., 0])
        out[t][fill] = np.round(median[fill]).astype(np.uint8)
        rest = hole[t] & ~fill
        if rest.any():
            out[t] = cv2.inpaint(out[t], rest.astype(np.uint8), 3, cv2.INPAINT_TELEA)
    return out

"""Per-frame spatial inpainting with OpenCV: Telea (fast marching) and Navier-Stokes.

Each frame is filled on its own from its known pixels; no other frame is used. These are the benchmark's
per-frame baselines and the spatial fallback of the temporal methods.

    >>> import numpy as np
    >>> frames = np.full((2, 32, 32, 3), 100, np.uint8)
    >>> hole = np.zeros((2, 32, 32), bool); hole[:, 10:20, 10:20] = True
    >>> out = telea(frames, hole)
    >>> out.shape, out.dtype, int(out[0, 15, 15, 0])
    ((2, 32, 32, 3), dtype('uint8'), 100)
"""
from __future__ import annotations

import cv2
import numpy as np

from ..core.hole_box import hole_window, paste_in_hole

# Neighbourhood radius (pixels) of cv2.inpaint; 3 is OpenCV's documented example value.
INPAINT_RADIUS = 3
# Value given to a frame with no known pixel at all (nothing to fill from): mid grey.
EMPTY_FRAME_VALUE = 128
_FLAGS = {"telea": cv2.INPAINT_TELEA, "navier-stokes": cv2.INPAINT_NS}
# cv2.inpaint (both methods) reads and writes only pixels within INPAINT_RADIUS + 2 of the hole (its bands, the
# radius-3 neighbourhood and the gradients beside it; OpenCV's photo/src/inpaint.cpp), so it runs on the hole's
# bounding box grown by this many pixels (clipped to the frame): the same bytes as the whole frame (checked on
# 300 frames of the sample, margins 5 to 12), without its whole-frame passes.
INPAINT_WINDOW_MARGIN = 4 * INPAINT_RADIUS


def check_inputs(frames: np.ndarray, hole: np.ndarray) -> None:
    """Raise ``ValueError`` unless frames are uint8 [T, H, W, 3] and hole is bool [T, H, W] of the same size."""
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"frames must be uint8 [T, H, W, 3], got {frames.dtype} {frames.shape}")
    if hole.dtype != bool or hole.shape != frames.shape[:3]:
        raise ValueError(f"hole must be bool {frames.shape[:3]}, got {hole.dtype} {hole.shape}")


def blank_hole(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """A copy of ``frames`` with hole pixels set to 0, so a method provably never reads them.

    >>> import numpy as np
    >>> int(blank_hole(np.full((1, 2, 2, 3), 9, np.uint8), np.ones((1, 2, 2), bool)).max())
    0
    """
    out = frames.copy()
    for frame, m in zip(out, hole):
        paste_in_hole(frame, 0, m)
    return out


def inpaint_frame(frame: np.ndarray, hole: np.ndarray, method: str = "telea") -> np.ndarray:
    """Fill the True pixels of ``hole`` [H, W] in one uint8 RGB frame [H, W, 3]; other pixels are kept exactly."""
    box = hole_window(hole)
    if box is None:
        return frame.copy()
    if hole.all():
        return np.full_like(frame, EMPTY_FRAME_VALUE)
    (h, w), m = hole.shape, INPAINT_WINDOW_MARGIN
    rows = slice(max(0, box[0].start - m), min(h, box[0].stop + m))
    cols = slice(max(0, box[1].start - m), min(w, box[1].stop + m))
    part = np.ascontiguousarray(hole[rows, cols], dtype=bool)
    filled = cv2.inpaint(np.ascontiguousarray(frame[rows, cols]), part.view(np.uint8), INPAINT_RADIUS,
                         _FLAGS[method])
    out = frame.copy()
    paste_in_hole(out[rows, cols], filled, part)
    return out


def _spatial(frames: np.ndarray, hole: np.ndarray, method: str) -> np.ndarray:
    check_inputs(frames, hole)
    frames = blank_hole(frames, hole)
    return np.stack([inpaint_frame(f, m, method) for f, m in zip(frames, hole)]) if len(frames) else frames


def telea(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Per-frame OpenCV Telea inpainting of uint8 [T, H, W, 3] frames under a bool [T, H, W] hole (True = hole)."""
    return _spatial(frames, hole, "telea")


def navier_stokes(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Per-frame OpenCV Navier-Stokes inpainting (same contract as :func:`telea`)."""
    return _spatial(frames, hole, "navier-stokes")

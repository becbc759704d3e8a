"""The release's mirror padding for methods that need frame sizes divisible by a number.

Frames and masks are padded symmetrically (``numpy.pad`` mode ``symmetric``: the edge row is repeated) up to the
next multiple of the divisor; the left pad is ``total // 2`` and the rest goes right, the same vertically (top,
bottom). The prediction is cropped back to the original size.

    >>> import numpy as np
    >>> frames = np.zeros((2, 30, 50, 3), np.uint8); hole = np.zeros((2, 30, 50), bool)
    >>> pf, ph, info = pad_to_multiple(frames, hole, 8)
    >>> pf.shape, (info.top, info.bottom, info.left, info.right)
    ((2, 32, 56, 3), (1, 1, 3, 3))
    >>> crop_padding(pf, info).shape
    (2, 30, 50, 3)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

import numpy as np

from .contract import Inpainter


@dataclass(frozen=True)
class PadInfo:
    """Pixels added on each side, and the original (unpadded) height and width."""

    top: int
    bottom: int
    left: int
    right: int
    height: int
    width: int


def _split(size: int, divisor: int) -> tuple[int, int]:
    # The release's metrics: left = total // 2, the rest right.
    total = -size % divisor
    return total // 2, total - total // 2


def pad_to_multiple(frames: np.ndarray, hole: np.ndarray, divisor: int) -> tuple[np.ndarray, np.ndarray, PadInfo]:
    """Mirror-pad frames [T, H, W, C] and hole [T, H, W] so H and W are multiples of ``divisor``."""
    if divisor < 1:
        raise ValueError(f"size divisor must be >= 1, got {divisor}")
    if frames.shape[:3] != hole.shape:
        raise ValueError(f"frames {frames.shape} and hole {hole.shape} differ in size")
    h, w = hole.shape[1:]
    top, bottom = _split(h, divisor)
    left, right = _split(w, divisor)
    spatial = ((0, 0), (top, bottom), (left, right))
    padded_frames = np.pad(frames, spatial + ((0, 0),) * (frames.ndim - 3), mode="symmetric")
    padded_hole = np.pad(hole, spatial, mode="symmetric")
    return padded_frames, padded_hole, PadInfo(top, bottom, left, right, h, w)


def crop_padding(pred: np.ndarray, info: PadInfo) -> np.ndarray:
    """Crop a padded prediction [T, H', W', ...] back to the original size recorded in ``info``."""
    expected = (info.height + info.top + info.bottom, info.width + info.left + info.right)
    if tuple(pred.shape[1:3]) != expected:
        raise ValueError(f"prediction is {pred.shape[2]}x{pred.shape[1]}, "
                         f"expected the padded {expected[1]}x{expected[0]}")
    return pred[:, info.top : info.top + info.height, info.left : info.left + info.width]


def divisor_safe(inpainter: Inpainter, divisor: int) -> Inpainter:
    """Wrap an inpainter so it sees frames padded to multiples of ``divisor`` and returns the original size.

    >>> import numpy as np
    >>> seen = []
    >>> f = divisor_safe(lambda fr, h: (seen.append(fr.shape), fr)[1], 16)
    >>> f(np.zeros((1, 30, 50, 3), np.uint8), np.zeros((1, 30, 50), bool)).shape, seen
    ((1, 30, 50, 3), [(1, 32, 64, 3)])
    """

    @wraps(inpainter)
    def padded(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
        padded_frames, padded_hole, info = pad_to_multiple(frames, hole, divisor)
        return np.ascontiguousarray(crop_padding(np.asarray(inpainter(padded_frames, padded_hole)), info))

    return padded

"""Cover-crop to the evaluation size (the release's slices): resize so the target is covered, then centre-crop.

1920x1080 -> scale max(832/1920, 480/1080) -> 854x480 -> crop 11 px from the left -> 832x480.
Frames use antialiased bicubic resampling (Pillow), masks nearest neighbour.

    >>> import numpy as np
    >>> cover_crop_geometry((1920, 1080), (832, 480))
    ((854, 480), (11, 0))
    >>> cover_crop_mask(np.zeros((2, 1080, 1920), bool)).shape
    (2, 480, 832)
"""
from __future__ import annotations

import numpy as np
from PIL import Image

# The release's slices: evaluation resolution (width, height) after cover-cropping.
EVAL_SIZE: tuple[int, int] = (832, 480)


def cover_crop_geometry(src_size: tuple[int, int],
                        dst_size: tuple[int, int] = EVAL_SIZE) -> tuple[tuple[int, int], tuple[int, int]]:
    """Return ``((resized_w, resized_h), (left, top))`` for cover-cropping ``src_size`` (W, H) to ``dst_size``.

    The axis that limits the scale gets the target length exactly; the other is rounded up (exact integer
    arithmetic), which gives the release's 854x480 for 1920x1080 (the release's slices; rounding would give 853).
    """
    (sw, sh), (dw, dh) = src_size, dst_size
    if dh * sw >= dw * sh:  # scale = dh / sh >= dw / sw: the height fits exactly
        rw, rh = max(dw, -(-sw * dh // sh)), dh
    else:
        rw, rh = dw, max(dh, -(-sh * dw // sw))
    return (rw, rh), ((rw - dw) // 2, (rh - dh) // 2)


def _nearest_index(n_in: int, n_out: int) -> np.ndarray:
    """Source indices Pillow's NEAREST resize reads: it accumulates ``n_in / n_out`` from half a step in float64
    (``ImagingScaleAffine``), so ``cumsum`` (sequential) reproduces its rounding, which a closed form can miss."""
    step = n_in / n_out
    steps = np.full(n_out, step)
    steps[0] = step * 0.5
    return np.minimum(np.cumsum(steps).astype(np.int64), n_in - 1)


def cover_crop_frame(frame: np.ndarray, size: tuple[int, int] = EVAL_SIZE) -> np.ndarray:
    """Cover-crop one uint8 RGB frame [H, W, 3] with antialiased bicubic resampling."""
    h, w = frame.shape[:2]
    (rw, rh), (left, top) = cover_crop_geometry((w, h), size)
    if (rw, rh) != (w, h):
        frame = np.asarray(Image.fromarray(frame).resize((rw, rh), Image.Resampling.BICUBIC))
    return np.ascontiguousarray(frame[top : top + size[1], left : left + size[0]])


def cover_crop_frames(frames: np.ndarray, size: tuple[int, int] = EVAL_SIZE) -> np.ndarray:
    """Cover-crop uint8 RGB frames [T, H, W, 3]."""
    return np.stack([cover_crop_frame(f, size) for f in frames]) if len(frames) else frames


def cover_crop_mask(mask: np.ndarray, size: tuple[int, int] = EVAL_SIZE) -> np.ndarray:
    """Cover-crop a bool mask [T, H, W] (or [H, W]) with nearest-neighbour resampling (Pillow's NEAREST)."""
    h, w = mask.shape[-2:]
    (rw, rh), (left, top) = cover_crop_geometry((w, h), size)
    if (rw, rh) != (w, h):
        # The pixels Pillow's NEAREST resize picks (see _nearest_index); the same index table for every frame.
        xs, ys = _nearest_index(w, rw), _nearest_index(h, rh)
        xs, ys = xs[left : left + size[0]], ys[top : top + size[1]]
        return np.ascontiguousarray(mask[..., ys, :][..., xs])  # rows first: ~4x faster than one 2-D gather
    return np.ascontiguousarray(mask[..., top : top + size[1], left : left + size[0]])

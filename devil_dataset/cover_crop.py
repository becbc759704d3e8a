"""Cover-crop to the evaluation size (SPEC section 6): resize so the target is covered, then centre-crop.

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

from .slices import EVAL_SIZE


def cover_crop_geometry(src_size: tuple[int, int], dst_size: tuple[int, int] = EVAL_SIZE) -> tuple[tuple[int, int], tuple[int, int]]:
    """Return ``((resized_w, resized_h), (left, top))`` for cover-cropping ``src_size`` (W, H) to ``dst_size``."""
    (sw, sh), (dw, dh) = src_size, dst_size
    scale = max(dw / sw, dh / sh)
    rw, rh = max(dw, round(sw * scale)), max(dh, round(sh * scale))
    return (rw, rh), ((rw - dw) // 2, (rh - dh) // 2)



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
        # Pillow NEAREST picks source index floor((x + 0.5) * w / rw); the same index table for every frame.
        xs = np.minimum(((np.arange(rw) + 0.5) * (w / rw)).astype(np.int64), w - 1)
        ys = np.minimum(((np.arange(rh) + 0.5) * (h / rh)).astype(np.int64), h - 1)
        xs, ys = xs[left : left + size[0]], ys[top : top + size[1]]
        return np.ascontiguousarray(mask[..., ys[:, None], xs[None, :]])
    return np.ascontiguousarray(mask[..., top : top + size[1], left : left + size[0]])

"""The composite the release scores: the prediction inside the hole, the ground truth outside.

    >>> import numpy as np
    >>> gt = np.zeros((1, 2, 2, 3), np.uint8); hole = np.zeros((1, 2, 2), bool); hole[0, 0, 0] = True
    >>> composite(np.full_like(gt, 7), gt, hole)[0, :, :, 0].tolist()
    [[7, 0], [0, 0]]
"""
from __future__ import annotations

import numpy as np

from ...core.errors import InvalidInputError
from ...core.hole_box import paste_in_hole


def composite(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """C = M*GT + (1-M)*Pred with M = ~hole (the release's metrics), exact: ``np.where(hole[..., None], pred, gt)``,
    copying ``pred`` only inside each frame's bounding box of the hole (the same array, about twice as fast).

    ``pred`` and ``gt`` are frames [T, H, W, C] of one shape and dtype, ``hole`` bool [T, H, W] (True = hole);
    anything else is an :class:`~devil_dataset.core.errors.InvalidInputError` naming the shapes and dtypes.

    >>> gt = np.zeros((1, 2, 3, 3), np.uint8); hole = np.zeros((1, 2, 3), bool); hole[0, 1, 2] = True
    >>> composite(np.full_like(gt, 9), gt, hole)[0, :, :, 0].tolist()
    [[0, 0, 0], [0, 0, 9]]
    >>> composite(gt[:, :1], gt, hole)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.InvalidInputError: composite: shape mismatch: pred (1, 1, 3, 3), gt (1, 2, 3, 3), ...
    """
    if pred.shape != gt.shape or gt.ndim != 4 or hole.shape != gt.shape[:3]:
        raise InvalidInputError(f"composite: shape mismatch: pred {pred.shape}, gt {gt.shape}, hole {hole.shape}; "
                                "expected pred and gt [T, H, W, C] of one shape, hole [T, H, W]")
    if pred.dtype != gt.dtype or hole.dtype != bool:
        raise InvalidInputError(f"composite: dtype mismatch: pred {pred.dtype}, gt {gt.dtype}, hole {hole.dtype}; "
                                "expected pred and gt of one dtype, hole bool")
    out = gt.copy()
    for frame, source, m in zip(out, pred, hole):
        paste_in_hole(frame, source, m)
    return out


__all__ = ["composite"]

"""The inpainter contract every method of the package follows (baselines, external commands, callables).

An *inpainter* is a callable ``(frames uint8 [T, H, W, 3], hole bool [T, H, W], True = hole) -> uint8
[T, H, W, 3]``; the baselines never read hole pixels and return known pixels unchanged.

    >>> import numpy as np
    >>> keep: Inpainter = lambda frames, hole: frames
    >>> keep(np.zeros((1, 2, 2, 3), np.uint8), np.zeros((1, 2, 2), bool)).shape
    (1, 2, 2, 3)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

# The inpainter contract: (frames uint8 [T, H, W, 3], hole bool [T, H, W], True = hole) -> uint8 [T, H, W, 3].
Inpainter = Callable[[np.ndarray, np.ndarray], np.ndarray]

__all__ = ["Inpainter"]

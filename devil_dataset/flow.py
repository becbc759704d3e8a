"""Dense optical flow shared by scene-motion scoring, warp error, fidelity metrics and the flow baseline.

OpenCV DIS is the default (no weights needed). RAFT (torchvision) is used where its weights are present.

    >>> import numpy as np
    >>> a = np.zeros((64, 64, 3), np.uint8); a[20:40, 20:40] = 255
    >>> dis_flow(a, a).shape
    (64, 64, 2)
"""
from __future__ import annotations

import cv2
import numpy as np

# DIS preset: MEDIUM is OpenCV's balance of speed and accuracy; named once here.
DIS_PRESET = cv2.DISOPTICAL_FLOW_PRESET_MEDIUM


def _gray(frame: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) if frame.ndim == 3 else frame


def dis_flow(frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
    """Flow [H, W, 2] (dx, dy) from uint8 RGB ``frame0`` to ``frame1`` with OpenCV DIS: frame0(p) ~ frame1(p + flow(p))."""
    dis = cv2.DISOpticalFlow_create(DIS_PRESET)
    return dis.calc(_gray(frame0), _gray(frame1), None)

"""The content hash of a clip's frames or hole: what the ground-truth cache keys on and a prepared state remembers.

    >>> import numpy as np
    >>> a = np.zeros((2, 4, 4, 3), np.uint8)
    >>> clip_content_hash(a) == clip_content_hash(a.copy()), clip_content_hash(a) == clip_content_hash(a[:1])
    (True, False)
"""
from __future__ import annotations

import hashlib

import numpy as np


def clip_content_hash(gt: np.ndarray) -> str:
    """sha256 of an array (a clip's frames, a hole): dtype, shape and bytes (C order)."""
    arr = np.ascontiguousarray(gt)
    h = hashlib.sha256(f"{arr.dtype.str}{arr.shape}".encode())
    h.update(arr.data.cast("B") if arr.size else b"")
    return h.hexdigest()


__all__ = ["clip_content_hash"]

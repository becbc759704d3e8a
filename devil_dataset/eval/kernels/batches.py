"""Fixed slices of a sequence (frames, pairs, windows) for the kernels that work a batch at a time.

    >>> list(frame_batches(5, 2))
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
"""
from __future__ import annotations

from typing import Iterator


def frame_batches(n: int, size: int) -> Iterator[slice]:
    """Slices of ``range(n)`` of at most ``size`` items (``size`` below 1 counts as 1).

    >>> list(frame_batches(3, 0))
    [slice(0, 1, None), slice(1, 2, None), slice(2, 3, None)]
    """
    size = max(1, int(size))
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


__all__ = ["frame_batches"]

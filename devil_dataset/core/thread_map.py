"""Map a function over items on threads of this process, results in the items' order (whatever the thread count).

The motion labellers spread one clip's frames and frame pairs over the cores this way: their work is OpenCV and
numpy calls that release the GIL (SIFT, the matcher's matrix products, RANSAC, warps, DIS flow), and every item is a
pure function of its inputs, so the results are the same with any number of threads (``tests/builder``). Each
worker thread follows the process's OpenCV pin first (:func:`devil_dataset.core.cv_determinism.follow_opencv_pin`:
IPP is switched per thread).

    >>> thread_map(lambda x: x * x, range(5), threads=2)
    [0, 1, 4, 9, 16]
    >>> default_threads() >= 1
    True
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

from .cv_determinism import follow_opencv_pin

T = TypeVar("T")
R = TypeVar("R")


def default_threads() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it, else the CPU count).

    >>> isinstance(default_threads(), int)
    True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    count = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, count)


def thread_map(fn: Callable[[T], R], items: Iterable[T], *, threads: int) -> list[R]:
    """``[fn(x) for x in items]`` computed on up to ``threads`` threads (in this thread when 1 or one item).

    An exception raised by ``fn`` is raised here (the first in item order).

    >>> thread_map(str, [3, 1, 2], threads=1)
    ['3', '1', '2']
    """
    todo = list(items)
    if threads <= 1 or len(todo) <= 1:
        return [fn(x) for x in todo]
    with ThreadPoolExecutor(max_workers=min(threads, len(todo)), initializer=follow_opencv_pin) as pool:
        return list(pool.map(fn, todo))


__all__ = ["default_threads", "thread_map"]

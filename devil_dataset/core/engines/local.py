"""The local engine: map a stage function over records in this process or in ``jobs`` worker processes.

Results come back in the order of the records whatever order the workers finish in, so a stage gives the same
output with any number of workers. At most ``window`` records are in flight (default ``2 * jobs``), so memory
does not grow with the number of records. ``fn`` and the records must be picklable when ``jobs > 1``
(module-level functions, :func:`functools.partial` of them).

    >>> list(map_ordered(abs, [-2, 3, -1]))
    [2, 3, 1]
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_jobs(cap: int = 2) -> int:
    """Worker processes to use by default: the CPU count, at most ``cap`` (the demo's machine has 2 cores)."""
    return max(1, min(cap, os.cpu_count() or 1))


def map_ordered(fn: Callable[[T], R], records: Iterable[T], *, jobs: int = 1, window: int | None = None,
                on_result: Callable[[R], None] | None = None) -> Iterator[R]:
    """Yield ``fn(record)`` for every record, in record order; ``jobs > 1`` runs them in worker processes.

    ``on_result`` is called with each result as it is yielded (e.g. to move a progress bar). An exception in a
    worker is raised here, for the record that raised it, after the pool is shut down.
    """
    jobs = max(1, int(jobs))
    if jobs == 1:
        for record in records:
            result = fn(record)
            if on_result is not None:
                on_result(result)
            yield result
        return
    window = max(jobs, int(window or 2 * jobs))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: deque = deque()
        try:
            for record in records:
                pending.append(pool.submit(fn, record))
                while len(pending) >= window:
                    result = pending.popleft().result()
                    if on_result is not None:
                        on_result(result)
                    yield result
            while pending:
                result = pending.popleft().result()
                if on_result is not None:
                    on_result(result)
                yield result
        finally:
            for future in pending:
                future.cancel()


__all__ = ["default_jobs", "map_ordered"]

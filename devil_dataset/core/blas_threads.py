"""One BLAS thread for the blocks that need it, shared safely between threads of one process.

OpenBLAS's sums depend on how many threads split a product (a column's kernel follows the partition), and its thread
count is process-wide. Several parts of the package need one BLAS thread at once: the network passes' portable
products (``core/networks/portable``), the Frechet distances (``eval/kernels/frechet``) and the similarity fits of
the alignment (``core/alignment``), and the evaluation runs network passes in two threads (the read-ahead thread
prepares the next clip). Separate ``threadpool_limits`` blocks in two threads restore each other's saved counts in
the wrong order (a Frechet distance ending in one thread could give a pass running in the other two threads again),
so every such block goes through :func:`one_blas_thread`: the first block that starts sets one thread, the last one
that ends restores the count found before the first.

    >>> from threadpoolctl import threadpool_info
    >>> with one_blas_thread():
    ...     all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
    True
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Iterator

from scipy.linalg import blas  # noqa: F401  (loads scipy's OpenBLAS, whose core scipy_blas_core reads)
from threadpoolctl import threadpool_info, threadpool_limits

_lock = threading.Lock()
_users = 0  # blocks running now, in any thread of this process
_limit: Any = None  # the threadpoolctl limit the first of them set


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (every BLAS library threadpoolctl finds); see the module docstring."""
    global _users, _limit
    with _lock:
        if _users == 0:
            _limit = threadpool_limits(limits=1, user_api="blas")
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _limit is not None:
                _limit.restore_original_limits()
                _limit = None


@functools.lru_cache(maxsize=1)
def scipy_blas_core() -> str:
    """The kernel family (``architecture``) of scipy's OpenBLAS, the one the package's products and the Frechet
    distances run on: ``Haswell`` where the pin of :mod:`devil_dataset.core.cpu_pins` reached it (it is read when the
    library loads), ``unknown`` where threadpoolctl finds no such library.

    >>> isinstance(scipy_blas_core(), str)
    True
    """
    cores = sorted({str(i.get("architecture")) for i in threadpool_info()
                    if i.get("internal_api") == "openblas" and "scipy_openblas-" in str(i.get("filepath", ""))})
    return cores[0] if cores else "unknown"


__all__ = ["one_blas_thread", "scipy_blas_core"]

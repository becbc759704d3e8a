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
import threading
from typing import Any, Iterator

from threadpoolctl import threadpool_limits

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


__all__ = ["one_blas_thread"]

"""One BLAS thread for the blocks that need it, shared safely between threads of one process.

OpenBLAS's sums depend on how many threads split a product (a column's kernel follows the partition), and its thread
count is process-wide. Several parts of the package need one BLAS thread at once: the network passes' portable
products (``core/networks/portable``), the Frechet distances (``eval/kernels/frechet``) and the similarity fits of
the alignment (``core/alignment``), and the evaluation runs network passes in two threads (the read-ahead thread
prepares the next clip). Separate ``threadpool_limits`` blocks in two threads restore each other's saved counts in
the wrong order (a Frechet distance ending in one thread could give a pass running in the other two threads again),
so every such block goes through :func:`one_blas_thread`: the first block that starts sets one thread, the last one
that ends restores the count found before the first.

Each pthreads OpenBLAS (numpy's, scipy's, OpenCV's) is set through its own ``openblas_set_num_threads``, not
through threadpoolctl: threadpoolctl 3.8 lets only one thread of the process (the first that set a limit, while it
lives) change a pthreads OpenBLAS's count and silently ignores the others. The labellers set it first from the main
thread, so the evaluation's read-ahead thread then ran its network passes' products on two OpenBLAS threads and the
network metrics changed in the last digits with what ran before them (measured: every product
of the read-ahead thread on two threads after the label section). Other BLAS libraries (MKL, BLIS, an OpenBLAS on
OpenMP, whose limit is per thread) keep threadpoolctl's limit.

    >>> from threadpoolctl import threadpool_info
    >>> with one_blas_thread():
    ...     all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
    True
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import threading
from typing import Callable, Iterator

# threadpoolctl sets KMP_DUPLICATE_LIB_OK=True in os.environ when it is first imported (threadpoolctl.py, to let
# several OpenMP runtimes load). The package's one import of it is here, and it leaves the process's environment as
# it was: the variable goes again unless it was there before (set by the user, or by an earlier import).
_had_kmp = "KMP_DUPLICATE_LIB_OK" in os.environ
from threadpoolctl import ThreadpoolController, threadpool_info, threadpool_limits  # noqa: E402

if not _had_kmp:
    os.environ.pop("KMP_DUPLICATE_LIB_OK", None)

_lock = threading.Lock()
_users = 0  # blocks running now, in any thread of this process
_restore: list[Callable[[], None]] = []  # what undoes the first block's limits, run by the last one to end

# OpenBLAS's exported names: [prefix]openblas_{get,set}_num_threads[suffix] (scipy's wheels prefix "scipy_", the
# 64-bit-integer builds add "64_"), the affixes threadpoolctl tries.
_OPENBLAS_AFFIXES = tuple(itertools.product(("", "scipy_"), ("", "64_", "_64")))


def _openblas_functions(filepath: str) -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """The get and set functions of the OpenBLAS loaded from ``filepath`` (None when it exports neither)."""
    try:
        lib = ctypes.CDLL(filepath, mode=getattr(os, "RTLD_NOLOAD", 0))  # the loaded library, not a new copy
    except OSError:
        return None
    for prefix, suffix in _OPENBLAS_AFFIXES:
        get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
        set_ = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
        if get is not None and set_ is not None:
            get.restype, set_.restype = ctypes.c_int, None
            set_.argtypes = [ctypes.c_int]
            return get, set_
    return None


def _limit_to_one() -> list[Callable[[], None]]:
    """Set every BLAS library loaded now to one thread; returns the calls that restore each one's count."""
    from scipy.linalg import blas  # noqa: F401  (loads scipy's OpenBLAS, so that it is limited too)

    undo: list[Callable[[], None]] = []
    others: list[str] = []
    for info in threadpool_info():
        if info.get("user_api") != "blas":
            continue
        functions = None
        if info.get("internal_api") == "openblas" and info.get("threading_layer") != "openmp":
            functions = _openblas_functions(str(info["filepath"]))
        if functions is None:  # MKL, BLIS, an OpenMP OpenBLAS: threadpoolctl's (per-thread) limits
            others.append(str(info["filepath"]))
            continue
        get, set_ = functions
        before = int(get())
        set_(1)
        undo.append(functools.partial(set_, before))
    if others:
        limiter = ThreadpoolController().select(filepath=others).limit(limits=1)
        undo.append(limiter.restore_original_limits)
    return undo


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one BLAS thread (every BLAS library loaded); see the module docstring."""
    global _users, _restore
    with _lock:
        if _users == 0:
            _restore = _limit_to_one()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                for undo in reversed(_restore):
                    undo()
                _restore = []


@functools.lru_cache(maxsize=1)
def scipy_blas_core() -> str:
    """The kernel family (``architecture``) of scipy's OpenBLAS, the one the package's products and the Frechet
    distances run on: ``Haswell`` where the pin of :mod:`devil_dataset.core.cpu_pins` reached it (it is read when the
    library loads), ``unknown`` where threadpoolctl finds no such library.

    >>> isinstance(scipy_blas_core(), str)
    True
    """
    from scipy.linalg import blas  # noqa: F401  (loads scipy's OpenBLAS, whose core this reads)

    cores = sorted({str(i.get("architecture")) for i in threadpool_info()
                    if i.get("internal_api") == "openblas" and "scipy_openblas-" in str(i.get("filepath", ""))})
    return cores[0] if cores else "unknown"


__all__ = ["ThreadpoolController", "one_blas_thread", "scipy_blas_core", "threadpool_info", "threadpool_limits"]

"""One BLAS thread in every thread of the process (core/blas_threads.py: the read-ahead thread's residual)."""
from __future__ import annotations

import threading

from threadpoolctl import threadpool_info

from devil_dataset.core.blas_threads import _openblas_functions, one_blas_thread


def _openblas_counts() -> list[int]:
    """The thread count of every pthreads OpenBLAS loaded, read through its own exported getter."""
    counts = []
    for info in threadpool_info():
        if info.get("internal_api") == "openblas" and info.get("threading_layer") != "openmp":
            functions = _openblas_functions(str(info["filepath"]))
            assert functions is not None, f"{info['filepath']} exports no openblas_get_num_threads"
            counts.append(int(functions[0]()))
    return counts


def _inside_in_thread() -> list[int]:
    seen: list[int] = []

    def work() -> None:
        with one_blas_thread():
            seen.extend(_openblas_counts())

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=60)
    return seen


def test_every_thread_gets_one_openblas_thread():
    # threadpoolctl 3.8 ignores the limits of every thread but the first that set one (its "controlling thread"):
    # the main thread limits first here, then a second thread must still get one thread (it got the default before)
    assert _openblas_counts(), "no pthreads OpenBLAS loaded (numpy's and scipy's are)"
    with one_blas_thread():
        assert set(_openblas_counts()) == {1}
    before = _openblas_counts()
    assert set(_inside_in_thread()) == {1}
    assert _openblas_counts() == before  # restored after the last block


def test_overlapping_blocks_in_two_threads_restore_once_at_the_end():
    before = _openblas_counts()
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def work() -> None:
        with one_blas_thread():
            entered.set()
            release.wait(timeout=60)
            seen.extend(_openblas_counts())

    thread = threading.Thread(target=work)
    with one_blas_thread():
        thread.start()
        assert entered.wait(timeout=60)
    # this thread's block ended first: the other one still runs on one thread
    release.set()
    thread.join(timeout=60)
    assert set(seen) == {1}
    assert _openblas_counts() == before

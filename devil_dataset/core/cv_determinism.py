"""The same numbers on every CPU: OpenCV and FFmpeg's swscale pinned to code paths that do not depend on SIMD dispatch.

OpenCV picks SIMD kernels (SSE4, AVX, AVX2, AVX-512, NEON) and Intel IPP paths at run time from the CPU it runs on;
they round differently, so DIS flow, SIFT keypoints and descriptors, ``warpAffine`` and float ``resize`` give other
bytes on other CPUs (measured with ``OPENCV_CPU_DISABLE``, see ``docs/reliability.md``). ``cv2.setUseOptimized(False)``
turns the run-time dispatch and IPP off: every CPU then runs the same baseline code. :func:`pin_opencv` does that once
per process; every module of the package that calls OpenCV calls it at import, so engine workers (fresh processes)
are pinned too. FFmpeg's swscale (YUV <-> RGB when decoding and encoding) is pinned by its ``BITEXACT`` and
``ACCURATE_RND`` flags (:data:`SWS_EXACT_FLAGS`, used by :mod:`devil_dataset.core.video_io`).

The pinned paths cost little (``benchmarks/determinism.py``); setting the environment variable
``DEVIL_FAST_SIMD=1`` keeps OpenCV's CPU dispatch (faster on some calls, numbers then depend on the CPU).

    >>> import cv2
    >>> pin_opencv()
    True
    >>> cv2.useOptimized() == fast_simd()
    True
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

import cv2

# Environment variable that keeps OpenCV's CPU dispatch ("1"): faster on some machines, machine-dependent numbers.
FAST_SIMD_ENV = "DEVIL_FAST_SIMD"

# swscale flags that make its output independent of the CPU's SIMD (libswscale/swscale.h: SWS_ACCURATE_RND = 0x40000,
# SWS_BITEXACT = 0x80000); OR-ed with the interpolation (SWS_BILINEAR = 2, PyAV's default; SWS_AREA = 0x20).
SWS_BILINEAR = 2
SWS_AREA = 0x20
SWS_ACCURATE_RND = 0x40000
SWS_BITEXACT = 0x80000
SWS_EXACT_FLAGS = SWS_ACCURATE_RND | SWS_BITEXACT


def fast_simd() -> bool:
    """True when ``DEVIL_FAST_SIMD=1`` asks for OpenCV's CPU dispatch (machine-dependent numbers).

    >>> isinstance(fast_simd(), bool)
    True
    """
    return os.environ.get(FAST_SIMD_ENV, "") == "1"


def pin_opencv() -> bool:
    """Turn OpenCV's run-time SIMD dispatch and IPP off (``cv2.setUseOptimized(False)``) unless ``DEVIL_FAST_SIMD=1``.

    Idempotent and cheap; returns True when OpenCV is pinned (CPU-independent results). SIMD dispatch is one switch
    for the process, but IPP is switched **per thread** (OpenCV keeps it in thread-local data, and a new thread starts
    with IPP on whatever the thread that made it says): a thread that runs OpenCV (the evaluation's read-ahead
    thread computes the warp error's flows) must call this first. Measured: DIS flow in a new thread differed from
    the main thread's by up to 7e-6 until IPP was switched off there too. The entry points that can run in such a
    thread (:func:`devil_dataset.core.flow.dis_flow`) call it on every call.

    >>> pin_opencv() is not fast_simd()
    True
    >>> import cv2, threading
    >>> seen = []
    >>> t = threading.Thread(target=lambda: seen.append((pin_opencv(), cv2.ipp.useIPP()))); t.start(); t.join()
    >>> seen == [(True, False)] or fast_simd()
    True
    """

    pinned = not fast_simd()
    if cv2.useOptimized() == pinned:  # the state differs from the one wanted
        cv2.setUseOptimized(not pinned)
    if pinned and cv2.ipp.useIPP():  # this thread's own IPP switch (thread-local in OpenCV)
        cv2.ipp.setUseIPP(False)
    return pinned


def sws_flags(interpolation: int) -> int:
    """swscale flags for ``interpolation`` (an ``SWS_*`` method bit): exact unless ``DEVIL_FAST_SIMD=1``.

    >>> sws_flags(2) == (2 if fast_simd() else 2 | SWS_EXACT_FLAGS)
    True
    """
    return interpolation if fast_simd() else interpolation | SWS_EXACT_FLAGS


# serial_opencv's state: OpenCV's thread count is one setting of the process, so blocks entered from several threads
# (the labellers detect features of several frames at once, core/thread_map.py) share one saved value: the first
# block to enter sets one thread, the last to leave restores the count. A block leaving early must not restore it
# while another thread's SIFT still runs.
_serial_lock = threading.Lock()
_serial_state: dict[str, int] = {"depth": 0, "saved": 0}


@contextlib.contextmanager
def serial_opencv() -> Iterator[None]:
    """Run the block's OpenCV calls on one thread when OpenCV is pinned (restores the thread count after).

    OpenCV 5.0's SIFT without SIMD dispatch is not deterministic across threads (measured: 8 of 120 detections on
    320x180 frames gave other keypoints with the default thread pool, none with one thread); feature detection runs
    in this block. Blocks may overlap in several threads of the process (each thread detecting its own frame): the
    count is restored when the last one leaves.

    >>> import cv2
    >>> before = cv2.getNumThreads()
    >>> with serial_opencv():
    ...     with serial_opencv():
    ...         pass
    ...     cv2.getNumThreads() == (before if fast_simd() else 1)
    True
    >>> cv2.getNumThreads() == before
    True
    """

    if fast_simd():
        yield
        return
    with _serial_lock:
        if _serial_state["depth"] == 0:
            _serial_state["saved"] = cv2.getNumThreads()
            cv2.setNumThreads(1)
        _serial_state["depth"] += 1
    try:
        yield
    finally:
        with _serial_lock:
            _serial_state["depth"] -= 1
            if _serial_state["depth"] == 0:
                cv2.setNumThreads(_serial_state["saved"])

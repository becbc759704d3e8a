"""The same numbers on every CPU: OpenCV and FFmpeg's swscale pinned to code paths that do not depend on SIMD dispatch.

OpenCV picks SIMD kernels (SSE4, AVX, AVX2, AVX-512, NEON) and Intel IPP paths at run time from the CPU it runs on;
they round differently, so DIS flow, SIFT keypoints and descriptors, ``warpAffine`` and float ``resize`` give other
bytes on other CPUs (measured with ``OPENCV_CPU_DISABLE``, see ``docs/reliability.md``). ``cv2.setUseOptimized(False)``
turns the run-time dispatch and IPP off: every CPU then runs the same baseline code. Importing a module of the package
changes nothing: the pin applies where the package computes a published number.

- :func:`pin_opencv`: for the whole process, kept (the ``devil`` command and the engines' worker processes, through
  :func:`devil_dataset.core.cpu_pins.pin_process`).
- :func:`pinned_opencv`: for a block, restored on exit (the public evaluate and metric calls, through
  :func:`devil_dataset.core.cpu_pins.cpu_pinned`); a user's own OpenCV calls outside it keep their dispatch.
- :func:`follow_opencv_pin`: IPP is switched per thread, so a thread that runs OpenCV for the package (the
  evaluation's read-ahead thread, the labellers' thread pools) switches its own IPP off when the process is pinned.

FFmpeg's swscale (YUV <-> RGB when decoding and encoding) is pinned by its ``BITEXACT`` and ``ACCURATE_RND`` flags
(:data:`SWS_EXACT_FLAGS`, used by :mod:`devil_dataset.core.video_io`) on every call.

The pinned paths cost little (``benchmarks/determinism.py``); setting the environment variable
``DEVIL_FAST_SIMD=1`` keeps OpenCV's CPU dispatch (faster on some calls, numbers then depend on the CPU).

    >>> import cv2
    >>> before = cv2.useOptimized()
    >>> with pinned_opencv():
    ...     cv2.useOptimized() == fast_simd()
    True
    >>> cv2.useOptimized() == before
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
    """Turn OpenCV's run-time SIMD dispatch and IPP off (``cv2.setUseOptimized(False)``) for the rest of the process,
    unless ``DEVIL_FAST_SIMD=1``: what the ``devil`` command and the engines' workers do (a user's process keeps its
    OpenCV; :func:`pinned_opencv` pins a block and restores).

    Idempotent and cheap; returns True when OpenCV is pinned (CPU-independent results). SIMD dispatch is one switch
    for the process, but IPP is switched **per thread** (OpenCV keeps it in thread-local data, and a new thread starts
    with IPP on): a thread that runs OpenCV for the package calls :func:`follow_opencv_pin` first. Measured: DIS flow
    in a new thread differed from the main thread's by up to 7e-6 until IPP was switched off there too.

    >>> import cv2
    >>> saved = cv2.useOptimized(), cv2.ipp.useIPP()
    >>> pin_opencv() is not fast_simd(), cv2.useOptimized() == fast_simd()
    (True, True)
    >>> cv2.setUseOptimized(saved[0]); cv2.ipp.setUseIPP(saved[1])  # the example gives the process back
    """

    pinned = not fast_simd()
    if cv2.useOptimized() == pinned:  # the state differs from the one wanted
        cv2.setUseOptimized(not pinned)
    if pinned and cv2.ipp.useIPP():  # this thread's own IPP switch (thread-local in OpenCV)
        cv2.ipp.setUseIPP(False)
    return pinned


def follow_opencv_pin() -> bool:
    """In the calling thread, switch IPP off when OpenCV's dispatch is pinned for the process (by
    :func:`pin_opencv` or inside :func:`pinned_opencv`); nothing otherwise. Returns whether the process is pinned.

    IPP is the one part of the pin that OpenCV keeps per thread: the package's own threads that run OpenCV call this
    first (thread pools as their initialiser, :func:`devil_dataset.core.flow.dis_flow` on every call), so they compute
    what the pinned main thread computes, and leave a user's unpinned process as it is.

    >>> import cv2, threading
    >>> seen = []
    >>> def look():
    ...     seen.append((follow_opencv_pin(), cv2.ipp.useIPP()))
    >>> with pinned_opencv():
    ...     t = threading.Thread(target=look); t.start(); t.join()
    >>> seen == [(True, False)] or fast_simd()
    True
    """
    pinned = not fast_simd() and not cv2.useOptimized()
    if pinned and cv2.ipp.useIPP():
        cv2.ipp.setUseIPP(False)
    return pinned


# pinned_opencv's state: the dispatch switch is one setting of the process, so blocks entered from several threads
# (the evaluation's read-ahead thread, nested public calls) share one saved value: the first block to enter pins, the
# last to leave restores. IPP and OpenCL are per thread: each block saves and restores its own thread's.
_pinned_lock = threading.Lock()
_pinned_state: dict[str, int] = {"depth": 0, "saved": 1}


@contextlib.contextmanager
def pinned_opencv() -> Iterator[bool]:
    """Run the block with OpenCV's dispatch and IPP off (as :func:`pin_opencv`), then give back the optimisation
    flag of the process and the calling thread's IPP and OpenCL switches as they were; yields whether it pinned
    (False with ``DEVIL_FAST_SIMD=1``, which changes nothing). Blocks may nest and overlap in several threads: the
    process flag is restored when the last one leaves. OpenCV calls made in the meantime by other threads of the
    process run pinned too (the flag is one per process).

    >>> import cv2
    >>> before = cv2.useOptimized(), cv2.ipp.useIPP()
    >>> with pinned_opencv() as pinned:
    ...     with pinned_opencv():
    ...         pass
    ...     (cv2.useOptimized(), cv2.ipp.useIPP()) == ((True, True) if not pinned else (False, False))
    True
    >>> (cv2.useOptimized(), cv2.ipp.useIPP()) == before
    True
    """
    if fast_simd():
        yield False
        return
    ipp, opencl = cv2.ipp.useIPP(), cv2.ocl.useOpenCL()
    with _pinned_lock:
        if _pinned_state["depth"] == 0:
            _pinned_state["saved"] = int(cv2.useOptimized())
            cv2.setUseOptimized(False)
        _pinned_state["depth"] += 1
    cv2.ipp.setUseIPP(False)
    try:
        yield True
    finally:
        with _pinned_lock:
            _pinned_state["depth"] -= 1
            if _pinned_state["depth"] == 0:
                cv2.setUseOptimized(bool(_pinned_state["saved"]))  # also sets this thread's IPP and OpenCL
        cv2.ipp.setUseIPP(ipp)
        cv2.ocl.setUseOpenCL(opencl)


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

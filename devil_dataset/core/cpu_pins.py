"""The same numbers on AVX2 and AVX-512 machines: the libraries that pick kernels from the CPU, and their pins.

Every library below detects the CPU by itself and takes other code paths (SSE, AVX2, AVX-512) that may round
differently. :data:`LIBRARIES` is the one table of them: where the package meets each, the switch that simulates
another CPU (what ``tests/core/test_determinism.py`` sets), and what makes the package's numbers independent of it.

Importing the package pins nothing: a process that imports ``devil_dataset`` (a training script, a notebook) keeps
its environment, OpenCV, torch and BLAS as they were. The pins apply where the package computes a published number:

- :func:`pin_process` pins the whole process, for good: the ``devil`` command calls it first, before torch or scipy
  is imported, and so does each of the local engine's worker processes. A library user who wants the command's
  numbers calls it right after ``import devil_dataset``, before importing torch or scipy.
- :func:`cpu_pinned` pins a block and restores on exit: the public evaluate and metric calls run in it. It pins what
  can be switched in a running process (OpenCV's dispatch and IPP; the network passes and the Frechet distances set
  their own thread counts, ``core/blas_threads`` and ``core/networks/precision``); it cannot pin the environment.
- :func:`pinned_environment` is the environment a worker process starts with (the local engine's, Ray's).

Three libraries cannot be pinned by a call once loaded; they read an environment variable when they start or at their
first use: OpenBLAS under numpy and scipy (``OPENBLAS_CORETYPE``, read when the library loads), and under torch
ATen's vectorised kernels (``ATEN_CPU_CAPABILITY``), oneDNN's convolutions (``ONEDNN_MAX_CPU_ISA``) and MKL
(``MKL_CBWR``, its Conditional Numerical Reproducibility branch), each read at first use. :func:`pin_environment`
sets them to the AVX2 level, the highest that every x86-64 machine of the project has (oneDNN's only with
``DEVIL_NETWORK_KERNELS=native``: the portable network kernels never call it, and the feature matcher's int8 products
need its VNNI kernels, see :data:`NATIVE_KERNEL_PINS`). Set after torch or scipy loaded, they do not take effect in
this process (:func:`pins_provenance` says "late"; the network values then carry their recorded tolerance,
``networks.precision.arithmetic_provenance``); worker processes started afterwards get them at their start. numpy's
own OpenBLAS loads with the package and keeps the kernels it picks: the package's numpy products are the exact
integer products of the feature matcher (the same bits with any kernel), while the Frechet distances and the
networks' products run on scipy's OpenBLAS, which the pin reaches (``blas_threads.scipy_blas_core`` checks it).
Whether the CPU has AVX2 is what ``cpuid`` tells this process (:func:`cpuid_avx2_flags`, through glibc), as the
libraries themselves detect it; ``/proc/cpuinfo`` only where glibc cannot say (under an emulator it lists the host's
flags). A variable the user set is left alone, and ``DEVIL_FAST_SIMD=1`` pins nothing (faster on AVX-512, numbers
then depend on the CPU). CPUs without AVX2 and FMA (x86-64 before 2013, arm64) cannot take the AVX2 kernels: nothing
is pinned there, and the networks' provenance in every results file says why.

    >>> env = pinned_environment({})
    >>> set(env) <= set(AVX2_PINS) and (pin_level()[0] == "none" or env["ATEN_CPU_CAPABILITY"] == "avx2")
    True
    >>> sorted(pins_provenance())
    ['cpu', 'level', 'pinned', 'reason']
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import sys
from dataclasses import dataclass
from typing import Iterator, Mapping

from .cv_determinism import FAST_SIMD_ENV, fast_simd, pin_opencv, pinned_opencv

#: The environment each CPU-detecting library reads, at the AVX2 level (names and values from each library's docs:
#: OpenBLAS "Runtime variables", PyTorch ``aten/src/ATen/native/DispatchStub.cpp``, oneDNN "CPU dispatcher
#: control", oneMKL "Conditional Numerical Reproducibility").
AVX2_PINS: Mapping[str, str] = {
    "OPENBLAS_CORETYPE": "Haswell",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2",
}
#: The switch of the network kernels on the CPU (read by ``core/networks/portable``): ``portable`` (default: the same
#: bits on Intel and AMD) or ``native`` (oneDNN and MKL as torch picks them).
NETWORK_KERNELS_ENV = "DEVIL_NETWORK_KERNELS"
#: Pins set only when ``DEVIL_NETWORK_KERNELS=native`` is in the environment at import. With the portable kernels no
#: network pass calls oneDNN; its one user is then the exact matcher's int8 product (``core/int8_products``), exact on
#: any ISA where it is taken, and ~2x faster with the VNNI kernels the AVX2 cap would hide (docs/reliability.md).
NATIVE_KERNEL_PINS = ("ONEDNN_MAX_CPU_ISA",)
#: /proc/cpuinfo flags the AVX2 kernels need (x86-64-v3 without MOVBE/LZCNT, which no pinned kernel uses alone).
AVX2_FLAGS = ("avx", "avx2", "fma", "f16c")


@dataclass(frozen=True)
class CpuDependentLibrary:
    """One library that detects the CPU by itself: where the package meets it and what pins it."""

    name: str
    used_for: str
    simulated_by: str
    pinned_by: str


#: Every library found on a path to a published number. ``docs/reliability.md`` has the measurements.
LIBRARIES: tuple[CpuDependentLibrary, ...] = (
    CpuDependentLibrary("x264 (libx264 in PyAV)", "encoding every sample clip and source (core/video_io)",
                        "its asm= parameter", "x264-params cpu-independent=1 (video_io.X264_CPU_INDEPENDENT)"),
    CpuDependentLibrary("FFmpeg swscale and decoders (PyAV)", "YUV <-> RGB of every clip; H.264 decoding",
                        "av_force_cpu_flags", "SWS_BITEXACT | SWS_ACCURATE_RND (swscale); H.264 decoding is "
                        "bit-exact by the standard"),
    CpuDependentLibrary("OpenCV", "DIS flow, SIFT, warps, resizes, Telea (labels, baselines, warp error)",
                        "OPENCV_CPU_DISABLE, OPENCV_IPP=disabled", "cv2.setUseOptimized(False), IPP off per "
                        "thread, SIFT on one thread (cv_determinism)"),
    CpuDependentLibrary("numpy's own SIMD loops", "every array computation", "NPY_DISABLE_CPU_FEATURES",
                        "nothing needed: no difference measured on the package's paths"),
    CpuDependentLibrary("OpenBLAS (numpy, scipy)", "matrix products and LAPACK: Frechet distances (FID, VFID)",
                        "OPENBLAS_CORETYPE", "OPENBLAS_CORETYPE=Haswell (pin_environment); the feature "
                        "statistics are exact integer sums (eval/frechet), so only sqrtm meets BLAS"),
    CpuDependentLibrary("ATen (torch)", "element-wise ops, pooling, reductions of the networks",
                        "ATEN_CPU_CAPABILITY", "ATEN_CPU_CAPABILITY=avx2 (pin_environment)"),
    CpuDependentLibrary("oneDNN (torch)", "convolutions of LPIPS, Inception, I3D, RAFT (bf16, native kernels); "
                        "the feature matcher's int8 products (core/int8_products)",
                        "ONEDNN_MAX_CPU_ISA; its blocking also follows the detected caches (QEMU CPU models)",
                        "bypassed on the CPU: convolutions on OpenBLAS sgemm (core/networks/portable); "
                        "ONEDNN_MAX_CPU_ISA=AVX2 set only for DEVIL_NETWORK_KERNELS=native; int8 products are "
                        "exact integers, used only where a check at first use finds them exact"),
    CpuDependentLibrary("MKL BLAS and VML (torch)", "RAFT's correlation product; torch's float32 sqrt, exp, log",
                        "MKL_CBWR (honoured on Intel CPUs only); the CPU vendor (QEMU CPU models)",
                        "bypassed on the CPU: products on OpenBLAS sgemm, square roots correctly rounded "
                        "(core/networks/portable); MKL_CBWR=AVX2 still set"),
    CpuDependentLibrary("libjpeg-turbo (Pillow)", "JPEG frames of the dataset and the release rebuild",
                        "JSIMD_FORCENONE / JSIMD_FORCESSE2", "nothing needed: its SIMD paths give the C code's "
                        "bytes (measured)"),
    CpuDependentLibrary("ISA-L (isal)", "PNG compression of predictions (core/png_encode)",
                        "none (CPU emulation only)", "nothing needed: the same bytes on an emulated AVX2 and "
                        "SSE4.2 CPU (measured); the pixels are lossless anyway"),
    CpuDependentLibrary("zlib (Pillow, Python)", "PNG masks and frames of the dataset",
                        "none (CPU emulation only)", "nothing needed: the same bytes on emulated CPUs (measured)"),
    CpuDependentLibrary("Arrow / Parquet (pyarrow)", "the dataset's parquet shards",
                        "ARROW_USER_SIMD_LEVEL", "nothing needed: the same bytes (measured)"),
)


def native_network_kernels() -> bool:
    """Whether ``DEVIL_NETWORK_KERNELS=native`` asks for oneDNN's and MKL's network kernels (the pins of
    :data:`NATIVE_KERNEL_PINS` then apply).

    >>> isinstance(native_network_kernels(), bool)
    True
    """
    return os.environ.get(NETWORK_KERNELS_ENV, "portable") == "native"


def pin_applies(name: str) -> bool:
    """Whether the pin ``name`` of :data:`AVX2_PINS` is set in this process: all of them, but those of
    :data:`NATIVE_KERNEL_PINS` only with ``DEVIL_NETWORK_KERNELS=native``.

    >>> pin_applies("OPENBLAS_CORETYPE")
    True
    """
    return name not in NATIVE_KERNEL_PINS or native_network_kernels()


def cpu_flags() -> frozenset[str]:
    """The machine's feature flags from ``/proc/cpuinfo`` (empty where there is none: macOS, Windows): the kernel's
    view of the host, which :func:`pin_level` uses only where :func:`cpuid_avx2_flags` cannot say.

    >>> isinstance(cpu_flags(), frozenset)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


# glibc's view of cpuid (<sys/platform/x86.h>, glibc >= 2.33): ``__x86_get_cpuid_feature_leaf(index)`` returns the
# registers eax, ebx, ecx, edx of a cpuid leaf, then the same four words with only the features this process may use
# ("active": the CPU has them and the OS saves their registers, from xgetbv). Index 0 is leaf 1, index 1 is leaf 7.
_GLIBC_CPUID_LEAF_1, _GLIBC_CPUID_LEAF_7 = 0, 1
_ACTIVE_ECX, _ACTIVE_EBX = 4 + 2, 4 + 1
#: Where each of :data:`AVX2_FLAGS` is in cpuid (Intel SDM vol. 2A, CPUID): leaf 1 ECX bits 28 (AVX), 12 (FMA),
#: 29 (F16C); leaf 7 EBX bit 5 (AVX2).
_CPUID_BITS: Mapping[str, tuple[int, int, int]] = {
    "avx": (_GLIBC_CPUID_LEAF_1, _ACTIVE_ECX, 28),
    "fma": (_GLIBC_CPUID_LEAF_1, _ACTIVE_ECX, 12),
    "f16c": (_GLIBC_CPUID_LEAF_1, _ACTIVE_ECX, 29),
    "avx2": (_GLIBC_CPUID_LEAF_7, _ACTIVE_EBX, 5),
}


#: Where the int8 dot-product instructions are in cpuid (Intel SDM vol. 2A, CPUID): leaf 7 ECX bit 11 (AVX512_VNNI).
_VNNI_BITS: Mapping[str, tuple[int, int, int]] = {"avx512_vnni": (_GLIBC_CPUID_LEAF_7, _ACTIVE_ECX, 11)}


def cpuid_vnni() -> bool | None:
    """Whether this process may use AVX-512 VNNI (``vpdpbusd``), from ``cpuid`` through glibc as in
    :func:`cpuid_avx2_flags` (an emulated CPU's answer, not the host's); ``None`` where glibc cannot say.

    >>> cpuid_vnni() in (True, False, None)
    True
    """
    flags = _cpuid_active(_VNNI_BITS)
    return None if flags is None else "avx512_vnni" in flags


def cpuid_avx2_flags() -> frozenset[str] | None:
    """Which of :data:`AVX2_FLAGS` this process may use, as the libraries see them: from ``cpuid`` and ``xgetbv``
    through glibc (``__x86_get_cpuid_feature_leaf``); ``None`` where glibc lacks it (glibc < 2.33, musl, not x86-64).

    ``/proc/cpuinfo`` describes the machine the kernel runs on, which is not always the CPU a process runs on: under
    an emulator (``qemu-x86_64 -cpu Nehalem``) it still lists the host's AVX2, and pinning the libraries to their
    AVX2 kernels there makes them execute instructions the emulated CPU does not have (measured: numpy's import dies
    with SIGILL under ``OPENBLAS_CORETYPE=Haswell``).

    >>> flags = cpuid_avx2_flags()
    >>> flags is None or flags <= set(AVX2_FLAGS)
    True
    """
    return _cpuid_active(_CPUID_BITS)


def _cpuid_active(bits: Mapping[str, tuple[int, int, int]]) -> frozenset[str] | None:
    """The names of ``bits`` (leaf index, register word, bit) that glibc reports active; ``None`` where it cannot."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        leaf = ctypes.CDLL(None).__x86_get_cpuid_feature_leaf
    except (OSError, AttributeError, TypeError):  # no such glibc function; Windows has no CDLL(None)
        return None
    leaf.restype = ctypes.POINTER(ctypes.c_uint32 * 8)
    leaf.argtypes = [ctypes.c_uint]
    words = {index: list(leaf(index).contents) for index in (_GLIBC_CPUID_LEAF_1, _GLIBC_CPUID_LEAF_7)}
    return frozenset(name for name, (index, word, bit) in bits.items() if words[index][word] >> bit & 1)


def pin_level() -> tuple[str, str]:
    """``(level, reason)``: ``("avx2", ...)`` where the AVX2 pins apply, else ``("none", why not)``.

    >>> pin_level()[0] in {"avx2", "none"}
    True
    """
    if fast_simd():
        return "none", f"{FAST_SIMD_ENV}=1 keeps every library's own CPU dispatch"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "none", f"{platform.machine()}: the AVX2 kernels are x86-64 only"
    usable = cpuid_avx2_flags()
    flags = cpu_flags() if usable is None else usable
    missing = [f for f in AVX2_FLAGS if f not in flags]
    if missing:
        known = usable is not None or bool(flags)
        return "none", f"this CPU lacks {', '.join(missing)}" if known else "CPU flags unknown (no /proc/cpuinfo)"
    return "avx2", "x86-64 with AVX2 and FMA: libraries pinned to their AVX2 kernels"


#: The modules whose presence means a pinned library has already read its variable: scipy's OpenBLAS loads with
#: ``scipy.linalg``; torch's ATen, oneDNN and MKL read theirs at first use, which may follow ``import torch`` at once.
_READ_BY: Mapping[str, str] = {"OPENBLAS_CORETYPE": "scipy.linalg", "ATEN_CPU_CAPABILITY": "torch",
                               "ONEDNN_MAX_CPU_ISA": "torch", "MKL_CBWR": "torch"}
#: The variables :func:`pin_environment` set in this process, and the library that had already loaded (its module).
_SET_HERE: dict[str, str | None] = {}


def pinned_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The pins :func:`pin_environment` would add to ``environ`` (a mapping left unchanged): those the CPU allows
    and ``environ`` does not set already (oneDNN's only where ``environ`` asks for the native network kernels).
    What a worker process is started with.

    >>> pinned_environment({"ATEN_CPU_CAPABILITY": "default"}).get("ATEN_CPU_CAPABILITY")
    >>> "ONEDNN_MAX_CPU_ISA" in pinned_environment({})
    False
    """
    if pin_level()[0] != "avx2":
        return {}
    native = environ.get(NETWORK_KERNELS_ENV, "portable") == "native"
    return {name: value for name, value in AVX2_PINS.items()
            if name not in environ and (name not in NATIVE_KERNEL_PINS or native)}


def pin_environment() -> dict[str, object]:
    """Set :data:`AVX2_PINS` in ``os.environ`` for the rest of the process where the CPU allows (see the module
    docstring); idempotent. Returns :func:`pins_provenance`: a pin set after its library loaded is marked late.
    """
    for name, value in pinned_environment(os.environ).items():
        os.environ[name] = value
        _SET_HERE[name] = _READ_BY[name] if _READ_BY[name] in sys.modules else None
    return pins_provenance()


def pin_process() -> dict[str, object]:
    """Pin this process for good as the ``devil`` command is: the environment of :func:`pin_environment` and OpenCV
    (:func:`~devil_dataset.core.cv_determinism.pin_opencv`). Call it first, before importing torch or scipy; returns
    :func:`pins_provenance` (a variable marked late did not reach its library).

    >>> import devil_dataset  # doctest: +SKIP
    >>> devil_dataset.pin_process()["level"]  # doctest: +SKIP
    'avx2'
    """
    pin_environment()
    pin_opencv()
    return pins_provenance()


@contextlib.contextmanager
def cpu_pinned() -> Iterator[None]:
    """Run the block with the pins that a running process can switch and restore: OpenCV's dispatch and IPP (see
    :func:`~devil_dataset.core.cv_determinism.pinned_opencv`). Also a decorator: the public evaluate and metric calls
    carry it. The environment pins are not set here: their libraries read them once, so a block could not give them
    back (:func:`pin_process` before importing torch and scipy does that part).

    >>> import cv2
    >>> before = cv2.useOptimized()
    >>> with cpu_pinned():
    ...     cv2.useOptimized() == fast_simd()
    True
    >>> cv2.useOptimized() == before
    True
    """
    with pinned_opencv():
        yield


def _in_force(name: str) -> str | None:
    """How :func:`pins_provenance` records the variable ``name`` of this process (None: not set)."""
    value = os.environ.get(name)
    if value is None:
        return None
    if value != AVX2_PINS[name]:
        return f"{value} (set by the user)"
    if _SET_HERE.get(name):
        return f"{value} (late: {_SET_HERE[name]} was imported first)"
    return value


def pins_provenance() -> dict[str, object]:
    """What a results file records about the CPU arithmetic, as it is in force now (this reads, it sets nothing):
    the CPU, the pin level (``avx2`` only where the CPU allows it and the variables are set), why, and the variables.

    >>> pins_provenance()["level"] in {"avx2", "none"}
    True
    """
    level, reason = pin_level()
    pinned = {name: shown for name in AVX2_PINS if (shown := _in_force(name)) is not None}
    missing = [name for name in AVX2_PINS if pin_applies(name) and name not in os.environ]
    if level == "avx2" and missing:
        level, reason = "none", (f"not pinned: {', '.join(missing)} unset (devil_dataset.pin_process() before "
                                 "importing torch and scipy pins a process, as the devil command does)")
    return {"cpu": platform.machine(), "level": level, "reason": reason, "pinned": pinned}


def torch_pins_in_force() -> tuple[bool, str]:
    """``(True, ...)`` when torch's kernels run at the pinned AVX2 level: the pins in the environment, none set after
    torch was imported, and ATen reporting the AVX2 capability; else ``(False, why)``. Imports torch.

    >>> isinstance(torch_pins_in_force()[0], bool)
    True
    """
    import torch

    state = pins_provenance()
    if state["level"] != "avx2":
        return False, str(state["reason"])
    for name in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR"):
        if not pin_applies(name):
            continue
        if os.environ.get(name) != AVX2_PINS[name]:
            return False, f"{name}={os.environ.get(name)} instead of {AVX2_PINS[name]}"
        if _SET_HERE.get(name):
            return False, "torch was imported before the pins were set: its libraries may have started unpinned"
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        return False, f"ATen runs its {capability} kernels"
    onednn = pin_applies("ONEDNN_MAX_CPU_ISA")
    return True, "ATen, oneDNN and MKL at their AVX2 kernels" if onednn else "ATen and MKL at their AVX2 kernels"


__all__ = ["AVX2_FLAGS", "AVX2_PINS", "LIBRARIES", "NATIVE_KERNEL_PINS", "NETWORK_KERNELS_ENV", "CpuDependentLibrary",
           "cpu_flags", "cpu_pinned", "cpuid_avx2_flags", "cpuid_vnni", "native_network_kernels", "pin_applies",
           "pin_environment", "pin_level", "pin_process", "pinned_environment", "pins_provenance",
           "torch_pins_in_force"]

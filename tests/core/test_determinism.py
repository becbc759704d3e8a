"""The same numbers on every CPU: the probe's values under simulated CPUs, and the networks under
other batch sizes and thread counts.

Each run is a fresh subprocess (``determinism_probe.py``) whose CPU dispatch is cut down by every CPU-detecting
library's own switch (``devil_dataset.core.cpu_pins.LIBRARIES`` lists them): ``OPENCV_CPU_DISABLE`` and
``OPENCV_IPP`` (OpenCV), ``NPY_DISABLE_CPU_FEATURES`` (numpy), ``OPENBLAS_CORETYPE`` (OpenBLAS under numpy, scipy and
OpenCV), ``ATEN_CPU_CAPABILITY``, ``ONEDNN_MAX_CPU_ISA`` and ``MKL_CBWR`` (torch), ``JSIMD_FORCE*`` (libjpeg-turbo),
``ARROW_USER_SIMD_LEVEL`` (Arrow), FFmpeg's ``av_force_cpu_flags`` and x264's ``asm=`` (the probe sets those two).

- ``avx2``: a CPU without AVX-512, the project's other kind of machine. Everything must be identical, the networks
  included: the package pins their libraries to the AVX2 level (``core/cpu_pins``). Skipped on a CPU without AVX2.
- ``no-avx`` and ``sse3-only``: older CPUs. Everything but the networks must be identical; the network metrics, whose
  libraries have no AVX2 kernels to pin there, must stay within ``NETWORK_CPU_TOLERANCE`` (slow).

``determinism_hashes.json`` pins the native run's values, so CI on any machine checks them too (skipped, naming the
versions, when the libraries differ). ``test_emulated_cpus.py`` runs the same probe on CPUs emulated by QEMU (slow).
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("determinism_probe.py")
PINNED = Path(__file__).with_name("determinism_hashes.json")
ROOT = Path(__file__).resolve().parents[2]
ARM64 = platform.machine().lower() in ("arm64", "aarch64")

from devil_dataset.core.networks import NETWORK_CPU_TOLERANCE  # noqa: E402  (the bound this test checks)


def _cpu_flags() -> set[str]:
    from devil_dataset.core.cpu_pins import cpu_flags

    return set(cpu_flags())


def _numpy_targets(prefix: str = "") -> str:
    """numpy's run-time dispatch targets (``X86_V3``, ``X86_V4``, ``AVX512_ICL``, ...), those starting with one of
    ``prefix``'s comma-separated names when given."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    wanted = tuple(p for p in prefix.split(",") if p)
    return ",".join(t for t in __cpu_dispatch__ if not wanted or t.startswith(wanted))


# FFmpeg's AV_CPU_FLAG_* bits (libavutil/cpu.h): MMX, MMXEXT, SSE, SSE2, SSE3, SSSE3, SSE4, SSE42, CMOV, AVX, AVX2,
# FMA3, BMI1, BMI2, AESNI: a CPU with AVX2 and no AVX-512.
_AV_AVX2 = 0x1 | 0x2 | 0x8 | 0x10 | 0x40 | 0x80 | 0x100 | 0x200 | 0x1000 | 0x4000 | 0x8000 | 0x10000 | 0x20000 \
    | 0x40000 | 0x80000
_X264_AVX2 = "MMX2,SSE,SSE2,SSE2Fast,SSE3,SSSE3,SSE4.1,SSE4.2,LZCNT,AVX,FMA3,BMI1,BMI2,AVX2"

# Simulated CPUs: each removes SIMD levels the native run may use (names a CPU lacks are ignored with a warning).
SIMULATED_CPUS: dict[str, dict[str, str]] = {
    "avx2": {"OPENCV_CPU_DISABLE": "AVX512_SKX,AVX512_ICL", "NPY_DISABLE_CPU_FEATURES": "<numpy:X86_V4,AVX512>",
             "OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "MKL_CBWR": "AVX2", "JSIMD_FORCEAVX2": "1", "ARROW_USER_SIMD_LEVEL": "AVX2",
             "DEVIL_TEST_AV_CPU_FLAGS": str(_AV_AVX2), "DEVIL_TEST_X264_ASM": _X264_AVX2},
    "no-avx": {"OPENCV_CPU_DISABLE": "AVX512_SKX,AVX512_ICL,AVX2,FP16,AVX", "NPY_DISABLE_CPU_FEATURES": "<numpy>",
               "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "SSE4_2",
               "JSIMD_FORCESSE2": "1", "ARROW_USER_SIMD_LEVEL": "SSE4_2", "DEVIL_TEST_AV_CPU_FLAGS": "0",
               "DEVIL_TEST_X264_ASM": "none" if ARM64 else "MMX2,SSE,SSE2,SSE3,SSSE3,SSE4.1,SSE4.2",
               "OPENBLAS_CORETYPE": "ARMV8" if ARM64 else "Nehalem"},
    "sse3-only": {"OPENCV_CPU_DISABLE": "AVX512_SKX,AVX512_ICL,AVX2,FP16,AVX,SSE4_2,SSE4_1",
                  "OPENCV_IPP": "disabled", "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                  "MKL_CBWR": "COMPATIBLE", "JSIMD_FORCENONE": "1", "ARROW_USER_SIMD_LEVEL": "NONE",
                  "DEVIL_TEST_AV_CPU_FLAGS": "1", "DEVIL_TEST_X264_ASM": "none" if ARM64 else "MMX2,SSE,SSE2,SSE3",
                  "OPENBLAS_CORETYPE": "ARMV8" if ARM64 else "Prescott"},
}


def _has_avx2() -> bool:
    return not ARM64 and {"avx2", "fma", "f16c"} <= _cpu_flags()


def _resolved(value: str) -> str:
    if value == "<numpy>":
        return _numpy_targets()
    if value.startswith("<numpy:"):
        return _numpy_targets(value[len("<numpy:"):-1])
    return value


def run_probe(extra_env: dict[str, str], weights: Path | None = None, sections: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k != "DEVIL_FAST_SIMD" and k not in {n for cpu in SIMULATED_CPUS.values() for n in cpu}}
    env.update({k: _resolved(v) for k, v in extra_env.items()})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if weights is not None:
        env["DEVIL_PROBE_WEIGHTS"] = str(weights)
    if sections:
        env["DEVIL_PROBE_SECTIONS"] = sections
    done = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probe_weights(tmp_path_factory) -> Path:
    """Seeded random weights of every network, made once for every probe run of this module."""
    sys.path.insert(0, str(PROBE.parent))
    try:
        from determinism_probe import plant_random_weights
    finally:
        sys.path.remove(str(PROBE.parent))
    directory = tmp_path_factory.mktemp("probe-weights")
    plant_random_weights(directory)
    return directory


def simulated_cpus() -> dict[str, dict[str, str]]:
    """The simulations this machine can run: ``avx2`` needs a CPU with AVX2 (x264's ``asm=`` flags must exist)."""
    return {k: v for k, v in SIMULATED_CPUS.items() if k != "avx2" or _has_avx2()}


#: The probe's sections per simulated CPU in the default run: the networks (about a minute a run, most of it the
#: Frechet distances' square roots) where they must be identical; the older CPUs' network tolerance is ``slow``.
WITHOUT_NETWORKS = "media,labels,baselines"


@pytest.fixture(scope="module")
def runs(probe_weights) -> dict[str, dict[str, str]]:
    settings = {"native": {}, **simulated_cpus()}
    sections = {name: "" if name in ("native", "avx2") else WITHOUT_NETWORKS for name in settings}
    with ThreadPoolExecutor(2) as pool:
        results = pool.map(lambda name: run_probe(settings[name], probe_weights, sections[name]), settings)
    return dict(zip(settings, results))


def relative_deviation(a: str, b: str) -> float:
    """|a - b| / |a| of two ``repr`` floats (0 for equal strings, NaN for equal NaNs)."""
    if a == b:
        return 0.0
    x, y = float(a), float(b)
    return abs(x - y) / abs(x) if x else math.inf


@pytest.mark.parametrize("cpu", sorted(SIMULATED_CPUS))
def test_simulated_cpu_gives_identical_bytes(runs, cpu):
    """Every value of the simulated CPU's run equals the native run's (the ``avx2`` run includes the networks)."""
    if cpu not in runs:
        pytest.skip(f"{cpu}: this CPU has no AVX2 to simulate an AVX2 machine with")
    native, simulated = runs["native"], runs[cpu]
    assert set(simulated) <= set(native) and (cpu != "avx2" or set(simulated) == set(native))
    differing = {k: (native[k], simulated[k]) for k in simulated if native[k] != simulated[k]}
    assert not differing, f"{cpu}: values depend on the CPU: {differing}"


@pytest.mark.slow
@pytest.mark.parametrize("cpu", ["no-avx", "sse3-only"])
def test_networks_below_avx2_within_the_stated_tolerance(runs, probe_weights, cpu):
    """Slow (a minute or two per run): on CPUs the AVX2 pins cannot reach the network metrics stay within
    NETWORK_CPU_TOLERANCE of the native values (measured: at most 1.9e-6, docs/reliability.md)."""
    simulated = run_probe(SIMULATED_CPUS[cpu], probe_weights, "networks")
    for k, value in simulated.items():
        if k != "network_raft":  # a digest of flows: compared through the metrics only
            assert relative_deviation(runs["native"][k], value) <= NETWORK_CPU_TOLERANCE, (k, runs["native"][k], value)


def _version_of(package: str) -> str:
    """An optional package's version, ``absent`` when it is not installed (the ``removal`` extra's transformers)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def _versions() -> dict[str, str]:
    import av
    import cv2
    import numpy
    import PIL
    import pyarrow
    import scipy
    import torch

    return {"opencv": cv2.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__, "av": av.__version__,
            "pillow": PIL.__version__, "pyarrow": pyarrow.__version__, "torch": torch.__version__.split("+")[0],
            "transformers": _version_of("transformers"),
            "machine": "arm64" if ARM64 else "x86_64", "pins": "avx2" if _has_avx2() else "none"}


def test_pinned_values(runs):
    """The native run equals the committed values bit for bit, the network metrics too (regenerate: ``python
    tests/core/test_determinism.py``); the run-to-run residual was the read-ahead thread's products on
    two OpenBLAS threads, fixed in core/blas_threads."""
    pinned = json.loads(PINNED.read_text())
    if pinned["versions"] != _versions():
        pytest.skip(f"pinned with {pinned['versions']}, this environment has {_versions()}")
    native = runs["native"]
    assert set(native) == set(pinned["values"])
    differing = {k: (native[k], v) for k, v in pinned["values"].items() if native[k] != v}
    assert not differing, differing


@pytest.mark.slow
def test_fast_simd_option_is_machine_dependent():
    """Control: with ``DEVIL_FAST_SIMD=1`` (every library's own dispatch kept) a simulated CPU changes the values, so
    the identical bytes above come from the pinning, not from a simulation that does nothing."""
    if not _has_avx2():
        pytest.skip("needs an x86-64 CPU with AVX2 to simulate one without")
    fast = {"DEVIL_FAST_SIMD": "1"}
    native = run_probe(fast, sections="media,labels")
    simulated = run_probe({**fast, **SIMULATED_CPUS["no-avx"]}, sections="media,labels")
    assert native["decoded"] != simulated["decoded"]  # swscale's SIMD YUV -> RGB
    assert native["encoded"] != simulated["encoded"]  # x264's SIMD
    assert native["scene_motion_score"] != simulated["scene_motion_score"]  # DIS and SIFT


def test_opencv_in_another_thread_gives_the_main_threads_values():
    """IPP is switched per thread in OpenCV: the DIS flow of a worker thread (the evaluation's read-ahead thread
    computes the warp error's flows) equals the main thread's, bit for bit."""
    import numpy as np

    from devil_dataset.core.flow import dis_flow

    rng = np.random.default_rng(3)  # a blocky texture panning 2 px: without the per-thread pin this differed
    base = np.kron(rng.integers(0, 256, (14, 20, 3), dtype=np.uint8), np.ones((8, 8, 1), np.uint8))
    a, b = base[:96, :128], base[:96, 2:130]
    main = dis_flow(a, b)
    with ThreadPoolExecutor(max_workers=1) as pool:
        other = pool.submit(dis_flow, a, b).result(timeout=60)
    assert np.array_equal(main, other)


if __name__ == "__main__":  # rewrite the pinned values from a native run (after an intended change)
    import tempfile

    sys.path.insert(0, str(PROBE.parent))
    from determinism_probe import plant_random_weights

    with tempfile.TemporaryDirectory() as tmp:
        plant_random_weights(Path(tmp))
        values = run_probe({}, Path(tmp))
    PINNED.write_text(json.dumps({"versions": _versions(), "values": values}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")

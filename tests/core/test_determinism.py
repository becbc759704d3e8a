"""The same numbers on every CPU (issue 27): labels, evaluation and baselines under simulated CPUs give equal bytes.

Each run is a fresh subprocess (``determinism_probe.py``) whose CPU dispatch is cut down by the libraries' own
switches: ``OPENCV_CPU_DISABLE`` (OpenCV's SIMD levels), ``OPENCV_IPP=disabled``, ``NPY_DISABLE_CPU_FEATURES``
(numpy's dispatch targets), ``ATEN_CPU_CAPABILITY`` (torch), ``OPENBLAS_CORETYPE`` (the BLAS kernels under OpenCV's
LAPACK and numpy) and FFmpeg's CPU flags (``av_force_cpu_flags``).
``determinism_hashes.json`` pins the native run's values and hashes, so CI on any machine checks them too.
"""
from __future__ import annotations

import json
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


def _numpy_dispatch_targets() -> str:
    """numpy's run-time dispatch targets (``X86_V3``, ``AVX512_SKX``, ``ASIMDHP``, ... depending on version/arch)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return ",".join(__cpu_dispatch__)


ARM64 = platform.machine().lower() in ("arm64", "aarch64")
# Simulated CPUs: each removes SIMD levels the native run may use (names a CPU lacks are ignored with a warning).
# OPENBLAS_CORETYPE picks older OpenBLAS kernels (OpenCV's LAPACK and numpy's matmul run on OpenBLAS).
SIMULATED_CPUS: dict[str, dict[str, str]] = {
    "no-avx": {"OPENCV_CPU_DISABLE": "AVX512_SKX,AVX2,FP16,AVX", "NPY_DISABLE_CPU_FEATURES": "<numpy>",
               "ATEN_CPU_CAPABILITY": "default", "DEVIL_TEST_AV_CPU_FLAGS": "0",
               "OPENBLAS_CORETYPE": "ARMV8" if ARM64 else "Nehalem"},
    "sse3-only": {"OPENCV_CPU_DISABLE": "AVX512_SKX,AVX2,FP16,AVX,SSE4_2,SSE4_1", "OPENCV_IPP": "disabled",
                  "DEVIL_TEST_AV_CPU_FLAGS": "1", "OPENBLAS_CORETYPE": "ARMV8" if ARM64 else "Prescott"},
}


def run_probe(extra_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEVIL_FAST_SIMD"}
    env.update({k: _numpy_dispatch_targets() if v == "<numpy>" else v for k, v in extra_env.items()})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, str]]:
    settings = {"native": {}, **SIMULATED_CPUS}
    with ThreadPoolExecutor(2) as pool:
        results = pool.map(run_probe, settings.values())
    return dict(zip(settings, results))


@pytest.mark.parametrize("cpu", sorted(SIMULATED_CPUS))
def test_simulated_cpu_gives_identical_bytes(runs, cpu):
    native, simulated = runs["native"], runs[cpu]
    assert sorted(simulated) == sorted(native)
    differing = {k: (native[k], simulated[k]) for k in native if simulated[k] != native[k]}
    assert not differing, f"{cpu}: values depend on the CPU: {differing}"


def _versions() -> dict[str, str]:
    import av
    import cv2
    import numpy
    import scipy

    return {"opencv": cv2.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__, "av": av.__version__,
            "machine": "arm64" if ARM64 else "x86_64"}


def test_pinned_values(runs):
    """The native run equals the committed values (regenerate: ``python tests/core/test_determinism.py``)."""
    pinned = json.loads(PINNED.read_text())
    if pinned["versions"] != _versions():
        pytest.skip(f"pinned with {pinned['versions']}, this environment has {_versions()}")
    assert runs["native"] == pinned["values"]


@pytest.mark.slow
def test_fast_simd_option_is_machine_dependent():
    """Control: with ``DEVIL_FAST_SIMD=1`` (OpenCV's dispatch kept) a simulated CPU changes the values, so the
    identical bytes above come from the pinning, not from a simulation that does nothing."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists() or " avx2" not in cpuinfo.read_text():
        pytest.skip("needs an x86-64 CPU with AVX2 to simulate one without")
    fast = {"DEVIL_FAST_SIMD": "1"}
    native = run_probe(fast)
    simulated = run_probe({**fast, **SIMULATED_CPUS["no-avx"]})
    assert native["decoded"] != simulated["decoded"]  # swscale's SIMD YUV -> RGB
    assert native["scene_motion_score"] != simulated["scene_motion_score"]  # DIS and SIFT


if __name__ == "__main__":  # rewrite the pinned values from a native run (after an intended change)
    PINNED.write_text(json.dumps({"versions": _versions(), "values": run_probe({})}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED}")


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

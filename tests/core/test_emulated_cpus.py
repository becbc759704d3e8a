"""The determinism probe on CPUs emulated by QEMU (slow; issue 36): every library's own CPU detection (x264, ISA-L,
zlib, libjpeg-turbo, OpenBLAS, numpy, OpenCV, FFmpeg, Arrow) sees the emulated CPU's ``cpuid``, not a switch.

``qemu-x86_64 -cpu Haswell-v4`` is an AVX2 machine without AVX-512, ``-cpu Nehalem`` an SSE4.2 one; on an AVX-512
host the first is the project's other kind of machine. The media, label and baseline sections must give the native
values under both (a few minutes each under emulation). The network section is too slow to emulate in a test (about
40 minutes for four tiny passes); its one emulated run is recorded in docs/reliability.md. Needs Debian's
``qemu-user`` (``apt-get install qemu-user``).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from .test_determinism import PROBE, ROOT, WITHOUT_NETWORKS, run_probe

QEMU = shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="emulates x86-64 CPUs"),
    pytest.mark.skipif(QEMU is None, reason="no qemu-x86_64 (apt-get install qemu-user)"),
]


def run_emulated(cpu: str) -> dict[str, str]:
    """The probe's media, label and baseline values under ``qemu-x86_64 -cpu CPU``."""
    env = {k: v for k, v in os.environ.items() if k != "DEVIL_FAST_SIMD"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["DEVIL_PROBE_SECTIONS"] = WITHOUT_NETWORKS
    done = subprocess.run([str(QEMU), "-cpu", cpu, sys.executable, str(PROBE)], env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("cpu", ["Haswell-v4", "Nehalem"])
def test_emulated_cpu_gives_the_native_values(cpu):
    native = run_probe({}, sections=WITHOUT_NETWORKS)
    emulated = run_emulated(cpu)
    differing = {k: (native[k], emulated[k]) for k in native if emulated.get(k) != native[k]}
    assert not differing, f"{cpu}: values depend on the CPU: {differing}"

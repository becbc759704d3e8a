"""The determinism probe on CPUs emulated by QEMU (slow): every library's own CPU detection (x264, ISA-L,
zlib, libjpeg-turbo, OpenBLAS, numpy, OpenCV, FFmpeg, Arrow) sees the emulated CPU's ``cpuid``, not a switch.

``qemu-x86_64 -cpu Haswell-v4`` is an AVX2 machine without AVX-512, ``-cpu Nehalem`` an SSE4.2 one; on an AVX-512
host the first is the project's other kind of machine. The media, label and baseline sections must give the native
values under both (a few minutes each under emulation). The network section is too slow to emulate in a test (about
40 minutes for four tiny passes); its one emulated run is recorded in docs/reliability.md. The removal section (RC-S
and RC-T with a tiny seeded DINOv2 through the package's loader) is its own test: about 4 CPU minutes per CPU model,
most of it importing torch and transformers under emulation. Needs Debian's ``qemu-user`` (``apt-get install
qemu-user``).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from devil_dataset.core.cpu_pins import AVX2_PINS
from devil_dataset.core.networks import NETWORK_CPU_TOLERANCE

from .test_determinism import PROBE, ROOT, WITHOUT_NETWORKS, run_probe

QEMU = shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="emulates x86-64 CPUs"),
    pytest.mark.skipif(QEMU is None, reason="no qemu-x86_64 (apt-get install qemu-user)"),
]


def emulated_env(**extra: str) -> dict[str, str]:
    """The environment of a probe process, emulated or native: this one's without ``DEVIL_FAST_SIMD`` and without the
    AVX2 pins this process set for its own CPU (the probe decides its pins from what its CPU says, as a fresh process
    on that machine would: inherited pins made numpy's OpenBLAS run AVX2 kernels on the emulated Nehalem, which died
    with SIGILL at import), with Python's fault handler on so that a crash names the Python frame."""
    drop = {"DEVIL_FAST_SIMD", *AVX2_PINS}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["PYTHONFAULTHANDLER"] = "1"
    env.update(extra)
    return env


def run_emulated(cpu: str, sections: str = WITHOUT_NETWORKS) -> dict[str, str]:
    """The probe's values of ``sections`` (media, labels and baselines by default) under ``qemu-x86_64 -cpu CPU``."""
    env = emulated_env(DEVIL_PROBE_SECTIONS=sections)
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


#: The probe's values from PROVE's own float32 MMD (the ``release`` parity: torch's ``cdist``, ``pow``, ``exp`` and
#: ``mean`` as PROVE's ``compute_rbf_mmd`` runs them, bit for bit PROVE's on the same machine): outside the portable
#: arithmetic, so they follow the CPU's kernels (measured 8.2e-6 relative on the emulated Haswell, docs/removal.md).
RELEASE_MMD_VALUES = ("removal_rc_s_float32", "removal_rc_t_float32")


def _deviation(a: str, b: str) -> float:
    """|a - b| / |a| of two ``float.hex`` strings (0 for equal strings)."""
    x, y = float.fromhex(a), float.fromhex(b)
    return 0.0 if a == b else abs(x - y) / abs(x)


@pytest.mark.parametrize("cpu", ["Haswell-v4", "EPYC-Rome", "Nehalem"])
def test_removal_metrics_on_emulated_cpus(cpu):
    """RC-S and RC-T of a tiny removal with a seeded random DINOv2 (the probe's ``removal`` section). On the AVX2
    models, Intel Haswell and AMD EPYC-Rome, DINOv2's features and the ``corrected`` parity's values (float64 MMD)
    are the native bits: the passes run in the portable arithmetic. The ``release`` parity's values (PROVE's float32
    torch MMD) stay within NETWORK_CPU_TOLERANCE; so does everything on Nehalem, where no AVX2 pin and so no
    portable kernel applies."""
    native = run_probe({}, sections="removal")
    emulated = run_emulated(cpu, "removal")
    assert set(emulated) == set(native) and len(native) == 5, (native, emulated)
    exact = [k for k in native if k not in RELEASE_MMD_VALUES] if cpu != "Nehalem" else []
    differing = {k: (native[k], emulated[k]) for k in exact if emulated[k] != native[k]}
    assert not differing, f"{cpu}: values depend on the CPU: {differing}"
    for k in (k for k in native if k.startswith("removal_rc_")):
        assert _deviation(native[k], emulated[k]) <= NETWORK_CPU_TOLERANCE, (cpu, k, native[k], emulated[k])


VENDOR_PROBE = PROBE.with_name("network_vendor_probe.py")
#: The CPU models of the vendor test: an Intel and an AMD model with AVX2 (vendor string, cache geometry and
#: cpuid leaves of each; QEMU's TCG emulates no AVX-512), beside the native CPU.
VENDOR_MODELS = ("Haswell-v4", "EPYC-Rome")
#: The networks QEMU 7.2 can run (its TCG crashes in ATen's AVX2 grid_sample, which RAFT needs).
EMULATED_NETWORKS = ("lpips", "inception", "i3d", "dinov2")


def run_vendor_probe(cpu: str | None, kernels: str) -> dict[str, str]:
    """The network digests of ``network_vendor_probe.py`` natively (``cpu=None``) or under ``qemu-x86_64 -cpu``."""
    env = emulated_env(DEVIL_NETWORK_KERNELS=kernels)
    command = [sys.executable, str(VENDOR_PROBE), *EMULATED_NETWORKS]
    if cpu is not None:
        command = [str(QEMU), "-cpu", cpu, *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_networks_are_identical_on_intel_and_amd_models():
    """Every network's output is the same on an emulated Intel Haswell, an emulated AMD EPYC-Rome and the
    native CPU with the portable kernels; the control: with oneDNN's and MKL's own kernels (``native``) the emulated
    Intel and AMD give other bits (oneDNN's blocking follows the caches; MKL honours MKL_CBWR on Intel only). About
    ten minutes: four emulated runs."""
    native = run_vendor_probe(None, "portable")
    for cpu in VENDOR_MODELS:
        emulated = run_vendor_probe(cpu, "portable")
        differing = {k: (native[k], emulated[k]) for k in native if emulated.get(k) != native[k]}
        assert not differing, f"{cpu}: network values depend on the CPU: {differing}"
    intel, amd = (run_vendor_probe(cpu, "native") for cpu in VENDOR_MODELS)
    assert intel != amd, "control: oneDNN/MKL kernels gave the same bits on both models; the check shows nothing"


@pytest.mark.parametrize(("cpu", "level"), [("Nehalem", "none"), ("Haswell-v4", "avx2")])
def test_pins_follow_the_emulated_cpu_not_the_hosts_cpuinfo(cpu, level):
    """Under QEMU ``/proc/cpuinfo`` still lists the host's AVX2: the pins are decided from what ``cpuid`` says."""
    code = "from devil_dataset.core.cpu_pins import pin_level; print(pin_level()[0])"
    done = subprocess.run([str(QEMU), "-cpu", cpu, sys.executable, "-c", code], env=emulated_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == level

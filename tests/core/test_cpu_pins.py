"""The AVX2 pins' decision (core/cpu_pins.py): from what cpuid tells this process, not from /proc/cpuinfo alone."""
from __future__ import annotations

import platform

import pytest

from devil_dataset.core import cpu_pins

X86_64 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.skipif(not X86_64 or cpu_pins.cpuid_avx2_flags() is None,
                    reason="needs x86-64 Linux with glibc >= 2.33 (__x86_get_cpuid_feature_leaf)")
def test_cpuid_flags_agree_with_the_kernels_cpuinfo_on_real_hardware():
    """Natively the kernel's flags and cpuid's usable features are the same four answers (a wrong bit position in
    the glibc leaves would show here: this machine's /proc/cpuinfo is the reference)."""
    from_cpuinfo = set(cpu_pins.AVX2_FLAGS) & cpu_pins.cpu_flags()
    assert cpu_pins.cpuid_avx2_flags() == from_cpuinfo


@pytest.mark.skipif(not X86_64, reason="the AVX2 pins are x86-64 only")
def test_pin_level_follows_cpuid_when_cpuinfo_lists_the_hosts_avx2(monkeypatch):
    """An emulated CPU without AVX2 on an AVX2 host (qemu-x86_64 -cpu Nehalem): /proc/cpuinfo lists the host's
    flags, cpuid the emulated CPU's; the pins must not be set (the AVX2 kernels would die with SIGILL)."""
    monkeypatch.delenv("DEVIL_FAST_SIMD", raising=False)
    monkeypatch.setattr(cpu_pins, "cpu_flags", lambda: frozenset({"sse2", *cpu_pins.AVX2_FLAGS}))
    monkeypatch.setattr(cpu_pins, "cpuid_avx2_flags", lambda: frozenset())
    level, reason = cpu_pins.pin_level()
    assert level == "none" and "lacks avx, avx2, fma, f16c" in reason
    monkeypatch.setattr(cpu_pins, "cpuid_avx2_flags", lambda: None)  # no glibc answer: /proc/cpuinfo decides
    assert cpu_pins.pin_level()[0] == "avx2"
    monkeypatch.setattr(cpu_pins, "cpu_flags", lambda: frozenset())
    assert cpu_pins.pin_level() == ("none", "CPU flags unknown (no /proc/cpuinfo)")


@pytest.mark.skipif(not X86_64 or cpu_pins.pin_level()[0] != "avx2", reason="the AVX2 pins apply only on AVX2 x86-64")
def test_onednn_is_capped_only_for_the_native_network_kernels():
    """With the portable network kernels (default) oneDNN is left uncapped, so the matcher's int8 products
    can take its VNNI kernels; ``DEVIL_NETWORK_KERNELS=native`` still caps it at AVX2. A user's own value stays."""
    import os
    import subprocess
    import sys

    def onednn_isa(**extra: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in (*cpu_pins.AVX2_PINS, cpu_pins.NETWORK_KERNELS_ENV)}
        env.pop("DEVIL_FAST_SIMD", None)
        code = ("import os, devil_dataset; devil_dataset.pin_process(); "
                "print(os.environ.get('ONEDNN_MAX_CPU_ISA'), os.environ['ATEN_CPU_CAPABILITY'])")
        done = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert onednn_isa() == "None avx2"
    assert onednn_isa(DEVIL_NETWORK_KERNELS="native") == "AVX2 avx2"
    assert onednn_isa(ONEDNN_MAX_CPU_ISA="SSE41") == "SSE41 avx2"

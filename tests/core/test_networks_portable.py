"""The portable network kernels: convolutions and products on OpenBLAS, exact square roots, and no
oneDNN, MKL BLAS or MKL VML call left in any network's CPU pass."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from devil_dataset.core.networks import portable
from devil_dataset.core.networks.portable import (
    NETWORK_KERNELS_ENV,
    conv_nd,
    portable_arithmetic,
    portable_in_force,
    sgemm,
)

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("network_vendor_probe.py")


@pytest.mark.parametrize("n,groups,stride,padding,dilation,bias", [
    c for c in itertools.product((1, 2, 3), (1, 2), (1, 2), (0, 1, "same", "valid"), (1, 2), (False, True))
    if not (c[3] == "same" and c[2] != 1)])
def test_conv_equals_torch(n, groups, stride, padding, dilation, bias):
    g = torch.Generator().manual_seed(n * 100 + groups)
    x = torch.randn(2, 4, *([9] * n), generator=g)
    w = torch.randn(6, 4 // groups, *([3] * n), generator=g)
    b = torch.randn(6, generator=g) if bias else None
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    ref = conv(x, w, b, stride, padding, dilation, groups)
    with torch.inference_mode(), portable_arithmetic():
        got = conv(x, w, b, stride, padding, dilation, groups)
    assert got.shape == ref.shape
    assert float((got - ref).abs().max()) < 1e-4
    # the same product computed directly on OpenBLAS: the mode routes the call, it does not fall through to torch
    direct = conv_nd(x, w, b, stride, padding, dilation, groups)
    assert torch.equal(got, direct)


def test_conv_slices_are_a_function_of_the_shapes(monkeypatch):
    """OpenBLAS's sums depend on a product's shape (which kernel covers a column), so the patch buffer's slicing
    must depend on the shapes alone: the same call gives the same bits every time, and another buffer size other
    bits (which is why the size is a constant, not a setting)."""
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(1, 3, 6, 20, 21, generator=g), torch.randn(5, 3, 3, 3, 3, generator=g)
    whole = conv_nd(x, w, None, 1, 1, 1, 1)
    assert torch.equal(conv_nd(x, w, None, 1, 1, 1, 1), whole)
    monkeypatch.setattr(portable, "PATCH_BUFFER_ELEMENTS", 81 * 21 * 20)
    sliced = conv_nd(x, w, None, 1, 1, 1, 1)
    assert torch.equal(conv_nd(x, w, None, 1, 1, 1, 1), sliced)
    assert float((sliced - whole).abs().max()) < 1e-4


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 2)), ((2, 3, 5), (5, 4)),
                                   ((2, 1, 3, 5), (4, 5, 2))])
def test_matmul_shapes(sa, sb):
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(*sa, generator=g), torch.randn(*sb, generator=g)
    with portable_arithmetic():
        got = a @ b
    ref = torch.matmul(a, b)
    assert got.shape == ref.shape and float((got - ref).abs().max()) < 1e-5


def test_sgemm_ignores_alignment():
    """OpenBLAS packs its operands: the bits do not depend on where the arrays start in memory."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 363)).astype(np.float32), rng.standard_normal((363, 165)).astype(np.float32)
    results = set()
    for offset in range(8):
        buf_a, buf_b = np.empty(a.size + 8, np.float32), np.empty(b.size + 8, np.float32)
        a2, b2 = buf_a[offset:offset + a.size].reshape(a.shape), buf_b[offset:offset + b.size].reshape(b.shape)
        a2[...], b2[...] = a, b
        results.add(sgemm(torch.from_numpy(a2), torch.from_numpy(b2)).numpy().tobytes())
    assert len(results) == 1


def test_sgemm_writes_into_out_without_reading_it():
    """``out`` (uninitialised memory in a batched product) is written whole: BLAS's beta = 0 never reads C, so a NaN
    left there cannot reach the result, and the bits are those of a fresh product; an empty inner dimension gives
    zeros."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(37, 19, generator=g), torch.randn(19, 45, generator=g)
    out = torch.full((37, 45), float("nan"))
    assert sgemm(a, b, out) is out
    assert torch.equal(out, sgemm(a, b)) and bool(torch.isfinite(out).all())
    assert torch.equal(sgemm(torch.ones(3, 0), torch.ones(0, 2), torch.full((3, 2), float("nan"))), torch.zeros(3, 2))


def test_batched_matmul_equals_each_product():
    """A batched (and broadcast) product is each matrix's :func:`sgemm`, bit for bit, written into one tensor."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(2, 3, 17, 9, generator=g)
    b = torch.randn(3, 11, 9, generator=g).transpose(-1, -2)  # non-contiguous [3, 9, 11], as the attention's key
    with portable_arithmetic():
        got = a @ b
    for i, j in itertools.product(range(2), range(3)):
        assert torch.equal(got[i, j], sgemm(a[i, j].contiguous(), b[j].contiguous()))


def test_square_roots_are_correctly_rounded():
    """torch's float32 sqrt goes through MKL's VML, which is not correctly rounded and follows the vendor; the
    portable one is IEEE's (a double square root rounded to float32 is correctly rounded: 53 >= 2 * 24 + 2)."""
    x = torch.rand(200_000, generator=torch.Generator().manual_seed(3)) * 100
    exact = np.sqrt(x.numpy().astype(np.float64)).astype(np.float32)
    with portable_arithmetic():
        assert np.array_equal(torch.sqrt(x).numpy(), exact)
        assert np.array_equal(x.sqrt().numpy(), exact)
        assert np.array_equal((x ** 0.5).numpy(), exact)
        assert np.array_equal(torch.rsqrt(x).numpy(), np.float32(1) / exact)


def test_autocast_falls_through_and_autograd_does_not_change_the_kernels():
    """bf16 autocast regions keep torch's kernels; a pass with autograd on (a new thread starts with it on) takes the
    same portable kernels as one under inference mode: the same bits."""
    conv = torch.nn.Conv2d(2, 3, 3)
    x = torch.rand(1, 2, 6, 6)
    with portable_arithmetic():
        with torch.inference_mode():
            reference = conv(x)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                assert conv(x).dtype == torch.bfloat16
        assert torch.equal(conv(x).detach(), reference)


def test_switch_and_provenance(monkeypatch):
    from devil_dataset.core.networks.precision import arithmetic_provenance

    monkeypatch.setenv(NETWORK_KERNELS_ENV, "native")
    assert portable_in_force("cpu")[0] is False
    assert arithmetic_provenance("cpu")["kernels"] == "native"
    assert arithmetic_provenance("cpu")["tolerance_rel"] > 0
    monkeypatch.setenv(NETWORK_KERNELS_ENV, "fast")
    with pytest.raises(ValueError, match="portable"):
        portable_in_force("cpu")


#: Every torch function the networks' CPU passes call, by name: routed by the mode (convolutions, products,
#: square roots) or ATen's own kernels, which the AVX2 pin makes the same code on every x86-64 CPU with AVX2 and
#: which use no approximate instruction (measured under QEMU's Intel and AMD models: tests/core/test_emulated_cpus).
#: A function missing here (a new network, a changed torchvision) fails the test below until it is checked.
VETTED = {
    "__bool__", "__getitem__", "__rsub__", "adaptive_avg_pool2d", "add", "add_", "any", "arange", "avg_pool2d",
    "avg_pool3d", "batch_norm", "boolean_dispatch.<locals>.fn", "cat", "chunk", "clamp", "contiguous", "conv2d",
    "conv3d", "cpu", "detach", "device", "dim", "div", "double", "dropout", "empty", "expand", "flatten", "float",
    "gelu", "getset_descriptor.__get__", "grid_sample", "instance_norm", "interpolate", "layer_norm", "linear",
    "linspace", "lt", "matmul", "max_pool3d", "mean", "meshgrid", "mul", "mul_", "narrow", "numpy", "pad", "permute",
    "pow", "relu", "repeat", "reshape", "sigmoid", "size", "softmax", "split", "sqrt", "stack", "sub", "sum", "tanh",
    "tensor", "to", "transpose", "unbind", "unfold", "view", "zeros",
}
# DINOv2 (RC-S / RC-T) adds: ``linear`` (routed: sgemm), ``gelu`` (routed: torch's is a oneDNN primitive; scipy's
# erf in float64), ``expand`` (a view), ``layer_norm`` (ATen's row kernel: vectorised moments, the reciprocal square
# root a scalar ``std::sqrt``) and ``softmax`` (ATen's vectorised exp): ATen's own code at the pinned AVX2 level.


def test_every_function_the_networks_call_is_vetted(monkeypatch):
    """The names the portable mode sees in every network's pass (what the networks call, not the routed
    implementations' own calls) are all in :data:`VETTED`."""
    seen: set[str] = set()
    routed = portable._PortableMode.__torch_function__

    def logged(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", str(func))
        seen.add(name.split(".", 1)[1] if name.startswith(("TensorBase.", "Tensor.", "_VariableFunctions"))
                 else name)
        return routed(self, func, types, args, kwargs)

    monkeypatch.setattr(portable._PortableMode, "__torch_function__", logged)
    if not portable_in_force("cpu")[0]:
        pytest.skip(f"the portable kernels are not in force here: {portable_in_force('cpu')[1]}")
    sys.path.insert(0, str(PROBE.parent))
    try:
        import network_vendor_probe
    finally:
        sys.path.remove(str(PROBE.parent))
    network_vendor_probe.probe()
    assert {"conv2d", "conv3d", "matmul", "sqrt"} <= seen  # the routed calls are among them
    assert seen - VETTED == set(), f"unvetted torch functions in the networks: {sorted(seen - VETTED)}"


def test_no_onednn_or_mkl_call_in_any_network_pass():
    """With the portable kernels no oneDNN primitive and no MKL BLAS call runs (their verbose logs stay empty); with
    ``native`` they do (the control)."""
    def logs(kernels: str) -> str:
        env = {**os.environ, "ONEDNN_VERBOSE": "1", "MKL_VERBOSE": "1", NETWORK_KERNELS_ENV: kernels,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        env.pop("DEVIL_FAST_SIMD", None)
        done = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout + done.stderr
    if not portable_in_force("cpu")[0]:
        pytest.skip(f"the portable kernels are not in force here: {portable_in_force('cpu')[1]}")
    portable_log = logs("portable")
    assert "primitive,exec" not in portable_log and "MKL_VERBOSE SGEMM" not in portable_log
    native_log = logs("native")
    assert "primitive,exec" in native_log


def test_gelu_is_routed_to_a_float64_erf():
    """torch's float32 exact GELU runs oneDNN's ``eltwise_gelu_erf`` on the CPU; the mode computes it in float64 with
    scipy's erf and rounds once (within 1 float32 unit of torch's, and exactly the float64 formula rounded)."""
    from scipy import special

    x = torch.randn(4096, generator=torch.Generator().manual_seed(7)) * 4
    with portable_arithmetic():
        got = F.gelu(x)
        tanh_form = F.gelu(x, approximate="tanh")
    xd = x.numpy().astype(np.float64)
    assert np.array_equal(got.numpy(), (0.5 * xd * (1 + special.erf(xd * (1 / np.sqrt(2.0))))).astype(np.float32))
    assert float((got - F.gelu(x)).abs().max()) <= 4.8e-7 * float(x.abs().max())
    assert torch.equal(tanh_form, F.gelu(x, approximate="tanh"))  # falls through to torch

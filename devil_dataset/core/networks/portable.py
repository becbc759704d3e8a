"""Network arithmetic that gives the same bits on Intel and AMD: every convolution and matrix product of
a CPU pass on OpenBLAS's pinned ``sgemm`` instead of oneDNN and MKL, and correctly rounded square roots instead of
MKL's VML.

Why: with the AVX2 pins of :mod:`devil_dataset.core.cpu_pins` in force, torch's own element-wise kernels (ATen) are
the same code on every x86-64 CPU with AVX2, but three things torch hands to Intel's libraries are not:

- oneDNN picks a convolution's algorithm and blocking (the order in which a dot product's terms are summed) from
  the cache sizes it detects: AlexNet's 3x3 convolutions through ``brg_conv_fwd:avx2`` gave other bits under QEMU's
  Intel Haswell model than under its AMD EPYC-Rome model and on a native AMD EPYC (Zen 4);
- MKL's BLAS honours ``MKL_CBWR=AVX2`` on Intel CPUs only ("on non-Intel CPUs ... the AUTO branch is used
  instead", oneMKL Developer Guide, *Getting Started with Conditional Numerical Reproducibility*): RAFT's
  correlation ``matmul``;
- MKL's VML computes torch's float32 ``sqrt`` (and ``exp``, ``log``, ``erf``), not correctly rounded (17% of
  float32 square roots one unit off on AMD) and on another code path on Intel: LPIPS's and PVCS's feature
  normalisation, RAFT's correlation scale.

OpenBLAS with its core type forced (``OPENBLAS_CORETYPE=Haswell``, set by ``cpu_pins.pin_process``) runs one
kernel with compile-time blocking whatever the vendor and caches; its sums depend only on the product's shape (which
kernel covers a column), and the shapes here depend only on the input. It runs on one thread here.

:func:`portable_arithmetic` is a ``TorchFunctionMode``: inside it ``conv1d/2d/3d``, ``linear``, ``matmul``
(``@``), ``mm``, ``bmm``, ``addmm`` and ``baddbmm`` on float32 CPU tensors become an exact copy of the input
patches (``unfold``, "im2col") and one ``sgemm`` of scipy's OpenBLAS per sample and group (called outside the GIL),
bias added after;
``sqrt``, ``rsqrt`` and ``pow(x, ±0.5)`` become numpy's IEEE square root; the exact ``gelu`` (a
oneDNN primitive in torch) is computed in float64 with scipy's ``erf``. Every other operation is torch's own, at
the pinned AVX2 level (``tests/core/test_networks_portable.py`` keeps the list of the functions the networks call,
each routed here or checked). ``core/networks/precision.network_threads`` enters the mode for every CPU network
pass where :func:`portable_in_force` says so.

    >>> import torch
    >>> conv = torch.nn.Conv2d(3, 4, 3, padding=1).eval()
    >>> x = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> with torch.inference_mode():
    ...     with portable_arithmetic():
    ...         y = conv(x)
    ...     ref = conv(x)
    >>> y.shape == ref.shape and bool((y - ref).abs().max() < 1e-5)
    True
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch  # noqa: TID253
import torch.nn.functional as F  # noqa: TID253
from scipy import special  # noqa: TID253
from scipy.linalg import cython_blas  # noqa: TID253
from torch.overrides import TorchFunctionMode  # noqa: TID253

from ..blas_threads import one_blas_thread, scipy_blas_core
from ..cpu_pins import AVX2_PINS, NETWORK_KERNELS_ENV, pin_level
from ..errors import unknown_name

#: Elements of one im2col buffer (float32): larger convolutions are computed in slices of output positions. OpenBLAS's
#: sums depend on a product's shape (which kernel covers a column), so the slicing is a function of the tensor shapes
#: alone, the same on every machine: a constant, not a setting.
PATCH_BUFFER_ELEMENTS = 1 << 24  # 64 MiB
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@functools.lru_cache(maxsize=1)
def _fortran_sgemm() -> Callable[..., None]:
    """scipy's OpenBLAS ``sgemm`` (the Fortran routine ``scipy.linalg.blas.sgemm`` wraps), called through its
    Cython BLAS pointer (``scipy.linalg.cython_blas``, SciPy's public C-level API) with ctypes, which releases the
    GIL for the call: scipy's Python wrapper holds it, so two threads' products ran one after the other."""
    capsule = cython_blas.__pyx_capi__["sgemm"]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    integer, real = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_float)
    prototype = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, integer, integer, integer, real,
                                 ctypes.c_void_p, integer, ctypes.c_void_p, integer, real, ctypes.c_void_p, integer)
    return prototype(pointer(capsule, name(capsule)))


def _blas_sgemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """``c = a @ b`` in BLAS's column-major terms, as ``scipy.linalg.blas.sgemm(1.0, a, b, beta=0.0, c=c,
    overwrite_c=1)`` calls it: ``a`` [m, k] and ``b`` [k, n] made Fortran-contiguous (f2py copies the others the
    same way), leading dimensions their first sides, ``c`` a Fortran-contiguous float32 [m, n] written in place."""
    fa, fb = np.asfortranarray(a, np.float32), np.asfortranarray(b, np.float32)
    (m, k), n = fa.shape, fb.shape[1]
    dims = [ctypes.c_int(v) for v in (m, n, k, max(m, 1), max(k, 1), max(m, 1))]
    _fortran_sgemm()(b"N", b"N", ctypes.byref(dims[0]), ctypes.byref(dims[1]), ctypes.byref(dims[2]),
                     ctypes.byref(ctypes.c_float(1.0)), fa.ctypes.data, ctypes.byref(dims[3]), fb.ctypes.data,
                     ctypes.byref(dims[4]), ctypes.byref(ctypes.c_float(0.0)), c.ctypes.data, ctypes.byref(dims[5]))


def sgemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` of two float32 CPU matrices [M, K] x [K, N] on scipy's OpenBLAS ``sgemm`` (float32 [M, N]; into
    ``out``, a contiguous float32 [M, N] tensor, when given), outside the GIL (:func:`_fortran_sgemm`).

    The product is formed as ``(b.T @ a.T).T`` in BLAS's column-major terms, so row-major inputs are not copied, and
    written into a tensor from torch's allocator (64-byte aligned, as oneDNN's outputs were): ATen's vectorised
    kernels that read it afterwards then see the same alignment in every process (numpy's arrays start at other
    offsets from one run to the next, and some of those kernels sum in an order that follows the alignment).

    >>> a, b = torch.arange(6.0).reshape(2, 3), torch.arange(12.0).reshape(3, 4)
    >>> bool(torch.equal(sgemm(a, b), a @ b))
    True
    """
    an = np.asarray(a.detach().numpy(), dtype=np.float32)
    bn = np.asarray(b.detach().numpy(), dtype=np.float32)
    if out is None:
        out = torch.empty(an.shape[0], bn.shape[1], dtype=torch.float32)
    if an.shape[0] == 0 or bn.shape[1] == 0 or an.shape[1] == 0:
        return out.zero_()
    # beta = 0: BLAS writes C without reading it (OpenBLAS's beta step stores zeros first), so ``out`` need not be
    # cleared, and no NaN left in fresh memory can reach the product
    _blas_sgemm(bn.T, an.T, out.numpy().T)  # Fortran [N, M] over the out tensor's memory
    return out


def _tuple(value: int | Sequence[int], n: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    out = tuple(int(v) for v in value)
    return out * n if len(out) == 1 else out


def _padding(padding: Any, kernel: tuple[int, ...], dilation: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(before, after) per spatial dimension for an int, a tuple, ``"valid"`` or ``"same"`` (stride 1)."""
    n = len(kernel)
    if padding == "valid":
        return ((0, 0),) * n
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in total)
    return tuple((p, p) for p in _tuple(padding, n))


def _patch_view(x: torch.Tensor, kernel: tuple[int, ...], stride: tuple[int, ...],
                dilation: tuple[int, ...]) -> torch.Tensor:
    """``x`` [C, *S] (already padded) -> a view [C, *kernel, *out] of its patches (nothing copied)."""
    view = x
    for dim, (k, s, d) in enumerate(zip(kernel, stride, dilation), start=1):
        view = view.unfold(dim, d * (k - 1) + 1, s)
        if d > 1:
            view = view[..., ::d]
    n = len(kernel)
    return view.permute(0, *range(1 + n, 1 + 2 * n), *range(1, 1 + n))


def _patch_product(w: torch.Tensor, x: torch.Tensor, kernel: tuple[int, ...], stride: tuple[int, ...],
                   dilation: tuple[int, ...]) -> torch.Tensor:
    """``w`` [O, C*prod(kernel)] times the patches of ``x`` [C, *S]: [O, *out]. A 1x1 kernel at stride 1 reads the
    input itself; otherwise the patches are copied ("im2col") in slices of the first output dimension that keep the
    buffer under :data:`PATCH_BUFFER_ELEMENTS` (the slices follow from the shapes alone)."""
    n = len(kernel)
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride):
        out_size = tuple(x.shape[1:])
        return sgemm(w, x.reshape(x.shape[0], -1)).reshape(w.shape[0], *out_size)
    view = _patch_view(x, kernel, stride, dilation)  # [C, *kernel, *out]
    out_size = tuple(view.shape[1 + n:])
    depth = w.shape[1]
    per_row = depth * math.prod(out_size[1:])
    rows = max(1, PATCH_BUFFER_ELEMENTS // max(1, per_row))
    parts = []
    for start in range(0, out_size[0], rows):
        part = view.narrow(1 + n, start, min(rows, out_size[0] - start))
        cols = part.reshape(depth, -1)  # the copy
        parts.append(sgemm(w, cols).reshape(w.shape[0], part.shape[1 + n], *out_size[1:]))
    return parts[0] if len(parts) == 1 else torch.cat(parts, 1)


def conv_nd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride: Any, padding: Any,
            dilation: Any, groups: int) -> torch.Tensor:
    """An N-d convolution (N = 1, 2, 3) as ``torch.nn.functional.conv{N}d`` computes it (zero padding), on
    :func:`sgemm`: per sample and group one product of the weights [O, C*k] with the input patches [C*k, L].

    >>> x, w = torch.rand(2, 4, 5, 6), torch.rand(6, 2, 3, 3)
    >>> y = conv_nd(x, w, None, 1, 1, 1, 2)
    >>> bool((y - torch.nn.functional.conv2d(x, w, None, 1, 1, 1, 2)).abs().max() < 1e-5)
    True
    """
    n = weight.dim() - 2
    batched = x.dim() == n + 2
    if not batched:
        x = x.unsqueeze(0)
    kernel = tuple(weight.shape[2:])
    stride_t, dilation_t = _tuple(stride, n), _tuple(dilation, n)
    pads = _padding(padding, kernel, dilation_t)
    if any(p for pair in pads for p in pair):
        x = F.pad(x, [p for pair in reversed(pads) for p in pair])
    out_channels = weight.shape[0]
    per_group_out = out_channels // groups
    per_group_in = x.shape[1] // groups
    w2 = weight.reshape(groups, per_group_out, -1).contiguous()
    outputs = []
    for sample in x:
        per_group = [_patch_product(w2[g], sample[g * per_group_in:(g + 1) * per_group_in], kernel, stride_t,
                                    dilation_t) for g in range(groups)]
        y = per_group[0] if groups == 1 else torch.cat(per_group, 0)
        if bias is not None:
            y = y + bias.reshape(out_channels, *([1] * n))
        outputs.append(y)
    out = torch.stack(outputs)
    return out if batched else out[0]


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.matmul`` (1-d, 2-d and broadcast batches) with every matrix product on :func:`sgemm`.

    >>> a, b = torch.rand(3, 4, 5), torch.rand(5, 2)
    >>> bool((matmul(a, b) - a @ b).abs().max() < 1e-5)
    True
    """
    if a.dim() == 1 and b.dim() == 1:
        return sgemm(a[None], b[:, None])[0, 0]
    if a.dim() == 1:
        return matmul(a[None], b).squeeze(-2)
    if b.dim() == 1:
        return matmul(a, b[:, None]).squeeze(-1)
    if a.dim() == 2 and b.dim() == 2:
        return sgemm(a, b)
    # numpy's broadcast of the batch shapes: torch.broadcast_shapes imports torch.fx's symbolic shapes (~0.5 s, once)
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(tuple(a.shape[:-2]),
                                                                                  tuple(b.shape[:-2]))
    a3 = a.expand(*batch, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b3 = b.expand(*batch, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    out = torch.empty(len(a3), a.shape[-2], b.shape[-1], dtype=torch.float32)
    for x, y, o in zip(a3, b3, out):  # each product written in place (what stacking them would copy)
        sgemm(x, y, o)
    return out.reshape(*batch, a.shape[-2], b.shape[-1])


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    y = matmul(x, weight.t())
    return y + bias if bias is not None else y


def _addmm(inp: torch.Tensor, m1: torch.Tensor, m2: torch.Tensor, *, beta: float = 1, alpha: float = 1) -> torch.Tensor:
    prod = matmul(m1, m2)
    prod = prod * alpha if alpha != 1 else prod
    return prod if beta == 0 else (inp * beta if beta != 1 else inp) + prod


def _sqrt(x: torch.Tensor) -> torch.Tensor:
    """The correctly rounded square root (numpy's: the hardware's IEEE ``sqrt`` at any vector width), written into a
    tensor from torch's allocator (see :func:`sgemm` on alignment)."""
    out = torch.empty(x.shape, dtype=x.dtype)
    np.sqrt(x.detach().numpy(), out=out.numpy())
    return out


def _rsqrt(x: torch.Tensor) -> torch.Tensor:
    out = _sqrt(x)
    return torch.reciprocal(out, out=out)


def _pow(x: Any, exponent: Any) -> Any:
    if isinstance(x, torch.Tensor) and isinstance(exponent, (int, float)) and exponent in (0.5, -0.5):
        return _sqrt(x) if exponent == 0.5 else _rsqrt(x)
    return torch.pow(x, exponent)


def _gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """GELU, ``x * (1 + erf(x / sqrt 2)) / 2``, in float64 with scipy's erf (compiled C, no CPU dispatch), rounded
    to float32 into a tensor from torch's allocator: torch's float32 ``gelu`` is a oneDNN ``eltwise_gelu_erf``
    primitive on the CPU (DINOv2's MLP). The tanh form falls through to torch."""
    if approximate != "none":
        return F.gelu(x, approximate=approximate)
    xd = x.detach().numpy().astype(np.float64)
    out = torch.empty(x.shape, dtype=x.dtype)
    out.numpy()[...] = 0.5 * xd * (1.0 + special.erf(xd * _INV_SQRT2))
    return out


def _conv(n: int) -> Callable[..., torch.Tensor]:
    def run(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride: Any = 1,
            padding: Any = 0, dilation: Any = 1, groups: int = 1) -> torch.Tensor:
        if weight.dim() != n + 2:
            raise ValueError(f"conv{n}d: weight of {weight.dim()} dimensions")
        return conv_nd(x, weight, bias, stride, padding, dilation, groups)
    return run


#: The torch functions the mode computes itself, and how.
_ROUTED: dict[Any, Callable[..., torch.Tensor]] = {
    F.conv1d: _conv(1), F.conv2d: _conv(2), F.conv3d: _conv(3), torch.conv1d: _conv(1), torch.conv2d: _conv(2),
    torch.conv3d: _conv(3), F.linear: _linear, torch.matmul: matmul, torch.Tensor.matmul: matmul,
    torch.Tensor.__matmul__: matmul, torch.mm: matmul, torch.Tensor.mm: matmul, torch.bmm: matmul,
    torch.Tensor.bmm: matmul, torch.addmm: _addmm, torch.Tensor.addmm: _addmm, torch.baddbmm: _addmm,
    torch.Tensor.baddbmm: _addmm, torch.sqrt: _sqrt, torch.Tensor.sqrt: _sqrt, torch.rsqrt: _rsqrt,
    torch.Tensor.rsqrt: _rsqrt, torch.pow: _pow, torch.Tensor.pow: _pow, torch.Tensor.__pow__: _pow, F.gelu: _gelu,
}


def _float32_cpu(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)


class _PortableMode(TorchFunctionMode):
    """Routes the functions of :data:`_ROUTED` (float32 CPU tensors, outside a CPU autocast region: the ``bf16``
    precision keeps oneDNN's bfloat16 kernels) to this module, whether or not autograd is on in the calling thread
    (a network pass is never differentiated, and a read-ahead thread starts with autograd on: its passes must not
    take other kernels than the main thread's). The results carry no gradient."""

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        impl = _ROUTED.get(func)
        if impl is not None and "out" not in kwargs and not torch.is_autocast_enabled("cpu") \
                and _float32_cpu(args, kwargs):
            return impl(*args, **kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def portable_arithmetic() -> Iterator[None]:
    """Run the block's convolutions, matrix products and square roots the portable way (module docstring), with
    one BLAS thread (:func:`~devil_dataset.core.blas_threads.one_blas_thread`, shared with the other parts of the
    package that need one). The mode is per thread: the read-ahead thread's passes enter their own."""
    with one_blas_thread(), _PortableMode():
        yield


def portable_in_force(device: str | torch.device = "cpu") -> tuple[bool, str]:
    """``(True, why)`` when a pass on ``device`` runs in :func:`portable_arithmetic`: the CPU, an x86-64 with AVX2,
    ATen at its AVX2 kernels and scipy's OpenBLAS at its pinned Haswell core (what the portable values rest on;
    oneDNN and MKL are not used), and :data:`NETWORK_KERNELS_ENV` not ``native``; else ``(False, why not)``
    (oneDNN's and MKL's own kernels run, and the values carry the recorded tolerance).

    >>> portable_in_force("cuda")[0]
    False
    """
    if torch.device(device).type != "cpu":
        return False, f"{device}: a GPU's values are their own reference"
    kernels = os.environ.get(NETWORK_KERNELS_ENV, "portable")
    if kernels == "native":
        return False, f"{NETWORK_KERNELS_ENV}=native: oneDNN's and MKL's kernels (faster; values depend on the CPU)"
    if kernels != "portable":
        raise unknown_name(NETWORK_KERNELS_ENV, kernels, ("portable", "native"))
    level, reason = pin_level()  # what the CPU allows; what is in force is read from the libraries below
    if level != "avx2":
        return False, reason
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        return False, f"ATen runs its {capability} kernels (torch loaded before ATEN_CPU_CAPABILITY was pinned)"
    core = scipy_blas_core()
    if core != AVX2_PINS["OPENBLAS_CORETYPE"]:
        return False, f"scipy's OpenBLAS runs its {core} kernels (scipy loaded before OPENBLAS_CORETYPE was pinned)"
    return True, "convolutions and products on OpenBLAS sgemm (Haswell core), square roots correctly rounded"


__all__ = ["NETWORK_KERNELS_ENV", "PATCH_BUFFER_ELEMENTS", "conv_nd", "matmul",
           "portable_arithmetic", "portable_in_force", "sgemm"]

"""Exact squared distances of 8-bit descriptors from int8 matrix products, where this process computes them exactly.

The exact matcher (:mod:`devil_dataset.core.alignment`) needs every squared L2 distance between two sets of
integer-valued descriptors with values 0..255 (SIFT's are OpenCV's ``uchar`` values stored as float32; ORB's bit
strings unpacked to 0/1). Shifted by 128 they are int8, and

    |q - t|^2 = (|q|^2 - 256 sum(q - 128)) + (|t|^2 - 256 sum(t - 128)) - 2^15 D - 2 (q - 128) . (t - 128)

for D dimensions: one int8 x int8 -> int32 product (torch's ``_int_mm``, oneDNN's s8 GEMM) and two integer terms.
Integer sums have no rounding, so the distances are the same integers whatever kernel, block or summation order
computes them, and the matches the same bits as the float32 product the matcher otherwise uses.

Where oneDNN has VNNI (``vpdpbusd``: AVX-512 VNNI since Cascade Lake and Zen 4) the int8 product is ~2x the float32
product's speed (measured: 0.47 against 0.96 ms for 256 x 128 x 3,000 on one Zen 4 core). With its ISA capped below
VNNI (``ONEDNN_MAX_CPU_ISA``) oneDNN multiplies with ``vpmaddubsw``, whose 16-bit pair sums saturate (255 x -128
twice): wrong distances, which must never reach a match; and on a CPU without VNNI torch does not call oneDNN at all
but its own plain loops, exact and ~170x slower (measured: 82 ms a block with oneDNN off). So the path is taken only
on a CPU with AVX-512 VNNI (``cpuid``, as the libraries see it; an emulated CPU's own answer), with torch's oneDNN
on, and after :func:`int8_status` has checked, once per process, that the products are exact on the worst-case
operands in every shape family (the single-row and single-column kernels and the blocked one): the kernels follow the
ISA oneDNN picks for the process (the CPU, capped by ``ONEDNN_MAX_CPU_ISA``), not the data, so a process either
computes every product exactly or is found out. Without torch (an optional dependency), without ``_int_mm``, or where
a condition fails, the matcher keeps the float32 product: the same matches.

    >>> import numpy as np
    >>> ops = int8_operands(np.array([[0, 3], [255, 0]], np.float32))
    >>> if int8_status()[0]:
    ...     p = block_products(ops, ops, 0, 2, np.empty((2, 2), np.int32))
    ...     print((ops.row_term[:, None] + ops.column_term - 2 * p).tolist())
    ... else:
    ...     print([[0, 65034], [65034, 0]])
    [[0, 65034], [65034, 0]]
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from .blas_threads import ThreadpoolController
from .cpu_pins import cpu_flags, cpuid_vnni

#: The shift that makes 0..255 values int8 (and its square's role in the constant term above).
INT8_SHIFT = 128
#: Shapes (rows, depth, columns) the exactness check multiplies: single row and single column (oneDNN's gemv
#: kernels), a small and a blocked GEMM, at SIFT's depth (128) and ORB's unpacked depth (256).
CHECK_SHAPES: tuple[tuple[int, int, int], ...] = ((1, 128, 64), (64, 128, 1), (5, 256, 7), (96, 128, 200),
                                                  (256, 256, 64))


def _torch() -> Any:
    import torch  # noqa: TID253  (optional dependency, loaded on first use only)
    return torch


def _has_vnni() -> bool:
    vnni = cpuid_vnni()
    return "avx512_vnni" in cpu_flags() if vnni is None else vnni


def _check_products() -> tuple[bool, str]:
    if not _has_vnni():
        return False, ("no AVX-512 VNNI on this CPU: torch's int8 product would be exact but ~170x slower than "
                       "oneDNN's (the float32 product is used)")
    try:
        torch = _torch()
    except ImportError:
        return False, "torch is not installed (the float32 product is used)"
    if not hasattr(torch, "_int_mm"):
        return False, f"torch {torch.__version__} has no _int_mm (the float32 product is used)"
    if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled):
        return False, ("torch's oneDNN (mkldnn) is off: its int8 product would be ~170x slower (the float32 "
                       "product is used)")
    for rows, depth, cols in CHECK_SHAPES:
        # Worst case of a saturating pair sum: 127 (255 once shifted to unsigned) against -128, and the reverse.
        a = np.where(np.arange(rows * depth).reshape(rows, depth) % 3 == 0, -128, 127).astype(np.int8)
        b = np.where(np.arange(depth * cols).reshape(depth, cols) % 5 == 0, 127, -128).astype(np.int8)
        want = a.astype(np.int64) @ b.astype(np.int64)
        try:
            with one_omp_thread():
                got = torch._int_mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        except RuntimeError as err:  # a build or device without the CPU kernel
            return False, f"torch._int_mm failed ({err}); the float32 product is used"
        if not np.array_equal(got.astype(np.int64), want):
            return False, (f"oneDNN's int8 product is not exact on this CPU (no VNNI, or ONEDNN_MAX_CPU_ISA "
                           f"below it: {rows}x{depth}x{cols} saturated); the float32 product is used")
    return True, "int8 products (torch._int_mm, oneDNN), checked exact on this CPU"


@functools.lru_cache(maxsize=1)
def int8_status() -> tuple[bool, str]:
    """``(True, ...)`` when this process's int8 products are exact (checked once, ~2 ms after importing torch);
    else ``(False, why)``. Imports torch when it is installed.

    >>> ok, why = int8_status()
    >>> isinstance(ok, bool) and isinstance(why, str)
    True
    """
    return _check_products()


@functools.lru_cache(maxsize=1)
def _openmp_controllers() -> tuple[Any, ...]:
    _torch()  # torch's OpenMP runtime loaded first: the controllers are found once

    return tuple(ThreadpoolController().select(user_api="openmp").lib_controllers)


@contextlib.contextmanager
def one_omp_thread() -> Iterator[None]:
    """Run the block's oneDNN calls on one OpenMP thread: the calling thread's own setting (``omp_set_num_threads``
    is per thread), restored after. The labellers already run one pair per core; a product on two OpenMP threads
    each would oversubscribe them (measured: 17 ms instead of 0.5 ms for one block in a fresh thread).

    >>> with one_omp_thread():
    ...     pass
    """
    controllers = _openmp_controllers()
    saved = [c.get_num_threads() for c in controllers]
    for c in controllers:
        c.set_num_threads(1)
    try:
        yield
    finally:
        for c, n in zip(controllers, saved):
            c.set_num_threads(n)


@dataclass(frozen=True)
class Int8Operands:
    """One descriptor set in int8 form (:func:`int8_operands`): ``rows`` [N, D] and ``columns`` [D, N] (contiguous
    int8 torch tensors of the values minus 128), ``row_term`` (int32 numpy [N], the query side's term with the
    constant) and ``column_term`` (int32 numpy [N], the train side's term), so that a query row's squared distance
    to a train column is ``row_term + column_term - 2 * rows @ columns``."""

    rows: Any
    columns: Any
    row_term: Any
    column_term: Any


def int8_operands(values: np.ndarray) -> Int8Operands | None:
    """The int8 form of integer-valued descriptors [N, D] with values 0..255 (any dtype); ``None`` when a value is
    outside 0..255 or this process's int8 products are not exact (:func:`int8_status`).

    >>> ops = int8_operands(np.array([[0, 3]], np.float32))
    >>> ops is None or (ops.rows.tolist(), ops.column_term.tolist()) == ([[-128, -125]], [64777])
    True
    """
    if values.ndim != 2 or len(values) == 0 or values.min() < 0 or values.max() > 255 or not int8_status()[0]:
        return None
    torch = _torch()
    v = values.astype(np.int64)
    shifted = v - INT8_SHIFT
    term = np.einsum("ij,ij->i", v, v) - 2 * INT8_SHIFT * shifted.sum(axis=1)
    constant = 2 * INT8_SHIFT * INT8_SHIFT * values.shape[1]
    rows = torch.from_numpy(shifted.astype(np.int8))
    return Int8Operands(rows, rows.t().contiguous(), (term - constant).astype(np.int32), term.astype(np.int32))


def block_products(query: Int8Operands, train: Int8Operands, start: int, stop: int, out: np.ndarray) -> np.ndarray:
    """The int8 products of query rows ``start:stop`` with every train column, written into ``out`` (a C-contiguous
    int32 array of at least ``stop - start`` rows and one column per train vector) and returned (its first rows):
    the squared distances are ``query.row_term[:, None] + train.column_term - 2 * products``.

    Run it inside :func:`one_omp_thread` when other threads compute at the same time.

    >>> ops = int8_operands(np.array([[1, 1], [4, 5]], np.float32))
    >>> buf = np.empty((2, 2), np.int32)
    >>> if ops is not None:
    ...     p = block_products(ops, ops, 1, 2, buf)
    ...     print((ops.row_term[1:2, None] + ops.column_term - 2 * p).tolist())
    ... else:
    ...     print([[25, 0]])
    [[25, 0]]
    """
    torch = _torch()
    torch._int_mm(query.rows[start:stop], train.columns, out=torch.from_numpy(out[: stop - start]))
    return out[: stop - start]


__all__ = ["CHECK_SHAPES", "INT8_SHIFT", "Int8Operands", "block_products", "int8_operands", "int8_status",
           "one_omp_thread"]

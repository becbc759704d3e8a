"""Frechet distance and streaming, mergeable Gaussian statistics of features (FID, VFID; the release's metrics).

The same features give the same distance on every machine, batch size, worker count and thread count:
the statistics are exact integer sums (:class:`GaussianStats`); the distance's matrix product and square root run on
scipy's OpenBLAS with one thread (:func:`fixed_blas`), whose kernels ``core/cpu_pins`` fixes at the AVX2 level when
scipy's linear algebra is loaded after ``devil_dataset`` (:func:`blas_provenance` records whether it was), and the
traces are exactly rounded sums (``math.fsum``).

    >>> frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3))
    3.0
"""
from __future__ import annotations

import contextlib
import math
import warnings
from typing import Iterator

import numpy as np

from ...core.blas_threads import one_blas_thread, scipy_blas_core, threadpool_limits
from ...core.cpu_pins import AVX2_PINS

# The release's metric constants.
FRECHET_EPS = 1e-6  # added to the covariance diagonals when sqrtm(sigma1 sigma2) is not finite (pytorch-fid)
FRECHET_IMAG_ATOL = 1e-3  # tolerated imaginary part on the diagonal of sqrtm (pytorch-fid / the release)


# ----------------------------------------------------------------------------------------------- Frechet distance
def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray,
                     eps: float = FRECHET_EPS) -> float:
    """Frechet distance between N(mu1, sigma1) and N(mu2, sigma2), as pytorch-fid and the release compute it.

    d^2 = |mu1 - mu2|^2 + Tr(sigma1 + sigma2 - 2 sqrt(sigma1 sigma2)); if the matrix square root is not finite,
    ``eps`` is added to both diagonals and it is retried. An imaginary part beyond 1e-3 on the diagonal is
    reported as a warning and dropped (the release warns; pytorch-fid raises).

    >>> frechet_distance(np.zeros(2), np.diag([1.0, 4.0]), np.zeros(2), np.diag([4.0, 9.0]))
    2.0
    """
    from scipy import linalg

    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise ValueError(f"mismatched statistics: {mu1.shape} vs {mu2.shape}, {sigma1.shape} vs {sigma2.shape}")
    diff = mu1 - mu2
    with fixed_blas():
        covmean = linalg.sqrtm(matrix_product(sigma1, sigma2))
        if not np.isfinite(covmean).all():
            offset = np.eye(sigma1.shape[0]) * eps
            covmean = linalg.sqrtm(matrix_product(sigma1 + offset, sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=FRECHET_IMAG_ATOL):

            warnings.warn(f"frechet_distance: imaginary component {np.max(np.abs(covmean.imag))} dropped",
                          RuntimeWarning, stacklevel=2)
        covmean = covmean.real
    return float(exact_sum(diff * diff) + trace(sigma1) + trace(sigma2) - 2 * trace(covmean))


def exact_sum(values: np.ndarray) -> float:
    """The correctly rounded sum of ``values`` (``math.fsum``): the same bits in any order, on any CPU.

    >>> exact_sum(np.array([1e16, 1.0, -1e16]))
    1.0
    """
    return math.fsum(np.asarray(values, dtype=np.float64).ravel().tolist())


def trace(matrix: np.ndarray) -> float:
    """The correctly rounded trace of a square matrix (:func:`exact_sum` of its diagonal).

    >>> trace(np.diag([1.0, 2.0]))
    3.0
    """
    return exact_sum(np.diagonal(matrix))


def matrix_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of float64 matrices on scipy's BLAS (``dgemm``), which the package's pins reach (numpy's BLAS may
    have loaded before them), inside :func:`fixed_blas` for one thread.

    >>> matrix_product(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    from scipy.linalg import blas

    return blas.dgemm(1.0, np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


#: BLAS threads of the Frechet distance: OpenBLAS's blocked LAPACK gave other bits for ``sqrtm`` with 1 and 2 threads.
FRECHET_BLAS_THREADS = 1


@contextlib.contextmanager
def fixed_blas() -> Iterator[None]:
    """Run the block's BLAS and LAPACK calls on :data:`FRECHET_BLAS_THREADS` thread (threadpoolctl; restored after).

    >>> with fixed_blas():
    ...     float(trace(matrix_product(np.eye(3), np.eye(3))))
    3.0
    """

    if FRECHET_BLAS_THREADS != 1:  # benchmarks/networks.py's "before" mode
        with threadpool_limits(limits=FRECHET_BLAS_THREADS, user_api="blas"):
            yield
        return
    with one_blas_thread():  # shared safely with the network passes' products in the read-ahead thread
        yield


def blas_provenance() -> dict[str, object]:
    """Which BLAS kernels the Frechet distances ran on: scipy's OpenBLAS core (``Haswell`` when the AVX2 pin took
    effect), the threads, and whether the value is comparable bit for bit with other pinned x86-64 machines.

    >>> sorted(blas_provenance())
    ['blas', 'blas_core', 'blas_pinned', 'blas_threads']
    """


    core = scipy_blas_core()
    return {"blas": "scipy OpenBLAS (dgemm, sqrtm)", "blas_core": core, "blas_threads": FRECHET_BLAS_THREADS,
            "blas_pinned": core == AVX2_PINS["OPENBLAS_CORETYPE"]}


# Exact feature sums: features are put on a fixed-point grid of 2**-FEATURE_FRACTION_BITS and summed as
# integers, so the statistics do not depend on the batch partition, the order of the videos, the number of workers or
# the BLAS kernels. A grid value q (|q| < 2**41) is split into two 21-bit limbs, q = hi * 2**21 + lo; every product of
# two limbs is below 2**42, so a float64 matrix product of at most EXACT_ROWS rows sums them exactly (below 2**53) in
# any order, with or without FMA, and the integer results accumulate in int64.
FEATURE_FRACTION_BITS = 30  # grid 2**-30 ~ 9.3e-10: every float32 feature >= 2**-7 in magnitude is on it exactly
LIMB_BITS = 21
FEATURE_LIMIT = 2.0 ** (2 * LIMB_BITS - 1 - FEATURE_FRACTION_BITS)  # |feature| < 2048
EXACT_ROWS = 2 ** (53 - 2 * LIMB_BITS)  # rows per exact float64 product (2048)
MAX_SAMPLES = 2 ** (63 - 2 * LIMB_BITS)  # int64 accumulators hold the sums of up to 2**21 feature vectors
_LIMB = 1 << LIMB_BITS
_LOW_MASK = _LIMB - 1
_PAIR_BITS = 2 * LIMB_BITS  # the second-moment sums are kept as high * 2**42 + low, 0 <= low < 2**42


def _grid(features: np.ndarray) -> np.ndarray:
    """int64 grid values round(x * 2**30) of float features (rows); a clear error outside +-FEATURE_LIMIT."""
    x = np.asarray(features, dtype=np.float64).reshape(len(features), -1)
    if not np.isfinite(x).all():
        raise ValueError("GaussianStats: features hold NaN or infinite values")
    if x.size and float(np.abs(x).max()) >= FEATURE_LIMIT:
        raise ValueError(f"GaussianStats: a feature of magnitude {float(np.abs(x).max()):.6g} is beyond the exact "
                         f"range +-{FEATURE_LIMIT:g} of the fixed-point sums")
    return np.rint(np.ldexp(x, FEATURE_FRACTION_BITS)).astype(np.int64)


def _exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a^T b of integer-valued float64 limbs as int64, exact: float64 products over at most EXACT_ROWS rows."""
    out = np.zeros((a.shape[1], b.shape[1]), np.int64)
    for start in range(0, len(a), EXACT_ROWS):
        out += (a[start:start + EXACT_ROWS].T @ b[start:start + EXACT_ROWS]).astype(np.int64)
    return out


def _carry(high: np.ndarray, low: np.ndarray) -> None:
    """Normalise high * 2**42 + low in place so that 0 <= low < 2**42 (int64 arithmetic shifts floor)."""
    carry = low >> _PAIR_BITS
    high += carry
    low -= carry << _PAIR_BITS


# Double-double arithmetic (Dekker 1971; Shewchuk 1997): a value is hi + lo with |lo| <= ulp(hi) / 2. Only IEEE
# element-wise operations, each correctly rounded on every CPU, so the results are the same bits everywhere.
_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLITTER * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _dd_of_int(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int64 -> double-double, exactly (the remainder after the rounded high part fits a double)."""
    hi = x.astype(np.float64)
    return hi, (x - hi.astype(np.int64)).astype(np.float64)


def _dd_add(x: tuple, y: tuple) -> tuple[np.ndarray, np.ndarray]:
    s, e = _two_sum(x[0], y[0])
    e = e + (x[1] + y[1])
    return _two_sum(s, e)


def _dd_scale(x: tuple, power_of_two: float) -> tuple[np.ndarray, np.ndarray]:
    return x[0] * power_of_two, x[1] * power_of_two


def _dd_mul_double(x: tuple, b: float) -> tuple[np.ndarray, np.ndarray]:
    p, e = _two_prod(x[0], np.float64(b))
    return _two_sum(p, e + x[1] * b)


def _dd_mul(x: tuple, y: tuple) -> tuple[np.ndarray, np.ndarray]:
    p, e = _two_prod(x[0], y[0])
    return _two_sum(p, e + (x[0] * y[1] + x[1] * y[0]))


class GaussianStats:
    """Streaming mean and sample covariance (``np.cov(rowvar=False)``) of feature vectors, summed exactly.

    Each feature is rounded to the grid of 2**-30 (exact for float32 values of magnitude at least 2**-7; the largest
    change 4.7e-10) and the sums of the grid values and of their products are integers, accumulated without
    rounding. Adding the same vectors in any batches and any order, or merging the statistics of any partition,
    gives the same bits; :meth:`mean` and :meth:`cov` then convert with fixed element-wise float64 steps (no BLAS),
    so they are the same on every CPU. Limits: features of magnitude below 2048, at most 2**21 vectors.

    >>> g = GaussianStats(); x = np.random.default_rng(0).normal(size=(50, 3))
    >>> g.add(x[:20]); g.add(x[20:])
    >>> bool(np.allclose(g.mean(), x.mean(0)) and np.allclose(g.cov(), np.cov(x, rowvar=False)))
    True
    >>> h = GaussianStats(); h.add(x[::-1])
    >>> bool((h.cov() == g.cov()).all() and (h.mean() == g.mean()).all())
    True
    """

    def __init__(self) -> None:
        self.n = 0
        self.s1: np.ndarray | None = None  # int64 [D]: sum of grid values
        self.s2_high: np.ndarray | None = None  # int64 [D, D]: sum of products = high * 2**42 + low
        self.s2_low: np.ndarray | None = None
        self.pending: list[np.ndarray] = []  # grid rows whose products are not summed yet (< EXACT_ROWS of them)

    def add(self, features: np.ndarray) -> None:
        """Add feature vectors (rows of ``features``, any batch size). Their products are summed EXACT_ROWS rows at a
        time (the sums are exact, so when does not matter)."""
        q = _grid(features)
        if len(q) == 0:
            return
        if self.n + len(q) > MAX_SAMPLES:
            raise ValueError(f"GaussianStats: more than {MAX_SAMPLES} feature vectors in one set")
        if self.s1 is None:
            d = q.shape[1]
            self.s1 = np.zeros(d, np.int64)
            self.s2_high = np.zeros((d, d), np.int64)
            self.s2_low = np.zeros((d, d), np.int64)
        elif q.shape[1] != len(self.s1):
            raise ValueError(f"GaussianStats: {q.shape[1]}-d features added to {len(self.s1)}-d statistics")
        self.s1 += q.sum(axis=0)
        self.n += len(q)
        self.pending.append(q)
        if sum(len(p) for p in self.pending) >= EXACT_ROWS:
            self._flush()

    def _flush(self) -> None:
        """Sum the products of the pending rows into ``s2_high``/``s2_low``."""
        if not self.pending:
            return
        assert self.s2_high is not None and self.s2_low is not None
        q = np.concatenate(self.pending)
        self.pending = []
        hi, lo = (q >> LIMB_BITS).astype(np.float64), (q & _LOW_MASK).astype(np.float64)
        cross = _exact_product(hi, lo)  # sum of q q^T = HH 2**42 + (HL + LH) 2**21 + LL, with LH = HL^T
        cross += cross.T
        self.s2_high += _exact_product(hi, hi) + (cross >> LIMB_BITS)
        self.s2_low += ((cross & _LOW_MASK) << LIMB_BITS) + _exact_product(lo, lo)
        _carry(self.s2_high, self.s2_low)

    def merged(self, other: "GaussianStats") -> "GaussianStats":
        """The statistics of both sets (a new object), exactly as if every feature had been added to one.

        >>> x = np.random.default_rng(1).normal(size=(30, 2))
        >>> a, b, c = GaussianStats(), GaussianStats(), GaussianStats()
        >>> a.add(x[:10]); b.add(x[10:]); c.add(x)
        >>> bool((a.merged(b).cov() == c.cov()).all() and a.merged(b).n == 30)
        True
        """
        out = GaussianStats()
        parts = [p for p in (self, other) if p.n]
        if not parts:
            return out
        if self.n + other.n > MAX_SAMPLES:
            raise ValueError(f"GaussianStats: more than {MAX_SAMPLES} feature vectors in one set")
        for p in parts:
            p._flush()
        first, rest = parts[0]._sums(), [p._sums() for p in parts[1:]]
        out.n = sum(p.n for p in parts)
        out.s1, out.s2_high, out.s2_low = (first[i] + sum(r[i] for r in rest) for i in range(3))
        _carry(out.s2_high, out.s2_low)
        return out

    def mean(self) -> np.ndarray:
        """float64 [D]: the mean of the (grid) features."""
        s1, _, _ = self._sums()
        return np.ldexp(s1.astype(np.float64), -FEATURE_FRACTION_BITS) / self.n

    def cov(self) -> np.ndarray:
        """float64 [D, D]: the sample covariance (divisor n - 1), from the exact sums in fixed element-wise steps.

        The scatter n * sum(q q^T) - s1 s1^T is formed in double-double arithmetic (error-free sums and products of
        IEEE element-wise operations, no BLAS, no fused multiply-add), so features with a large common offset lose
        no digits to cancellation and every CPU gives the same bits.
        """
        self._flush()
        s1, high, low = self._sums()
        n = float(self.n)
        second = _dd_add(_dd_scale(_dd_of_int(high), 2.0 ** _PAIR_BITS), _dd_of_int(low))  # sum of q q^T, exact
        scaled = _dd_mul_double(second, n)
        col = _dd_of_int(s1)
        outer = _dd_mul((col[0][:, None], col[1][:, None]), (col[0][None, :], col[1][None, :]))
        scatter = _dd_add(scaled, (-outer[0], -outer[1]))
        total = scatter[0] + scatter[1]
        return np.ldexp(total / (n * (n - 1.0)), -2 * FEATURE_FRACTION_BITS)

    def _sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(s1, s2_high, s2_low)``; set by the first non-empty :meth:`add`."""
        assert self.s1 is not None and self.s2_high is not None and self.s2_low is not None, "no features added yet"
        return self.s1, self.s2_high, self.s2_low


def frechet_of(a: GaussianStats, b: GaussianStats) -> float:
    """Frechet distance between two accumulated sets; NaN with fewer than 2 samples (covariance undefined)."""
    if a.n < 2 or b.n < 2:
        return float("nan")
    return frechet_distance(a.mean(), a.cov(), b.mean(), b.cov())


__all__ = ["FRECHET_EPS", "FRECHET_IMAG_ATOL", "GaussianStats", "frechet_distance", "frechet_of"]

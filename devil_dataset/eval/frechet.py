"""Frechet distance and streaming, mergeable Gaussian statistics of features (FID, VFID; SPEC section 7).

    >>> frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3))
    3.0
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

# SPEC section 7 constants.
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
    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise ValueError(f"mismatched statistics: {mu1.shape} vs {mu2.shape}, {sigma1.shape} vs {sigma2.shape}")
    diff = mu1 - mu2
    covmean = linalg.sqrtm(sigma1.dot(sigma2))
    if not np.isfinite(covmean).all():
        offset = np.eye(sigma1.shape[0]) * eps
        covmean = linalg.sqrtm((sigma1 + offset).dot(sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=FRECHET_IMAG_ATOL):
            import warnings

            warnings.warn(f"frechet_distance: imaginary component {np.max(np.abs(covmean.imag))} dropped",
                          RuntimeWarning, stacklevel=2)
        covmean = covmean.real
    return float(diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


class GaussianStats:
    """Streaming mean and sample covariance (``np.cov(rowvar=False)``) of feature vectors, in float64.

    Sums are taken around a shift (the first batch's mean) to avoid cancellation.

    >>> g = GaussianStats(); x = np.random.default_rng(0).normal(size=(50, 3))
    >>> g.add(x[:20]); g.add(x[20:])
    >>> bool(np.allclose(g.mean(), x.mean(0)) and np.allclose(g.cov(), np.cov(x, rowvar=False)))
    True
    """

    def __init__(self) -> None:
        self.n = 0
        self.shift: np.ndarray | None = None
        self.s1: np.ndarray | None = None
        self.s2: np.ndarray | None = None

    def add(self, features: np.ndarray) -> None:
        x = np.asarray(features, dtype=np.float64).reshape(len(features), -1)
        if len(x) == 0:
            return
        if self.shift is None:
            self.shift = x.mean(axis=0)
            self.s1 = np.zeros_like(self.shift)
            self.s2 = np.zeros((x.shape[1], x.shape[1]))
        x = x - self.shift
        self.n += len(x)
        self.s1 += x.sum(axis=0)
        self.s2 += x.T @ x

    def merged(self, other: "GaussianStats") -> "GaussianStats":
        """The statistics of both sets (a new object), as if every feature had been added to one.

        ``other``'s sums are moved to this shift: with d = shift_b - shift_a, sum(x - a) = s1_b + n_b d and
        sum((x - a)(x - a)^T) = s2_b + s1_b d^T + d s1_b^T + n_b d d^T.

        >>> x = np.random.default_rng(1).normal(size=(30, 2))
        >>> a, b, c = GaussianStats(), GaussianStats(), GaussianStats()
        >>> a.add(x[:10]); b.add(x[10:]); c.add(x)
        >>> bool(np.allclose(a.merged(b).cov(), c.cov()) and a.merged(b).n == 30)
        True
        """
        out = GaussianStats()
        if self.n == 0 or other.n == 0:
            src = other if self.n == 0 else self
            if src.n:
                shift, s1, s2 = src._sums()
                out.n, out.shift, out.s1, out.s2 = src.n, shift.copy(), s1.copy(), s2.copy()
            return out
        (shift_a, s1_a, s2_a), (shift_b, s1_b, s2_b) = self._sums(), other._sums()
        d = shift_b - shift_a
        out.n, out.shift = self.n + other.n, shift_a.copy()
        out.s1 = s1_a + s1_b + other.n * d
        out.s2 = s2_a + s2_b + np.outer(s1_b, d) + np.outer(d, s1_b) + other.n * np.outer(d, d)
        return out

    def mean(self) -> np.ndarray:
        shift, s1, _ = self._sums()
        return shift + s1 / self.n

    def cov(self) -> np.ndarray:
        _, s1, s2 = self._sums()
        m = s1 / self.n
        return (s2 - self.n * np.outer(m, m)) / (self.n - 1)

    def _sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(shift, s1, s2)``; set by the first non-empty :meth:`add`."""
        assert self.shift is not None and self.s1 is not None and self.s2 is not None, "no features added yet"
        return self.shift, self.s1, self.s2


def frechet_of(a: GaussianStats, b: GaussianStats) -> float:
    """Frechet distance between two accumulated sets; NaN with fewer than 2 samples (covariance undefined)."""
    if a.n < 2 or b.n < 2:
        return float("nan")
    return frechet_distance(a.mean(), a.cov(), b.mean(), b.cov())


__all__ = ["FRECHET_EPS", "FRECHET_IMAG_ATOL", "GaussianStats", "frechet_distance", "frechet_of"]

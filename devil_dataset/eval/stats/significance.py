"""Is a difference real: paired sign-flip tests between methods, unpaired permutation tests between slices, Holm.

Plain functions of per-video values (clip id -> value), ordered by clip id and seeded: the same result however the
videos were split and merged. The paired test (:class:`SignFlipTest`) is inverted into the interval it reports, at
the level Holm applied (:func:`holm_levels`), so a method comparison's interval excludes 0 exactly when it is
significant; the unpaired test is ``scipy.stats.permutation_test``.

    >>> round(sign_flip_test([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]), 4), smallest_sign_flip_p(5)
    (0.125, 0.0625)
"""
from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

from .intervals import DEFAULT_LEVEL, _finite_or_inf, _mean, _num, result_cell

PERMUTATION_RESAMPLES = 100_000  # exact null distribution when it has at most this many members, else Monte Carlo


SIGNIFICANCE_ALPHA = 0.05  # two-sided test level matching DEFAULT_LEVEL


def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


EXACT_SIGN_FLIP_MAX_N = 16  # up to 2^16 sign vectors are enumerated (exact test); above, PERMUTATION_RESAMPLES drawn


_SIGN_CHUNK = 8192  # int8 sign vectors converted and multiplied at a time (bounded memory for many videos)
_FLOAT_SIGNS_BYTES = 2 ** 27  # sign matrices up to 128 MiB are kept as float64 (n <= 167 videos in Monte Carlo)


@lru_cache(maxsize=4)
def _sign_matrix(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The sign vectors of the sign-flip test over ``n`` videos, int8 (read-only, shared by every comparison of the
    same ``n``), and their sums: all 2^n (exact, ``n <=`` :data:`EXACT_SIGN_FLIP_MAX_N`) or
    :data:`PERMUTATION_RESAMPLES` seeded random ones plus the observed all-plus vector (Monte Carlo)."""
    if n <= EXACT_SIGN_FLIP_MAX_N:
        codes = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n)
        signs = (1 - 2 * (codes & 1)).astype(np.int8)
    else:
        rng = np.random.default_rng(seed)
        drawn = rng.integers(0, 2, (PERMUTATION_RESAMPLES, n), dtype=np.int8) * 2 - 1
        signs = np.vstack([np.ones((1, n), np.int8), drawn]).astype(np.int8)
    sums = signs.sum(axis=1, dtype=np.int64).astype(np.float64)
    if signs.size * 8 <= _FLOAT_SIGNS_BYTES:
        signs = signs.astype(np.float64)  # one BLAS product per comparison
    signs.flags.writeable = False
    sums.flags.writeable = False
    return signs, sums


class SignFlipTest:
    """The two-sided paired sign-flip permutation test of mean(d) = delta for per-video differences ``d``, for any
    shift ``delta`` (so that the test can be inverted into an interval that agrees with it by construction).

    p(delta) = share of sign vectors s with |sum s (d - delta)| >= |sum (d - delta)| (the observed vector counts
    once). Exact when n <= :data:`EXACT_SIGN_FLIP_MAX_N` (the smallest p is 2 / 2^n); else over seeded random sign
    vectors.

    >>> t = SignFlipTest([1.0, 2, 3, 4, 5])
    >>> t.p(0.0), t.p(3.0)
    (0.0625, 1.0)
    """

    def __init__(self, d: Sequence[float] | np.ndarray, *, seed: int = 0) -> None:
        self.d = np.asarray(d, np.float64)
        self.n = len(self.d)
        signs, self._b = _sign_matrix(self.n, seed)  # sum s
        self._a = np.concatenate([signs[i:i + _SIGN_CHUNK].astype(np.float64) @ self.d  # sum s d
                                  for i in range(0, len(signs), _SIGN_CHUNK)]) if self.n else np.zeros(1)

    def p(self, delta: float = 0.0) -> float:
        """Two-sided p of mean(d) = ``delta``."""
        if self.n < 1:
            return 1.0
        observed = abs(float(np.sum(self.d - delta)))
        if observed == 0.0:
            return 1.0
        stats = np.abs(self._a - delta * self._b)
        return float(np.mean(stats >= observed * (1 - 1e-12)))

    def interval(self, level: float) -> list[float]:
        """The shifts ``delta`` this test does not reject at ``1 - level`` (p(delta) >= 1 - level): [lo, hi] around
        mean(d), by bisection; (-inf, inf) when no shift can be rejected (1 - level <= the smallest p).
        ``0`` lies outside it exactly when ``p(0) < 1 - level``.

        >>> [round(v, 6) for v in SignFlipTest([1.0, 2, 3, 4, 5, 6]).interval(0.95)]
        [1.0, 6.0]
        """
        alpha = 1.0 - level
        if self.n < 1:
            return [float("nan"), float("nan")]
        centre = float(np.mean(self.d))
        spread = float(np.ptp(self.d)) or max(1.0, abs(centre))
        far = 2 * self.n * spread + abs(centre)
        out = []
        for sign in (-1.0, 1.0):
            inside, outside = centre, centre + sign * far
            if self.p(outside) >= alpha:
                out.append(sign * math.inf)
                continue
            for _ in range(100):  # bisection to the step function's edge, to 1e-12 of the data's spread
                mid = (inside + outside) / 2
                if mid in (inside, outside) or abs(outside - inside) <= 1e-12 * spread:
                    break
                if self.p(mid) >= alpha:
                    inside = mid
                else:
                    outside = mid
            out.append(inside)
        return out


def sign_flip_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = 0) -> float:
    """Two-sided paired permutation test (signs of the per-video differences flipped) of mean(a - b) = 0
    (:class:`SignFlipTest`).

    Exact when n <= :data:`EXACT_SIGN_FLIP_MAX_N`; otherwise seeded Monte Carlo. With 5 videos the smallest
    possible p is 2/32 = 0.0625.

    >>> sign_flip_test([1.0, 2, 3, 4, 5], [0.0, 1, 2, 3, 4])
    0.0625
    """

    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(x) < 1 or np.all(x == y):
        return 1.0
    return SignFlipTest(x - y, seed=seed).p(0.0)


def unpaired_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = 0) -> float:
    """Two-sided permutation test of mean(a) = mean(b) for two different sets of videos (labels shuffled).

    >>> round(unpaired_test([1.0, 2, 3, 4, 5], [11.0, 12, 13, 14, 15]), 4)  # 2 of C(10, 5) = 252 splits
    0.0079
    """
    from scipy.stats import permutation_test

    x, y = _finite_or_inf(a), _finite_or_inf(b)
    if len(x) < 1 or len(y) < 1:
        return float("nan")
    res = permutation_test((x, y), _mean_diff, permutation_type="independent", vectorized=True,
                           n_resamples=PERMUTATION_RESAMPLES, alternative="two-sided",
                           random_state=np.random.default_rng(seed))
    return float(min(1.0, res.pvalue))


def smallest_sign_flip_p(n: int) -> float:
    """The smallest two-sided p a sign-flip test over ``n`` videos can give (exact test): 2 / 2^n.

    >>> smallest_sign_flip_p(5)
    0.0625
    """
    return 2.0 / 2.0 ** n if n >= 1 else 1.0


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (same order as given; NaN stays NaN).

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, np.float64)
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return [float(round(v, 12)) for v in out]


def holm_levels(pvalues: Sequence[float], alpha: float = SIGNIFICANCE_ALPHA) -> list[float]:
    """The test level Holm's step-down procedure applies to each p-value (same order; NaN stays NaN): alpha / (m - k)
    at its step k (0-based, ascending p) while every earlier step rejected, else the level of the step where the
    procedure stopped. A p-value is below its level exactly when its Holm-adjusted p (:func:`holm`) is below alpha,
    so the test inverted at this level gives an interval that excludes 0 exactly when the comparison is significant.

    >>> holm_levels([0.01, 0.04, 0.03])
    [0.016666666666666666, 0.025, 0.025]
    """
    p = np.asarray(pvalues, np.float64)
    out = [float("nan")] * len(p)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    stopped: float | None = None
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        level = alpha / (m - rank)
        if stopped is None and not p[i] < level:
            stopped = level
        out[i] = level if stopped is None else stopped
    return out


def paired_comparison(a: Mapping[str, Any], b: Mapping[str, Any], *, level: float = DEFAULT_LEVEL,
                      seed: int = 0) -> dict[str, Any]:
    """Compare two methods on the videos both scored (clip id -> value): mean of a - b, the sign-flip p and the
    interval of the shifts the same test does not reject at ``1 - level`` (:meth:`SignFlipTest.interval`; it
    excludes 0 exactly when p < 1 - level). Videos where either value is missing (NaN/None) are left out.

    >>> c = paired_comparison({"x": 2.0, "y": 3.0, "z": 4.0}, {"x": 1.0, "y": 1.0, "z": 1.0, "w": 9.0})
    >>> c["n"], c["mean_diff"], c["p"], c["ci"]
    (3, 2.0, 0.25, [-inf, inf])
    """
    row, test = _paired(a, b, seed)
    if test is not None:
        row["ci"], row["ci_level"] = test.interval(level), level
    return row


def _paired(a: Mapping[str, Any], b: Mapping[str, Any], seed: int) -> tuple[dict[str, Any], SignFlipTest | None]:
    """:func:`paired_comparison` without its interval, and the test to invert (None: no paired values)."""
    clips = [c for c in sorted(set(a) & set(b)) if not (math.isnan(_num(a[c])) or math.isnan(_num(b[c])))]
    x = np.asarray([_num(a[c]) for c in clips], np.float64)
    y = np.asarray([_num(b[c]) for c in clips], np.float64)
    row: dict[str, Any] = {"n": len(clips), "mean_diff": float("nan"), "ci": [float("nan"), float("nan")],
                           "ci_level": float("nan"), "p": float("nan")}
    if not len(clips) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return row, None
    d = x - y
    test = SignFlipTest(d, seed=seed)
    row.update(mean_diff=_mean(d), p=1.0 if np.all(d == 0) else test.p(0.0))
    return row, test


def compare_methods(docs: Sequence[Mapping[str, Any]], *, alpha: float = SIGNIFICANCE_ALPHA,
                    seed: int = 0) -> list[dict[str, Any]]:
    """Every paired comparison of the results documents ``docs``: per slice, per per-video metric key, per pair
    of methods (in the order the methods first appear), Holm-adjusted across the pairs of a (slice, metric).

    Returns a list of {"slice", "metric", "a", "b", "n", "mean_diff", "ci", "ci_level", "p", "p_holm"}
    (``comparisons.json``). ``ci`` is the sign-flip test inverted at the level Holm applied to the comparison
    (:func:`holm_levels`; ``ci_level`` = 1 - that level): it excludes 0 exactly when ``p_holm < alpha``, so interval,
    test and verdict agree.

    >>> docs = [{"slice": "s", "method": m, "videos": {c: {"psnr": v + i} for i, c in enumerate("abcdef")}}
    ...         for m, v in (("one", 30.0), ("two", 20.0))]
    >>> [(r["a"], r["b"], r["mean_diff"], r["p"], r["ci"]) for r in compare_methods(docs)]
    [('one', 'two', 10.0, 0.03125, [10.0, 10.0])]
    """
    by_slice: dict[str, dict[str, Mapping[str, Any]]] = {}
    for d in docs:
        by_slice.setdefault(result_cell(d)[1], {})[str(d["method"])] = d
    out: list[dict[str, Any]] = []
    for slice_name, methods in by_slice.items():
        keys = list(dict.fromkeys(k for d in methods.values() for row in d["videos"].values() for k in row))
        for key in keys:
            rows, tests = [], []
            for ma, mb in combinations(methods, 2):
                va = {c: row[key] for c, row in methods[ma]["videos"].items() if key in row}
                vb = {c: row[key] for c, row in methods[mb]["videos"].items() if key in row}
                if not va or not vb:
                    continue
                row, test = _paired(va, vb, seed)
                rows.append({"slice": slice_name, "metric": key, "a": ma, "b": mb, **row})
                tests.append(test)
            ps = [r["p"] for r in rows]
            for r, test, ph, lv in zip(rows, tests, holm(ps), holm_levels(ps, alpha)):
                r["p_holm"] = ph
                if test is not None:
                    r["ci"], r["ci_level"] = test.interval(1.0 - lv), 1.0 - lv
            out.extend(rows)
    return out


def indistinguishable_from_best(comparisons: Sequence[Mapping[str, Any]], slice_name: str, metric: str,
                                best: str, *, alpha: float = SIGNIFICANCE_ALPHA) -> set[str]:
    """Methods whose Holm-adjusted paired p against ``best`` on (slice, metric) is not below ``alpha``.

    >>> rows = [{"slice": "s", "metric": "psnr", "a": "x", "b": "y", "p_holm": 0.5},
    ...         {"slice": "s", "metric": "psnr", "a": "x", "b": "z", "p_holm": 0.01}]
    >>> sorted(indistinguishable_from_best(rows, "s", "psnr", "x"))
    ['y']
    """
    out = set()
    for r in comparisons:
        if r["slice"] != slice_name or r["metric"] != metric or best not in (r["a"], r["b"]):
            continue
        p = r.get("p_holm")
        if p is None or (isinstance(p, float) and math.isnan(p)) or p >= alpha:
            out.add(r["b"] if r["a"] == best else r["a"])
    return out


__all__ = ["EXACT_SIGN_FLIP_MAX_N", "PERMUTATION_RESAMPLES", "SIGNIFICANCE_ALPHA", "SignFlipTest", "compare_methods",
           "holm", "holm_levels", "indistinguishable_from_best", "paired_comparison", "sign_flip_test",
           "smallest_sign_flip_p", "unpaired_test"]

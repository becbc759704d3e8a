"""Is a difference real: paired sign-flip tests between methods, unpaired permutation tests between slices, Holm.

Plain functions of per-video values (clip id -> value), ordered by clip id and seeded: the same result however the
videos were split and merged (``scipy.stats.permutation_test``).

    >>> round(sign_flip_test([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]), 4), smallest_sign_flip_p(5)
    (0.125, 0.0625)
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.stats import permutation_test

from .intervals import DEFAULT_LEVEL, _bootstrap_ci, _finite_or_inf, _mean, _num

PERMUTATION_RESAMPLES = 100_000  # exact null distribution when it has at most this many members, else Monte Carlo


SIGNIFICANCE_ALPHA = 0.05  # two-sided test level matching DEFAULT_LEVEL


def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def sign_flip_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = 0) -> float:
    """Two-sided paired permutation test (signs of the per-video differences flipped) of mean(a - b) = 0.

    Exact when 2^n <= ``PERMUTATION_RESAMPLES``; otherwise seeded Monte Carlo. With 5 videos the smallest
    possible p is 2/32 = 0.0625.

    >>> sign_flip_test([1.0, 2, 3, 4, 5], [0.0, 1, 2, 3, 4])
    0.0625
    """

    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(x) < 1 or np.all(x == y):
        return 1.0
    res = permutation_test((x, y), _mean_diff, permutation_type="samples", vectorized=True,
                           n_resamples=PERMUTATION_RESAMPLES, alternative="two-sided",
                           random_state=np.random.default_rng(seed))
    return float(min(1.0, res.pvalue))


def unpaired_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = 0) -> float:
    """Two-sided permutation test of mean(a) = mean(b) for two different sets of videos (labels shuffled).

    >>> round(unpaired_test([1.0, 2, 3, 4, 5], [11.0, 12, 13, 14, 15]), 4)  # 2 of C(10, 5) = 252 splits
    0.0079
    """

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


def paired_comparison(a: Mapping[str, Any], b: Mapping[str, Any], *, level: float = DEFAULT_LEVEL,
                      seed: int = 0) -> dict[str, Any]:
    """Compare two methods on the videos both scored (clip id -> value): mean of a - b, its paired bootstrap
    interval, and the sign-flip p. Videos where either value is missing (NaN/None) are left out.

    >>> c = paired_comparison({"x": 2.0, "y": 3.0, "z": 4.0}, {"x": 1.0, "y": 1.0, "z": 1.0, "w": 9.0})
    >>> c["n"], c["mean_diff"], c["p"]
    (3, 2.0, 0.25)
    """
    clips = [c for c in sorted(set(a) & set(b)) if not (math.isnan(_num(a[c])) or math.isnan(_num(b[c])))]
    x = np.asarray([_num(a[c]) for c in clips], np.float64)
    y = np.asarray([_num(b[c]) for c in clips], np.float64)
    if not len(clips) or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return {"n": len(clips), "mean_diff": float("nan"), "ci": [float("nan"), float("nan")], "p": float("nan")}
    d = x - y
    return {"n": len(clips), "mean_diff": _mean(d), "ci": _bootstrap_ci(d, level, seed),
            "p": sign_flip_test(x, y, seed=seed)}


def compare_methods(docs: Sequence[Mapping[str, Any]], *, level: float = DEFAULT_LEVEL,
                    seed: int = 0) -> list[dict[str, Any]]:
    """Every paired comparison of the results documents ``docs``: per slice, per per-video metric key, per pair
    of methods (in the order the methods first appear), Holm-adjusted across the pairs of a (slice, metric).

    Returns a list of {"slice", "metric", "a", "b", "n", "mean_diff", "ci", "p", "p_holm"} (``comparisons.json``).

    >>> docs = [{"slice": "s", "method": m, "videos": {c: {"psnr": v + i} for i, c in enumerate("abcdef")}}
    ...         for m, v in (("one", 30.0), ("two", 20.0))]
    >>> [(r["a"], r["b"], r["mean_diff"], r["p"]) for r in compare_methods(docs)]
    [('one', 'two', 10.0, 0.03125)]
    """
    by_slice: dict[str, dict[str, Mapping[str, Any]]] = {}
    for d in docs:
        by_slice.setdefault(str(d.get("slice")), {})[str(d["method"])] = d
    out: list[dict[str, Any]] = []
    for slice_name, methods in by_slice.items():
        keys = list(dict.fromkeys(k for d in methods.values() for row in d["videos"].values() for k in row))
        for key in keys:
            rows = []
            for ma, mb in combinations(methods, 2):
                va = {c: row[key] for c, row in methods[ma]["videos"].items() if key in row}
                vb = {c: row[key] for c, row in methods[mb]["videos"].items() if key in row}
                if not va or not vb:
                    continue
                rows.append({"slice": slice_name, "metric": key, "a": ma, "b": mb,
                             **paired_comparison(va, vb, level=level, seed=seed)})
            for r, ph in zip(rows, holm([r["p"] for r in rows])):
                r["p_holm"] = ph
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


__all__ = ["PERMUTATION_RESAMPLES", "SIGNIFICANCE_ALPHA", "compare_methods", "holm", "indistinguishable_from_best",
           "paired_comparison", "sign_flip_test", "smallest_sign_flip_p", "unpaired_test"]

"""How sure is a number: per-video intervals, paired method comparisons, unpaired slice tests, Holm adjustment.

Everything here is a plain function of per-video values (clip id -> value), so a result is the same however the
videos were split into parts and merged: values are ordered by clip id before any resampling, and every resampling
is seeded. The paper reports standard errors over videos (its Figures 3-5); we add seeded bootstrap intervals
(``scipy.stats.bootstrap``, BCa) and permutation tests (``scipy.stats.permutation_test``).

    >>> s = video_summary([1.0, 2.0, 3.0, 4.0, float("nan")])
    >>> s["n"], s["mean"], round(s["se"], 4), s["level"], s["method"]
    (4, 2.5, 0.6455, 0.95, 'bootstrap BCa, 9999 resamples over videos, seed 0')
    >>> s["ci"][0] < 2.5 < s["ci"][1]
    True
"""
from __future__ import annotations

import math
import warnings
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

DEFAULT_LEVEL = 0.95  # the confidence level the issue (and the paper's +/- 1.96 se bars) use
BOOTSTRAP_RESAMPLES = 9999  # scipy.stats.bootstrap's default number of resamples
BOOTSTRAP_METHOD = "BCa"  # bias-corrected and accelerated percentile interval (scipy's default)
PERMUTATION_RESAMPLES = 100_000  # exact null distribution when it has at most this many members, else Monte Carlo
SIGNIFICANCE_ALPHA = 0.05  # two-sided test level matching DEFAULT_LEVEL


def _finite_or_inf(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """float64 array without NaN (no value; results files write null and summaries skip it)."""
    arr = np.asarray([np.nan if v is None else v for v in values], np.float64)
    return arr[~np.isnan(arr)]


def _mean(arr: np.ndarray) -> float:
    # as eval.pixel.mean_of: no overflow when values sit at the float64 maximum (clipped PSNR of a perfect slice)
    return float(np.sum(arr / len(arr))) if len(arr) else float("nan")


def _bootstrap_ci(arr: np.ndarray, level: float, seed: int) -> list[float]:
    from scipy.stats import bootstrap

    if len(arr) < 2 or not np.all(np.isfinite(arr)):
        return [float("nan"), float("nan")]
    if np.ptp(arr) == 0:  # every video has the same value: the interval is that value
        return [float(arr[0]), float(arr[0])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DegenerateDataWarning for tiny samples: the interval is still returned
        res = bootstrap((arr,), np.mean, confidence_level=level, n_resamples=BOOTSTRAP_RESAMPLES,
                        method=BOOTSTRAP_METHOD, vectorized=True, random_state=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)):  # BCa undefined (e.g. 2 values): fall back to percentile
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = bootstrap((arr,), np.mean, confidence_level=level, n_resamples=BOOTSTRAP_RESAMPLES,
                            method="percentile", vectorized=True, random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return [lo, hi]


def interval_method(seed: int = 0) -> str:
    """The words stored in ``"method"``: which interval, how many resamples, which seed."""
    return f"bootstrap {BOOTSTRAP_METHOD}, {BOOTSTRAP_RESAMPLES} resamples over videos, seed {seed}"


def video_summary(values: Sequence[float], *, level: float = DEFAULT_LEVEL, seed: int = 0) -> dict[str, Any]:
    """Mean over videos with its standard error (sample std, ddof 1, / sqrt(n)) and a seeded bootstrap interval.

    NaN values (no value for that video) are left out, as the results' summaries leave them out; an infinite
    value gives an infinite mean and no se/interval. Fewer than 2 values: se and interval are NaN.

    >>> video_summary([2.0, 2.0, 2.0])["ci"]
    [2.0, 2.0]
    >>> video_summary([5.0])["se"]
    nan
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    arr = _finite_or_inf(values)
    n = len(arr)
    finite = bool(np.all(np.isfinite(arr)))
    se = float(np.std(arr, ddof=1) / math.sqrt(n)) if n >= 2 and finite else float("nan")
    mean = _mean(arr) if finite else float(np.mean(arr)) if n else float("nan")
    return {"n": n, "mean": mean, "se": se, "ci": _bootstrap_ci(arr, level, seed), "level": level,
            "method": interval_method(seed)}


def results_uncertainty(videos: Mapping[str, Mapping[str, Any]], keys: Sequence[str] | None = None, *,
                        level: float = DEFAULT_LEVEL, seed: int = 0) -> dict[str, dict[str, Any]]:
    """``{key: video_summary(...)}`` for every per-video key of a results document's ``videos`` (clip -> row).

    Values are taken in clip-id order, so parts merged in any order give the same numbers as one pass.

    >>> u = results_uncertainty({"b": {"psnr": 30.0}, "a": {"psnr": 32.0}})
    >>> u["psnr"]["n"], u["psnr"]["mean"]
    (2, 31.0)
    """
    if keys is None:
        keys = list(dict.fromkeys(k for row in videos.values() for k in row))
    out = {}
    for key in keys:
        vals = [_num(videos[c].get(key)) for c in sorted(videos) if key in videos[c]]
        if vals:
            out[key] = video_summary(vals, level=level, seed=seed)
    return out


def _num(v: Any) -> float:
    if v is None:
        return float("nan")
    return float(v)  # "inf" strings of a results file read back as floats too


# ------------------------------------------------------------------------------------------------ tests
def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def sign_flip_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = 0) -> float:
    """Two-sided paired permutation test (signs of the per-video differences flipped) of mean(a - b) = 0.

    Exact when 2^n <= ``PERMUTATION_RESAMPLES``; otherwise seeded Monte Carlo. With 5 videos the smallest
    possible p is 2/32 = 0.0625.

    >>> sign_flip_test([1.0, 2, 3, 4, 5], [0.0, 1, 2, 3, 4])
    0.0625
    """
    from scipy.stats import permutation_test

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


# ------------------------------------------------------------------------------------ set-level metrics
JACKKNIFE_GROUPS = 10  # FID/VFID: videos fall into this many groups by clip id; one Frechet distance per group left out


def video_group(clip_id: str, groups: int = JACKKNIFE_GROUPS) -> int:
    """The jackknife group of a video: a stable hash of its clip id (so any split into parts agrees).

    >>> video_group("bikes-076-00000"), video_group("bikes-076-00000", 4)
    (3, 1)
    """
    import hashlib

    return int.from_bytes(hashlib.sha256(clip_id.encode()).digest()[:8], "big") % groups


def add_grouped(groups: dict[int, Any], clip_id: str, features: np.ndarray) -> None:
    """Add one video's feature vectors (rows) to the :class:`~devil_dataset.eval.frechet.GaussianStats` of its
    :func:`video_group` in ``groups`` (group -> statistics; a metric's declared, mergeable state).

    >>> groups = {}; add_grouped(groups, "bikes-076-00000", np.ones((2, 3)))
    >>> {g: s.n for g, s in groups.items()}
    {3: 2}
    """
    from .frechet import GaussianStats

    g = video_group(clip_id)
    if g not in groups:
        groups[g] = GaussianStats()
    groups[g].add(features)


def frechet_distance_cholesky(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray) -> float:
    """The Frechet distance with its trace term from a pivoted Cholesky factor (LAPACK ``dpstrf``, which takes
    semi-definite matrices): sigma1 = B B^T with B of sigma1's numerical rank r, and tr sqrt(sigma1 sigma2) = the
    sum of the square roots of the eigenvalues of the r x r matrix B^T sigma2 B (``scipy.linalg.eigvalsh``).

    The same number as :func:`~devil_dataset.eval.frechet.frechet_distance` (``sqrtm``, as pytorch-fid and the
    release) within 1e-13 on full-rank covariances; on rank-deficient ones (fewer samples than dimensions: VFID,
    FID of a few videos) closer to the exact value (computed from the samples) than ``sqrtm``: 5e-10 against 2e-7
    relative for 2048-d and 240 samples. 0.1 CPU s against ``sqrtm``'s 3 for 1024-d and 150 samples (AMD EPYC): the
    jackknife's leave-a-group-out distances use it (``benchmarks/uncertainty.py --set-level``).

    >>> float(round(frechet_distance_cholesky(np.zeros(2), np.diag([1.0, 4.0]), np.zeros(2), np.diag([4.0, 9.0])), 12))
    2.0
    """
    from scipy.linalg import eigvalsh, lapack

    from .frechet import exact_sum, fixed_blas, matrix_product, trace

    with fixed_blas():
        factor, piv, rank, info = lapack.dpstrf(sigma1, lower=1)  # info 1: rank-deficient (allowed), < 0: bad arg
        if info < 0:
            raise ValueError(f"frechet_distance_cholesky: LAPACK dpstrf rejected sigma1 (info {info})")
        b = np.zeros((len(sigma1), rank))
        b[piv - 1] = np.tril(factor)[:, :rank]  # sigma1 = b b^T (dpstrf: P^T sigma1 P = L L^T)
        inner = matrix_product(matrix_product(b.T, sigma2), b)
        lam = eigvalsh((inner + inner.T) / 2)  # symmetric up to rounding
    diff = np.asarray(mu1) - np.asarray(mu2)
    return float(exact_sum(diff * diff) + trace(sigma1) + trace(sigma2)
                 - 2 * exact_sum(np.sqrt(np.clip(lam, 0.0, None))))


def _scatter(stats: Any) -> tuple[int, np.ndarray, np.ndarray]:
    """(n, mean, sum of (x - mean)(x - mean)^T) of a GaussianStats (the scatter of one sample is 0)."""
    mean = stats.mean()
    if stats.n < 2:
        return stats.n, mean, np.zeros((len(mean), len(mean)))
    return stats.n, mean, stats.cov() * (stats.n - 1)


def _leave_out(total: tuple[int, np.ndarray, np.ndarray], part: tuple[int, np.ndarray, np.ndarray]
               ) -> tuple[int, np.ndarray, np.ndarray]:
    """(n, mean, covariance) of ``total`` without ``part`` (both (n, mean, scatter)), from the scatter identity
    S = S_rest + S_part + n_part d_part d_part^T + n_rest d_rest d_rest^T (d: each mean minus the total mean).
    One D x D matrix at a time, so leaving out every group costs no more memory than one."""
    n, mu, s = total
    k, mu_k, s_k = part
    m = n - k
    if m < 2:
        return m, mu, np.full_like(s, np.nan)
    mu_r = (n * mu - k * mu_k) / m
    d_k, d_r = mu_k - mu, mu_r - mu
    cov = s - s_k
    cov -= k * np.outer(d_k, d_k)
    cov -= m * np.outer(d_r, d_r)
    cov /= m - 1
    return m, mu_r, cov


def grouped_jackknife_frechet(gt_groups: Sequence[Any] | Mapping[int, Any],
                              comp_groups: Sequence[Any] | Mapping[int, Any], *, level: float = DEFAULT_LEVEL,
                              full: float | None = None, videos: int | None = None) -> dict[str, Any]:
    """Delete-a-group jackknife of a Frechet distance (FID, VFID) over groups of videos.

    ``gt_groups[g]``/``comp_groups[g]`` are the :class:`~devil_dataset.eval.frechet.GaussianStats` of the videos of
    group ``g`` (:func:`video_group`; a list, or a dict group -> stats taken in group order); groups empty on either
    side are left out. Each group is left out once (the pooled statistics minus that group's, one at a time) and its
    distance computed with :func:`frechet_distance_cholesky`; the jackknife standard error is
    sqrt((G-1)/G * sum (d_g - mean d)^2) and the interval ``full`` +/- t_{G-1} se, where ``full`` is the distance of
    all videos as the metric reports it (default: :func:`~devil_dataset.eval.frechet.frechet_of` of the pooled
    groups). ``"n"``: ``videos`` (default: the samples in the ground-truth groups, one per video for VFID);
    ``"groups"``: G. Cost: G Cholesky-Frechet distances; memory: the 2 G D x D sums it is given plus ~4 D x D while
    it runs (``benchmarks/uncertainty.py`` measures both for a 150-video slice).

    >>> from devil_dataset.eval.frechet import GaussianStats
    >>> rng = np.random.default_rng(0)
    >>> gts, comps = [GaussianStats() for _ in range(4)], [GaussianStats() for _ in range(4)]
    >>> for g in range(4):
    ...     gts[g].add(rng.normal(size=(30, 3))); comps[g].add(rng.normal(0.5, 1, size=(30, 3)))
    >>> j = grouped_jackknife_frechet(gts, comps, videos=12)
    >>> j["n"], j["groups"], j["ci"][0] < j["mean"] < j["ci"][1], j["method"].startswith("jackknife")
    (12, 4, True, True)
    """
    from scipy.stats import t

    from .frechet import GaussianStats, frechet_of

    if isinstance(gt_groups, Mapping) and isinstance(comp_groups, Mapping):
        keys = sorted(set(gt_groups) & set(comp_groups))
        gt_list, comp_list = [gt_groups[k] for k in keys], [comp_groups[k] for k in keys]
    else:
        gt_list, comp_list = list(gt_groups), list(comp_groups)
    pairs = [(a, b) for a, b in zip(gt_list, comp_list) if a.n and b.n]
    g = len(pairs)
    pooled_a, pooled_b = GaussianStats(), GaussianStats()
    for a, b in pairs:
        pooled_a, pooled_b = pooled_a.merged(a), pooled_b.merged(b)
    if full is None:
        full = frechet_of(pooled_a, pooled_b) if g else float("nan")
    n = int(videos) if videos is not None else sum(a.n for a, _ in pairs)
    out = {"n": n, "mean": float(full), "se": float("nan"), "ci": [float("nan"), float("nan")], "level": level,
           "method": f"jackknife over {g} groups of videos (delete-a-group, t interval)", "groups": g}
    if g < 2 or not math.isfinite(full):
        return out
    total_a, total_b = _scatter(pooled_a), _scatter(pooled_b)
    del pooled_a, pooled_b
    loo = []
    for a, b in pairs:
        na, mu_a, cov_a = _leave_out(total_a, _scatter(a))
        nb, mu_b, cov_b = _leave_out(total_b, _scatter(b))
        loo.append(frechet_distance_cholesky(mu_a, cov_a, mu_b, cov_b) if min(na, nb) >= 2 else float("nan"))
        del cov_a, cov_b
    d = np.asarray(loo)
    if not np.all(np.isfinite(d)):
        return out
    se = float(np.sqrt((g - 1) / g * np.sum((d - d.mean()) ** 2)))
    half = float(t.ppf(0.5 + level / 2, g - 1)) * se
    return {**out, "se": se, "ci": [full - half, full + half]}


def set_level_uncertainty(key: str, gt_groups: Mapping[int, Any], comp_groups: Mapping[int, Any],
                          group_videos: Mapping[int, int], computed: Mapping[str, float] | None = None,
                          ) -> dict[str, dict[str, Any]]:
    """``{key: grouped_jackknife_frechet(...)}`` of a metric's per-group state, centred on the value its
    ``compute()`` gave (``computed[key]``, so the results' ``mean`` is the slice's FID/VFID exactly); ``{}`` when
    no video was added. What :class:`~devil_dataset.eval.perceptual.FIDMetric` and
    :class:`~devil_dataset.eval.i3d_metrics.I3DMetric` return from ``uncertainty()``.

    >>> set_level_uncertainty("fid", {}, {}, {})
    {}
    """
    if not gt_groups:
        return {}
    full = None if computed is None or key not in computed else float(computed[key])
    return {key: grouped_jackknife_frechet(gt_groups, comp_groups, full=full, videos=sum(group_videos.values()))}


__all__ = ["BOOTSTRAP_METHOD", "BOOTSTRAP_RESAMPLES", "DEFAULT_LEVEL", "JACKKNIFE_GROUPS", "PERMUTATION_RESAMPLES",
           "SIGNIFICANCE_ALPHA", "add_grouped", "compare_methods", "frechet_distance_cholesky",
           "grouped_jackknife_frechet", "holm", "indistinguishable_from_best", "interval_method", "paired_comparison",
           "results_uncertainty", "set_level_uncertainty", "sign_flip_test", "smallest_sign_flip_p", "unpaired_test",
           "video_group", "video_summary"]

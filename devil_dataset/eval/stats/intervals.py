"""How sure is a number: per-video summaries with seeded bootstrap intervals, and the intervals of results documents.

Everything here is a plain function of per-video values (clip id -> value), so a result is the same however the
videos were split into parts and merged: values are ordered by clip id before any resampling, and every resampling
is seeded. The paper reports standard errors over videos (its Figures 3-5); we add seeded bootstrap intervals
(``scipy.stats.bootstrap``, BCa).

    >>> s = video_summary([1.0, 2.0, 3.0, 4.0, float("nan")])
    >>> s["n"], s["mean"], round(s["se"], 4), s["level"], s["method"]
    (4, 2.5, 0.6455, 0.95, 'bootstrap BCa, 9999 resamples over videos, seed 0')
    >>> s["ci"][0] < 2.5 < s["ci"][1]
    True
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

DEFAULT_LEVEL = 0.95  # the confidence level of the paper's +/- 1.96 se bars


BOOTSTRAP_RESAMPLES = 9999  # scipy.stats.bootstrap's default number of resamples


BOOTSTRAP_METHOD = "BCa"  # bias-corrected and accelerated percentile interval (scipy's default)


def _num(v: Any) -> float:
    if v is None:
        return float("nan")
    return float(v)  # "inf" strings of a results file read back as floats too


# ------------------------------------------------------------------------------------------------ tests


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


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """(mean, standard error over the values), NaN ignored; (NaN, 0) when none and se 0 for one (the figures' whiskers).

    >>> mean_se([1.0, 3.0, float("nan")])
    (2.0, 1.0)
    """
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return float("nan"), 0.0
    mean = sum(vals) / len(vals)
    if len(vals) < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)
    return mean, math.sqrt(var / len(vals))


#: How a results document without a slice (a folder protocol's, directory mode) is labelled in every table, comparison
#: and report: one label everywhere, so that marks looked up by slice find their rows.
NO_SLICE = "-"


def result_cell(doc: Mapping) -> tuple[str, str]:
    """``(method, slice)`` of a results document as every table, interval, comparison and mark names it: the method
    (``?`` when absent) and the slice (:data:`NO_SLICE` when the document has none).

    >>> result_cell({"method": "A", "slice": None}), result_cell({"method": "B", "slice": "fg_size_low"})
    (('A', '-'), ('B', 'fg_size_low'))
    """
    return str(doc.get("method") or "?"), str(doc.get("slice") or NO_SLICE)


# (method, slice) -> key -> {"n", "mean", "se", "ci", "level", "method"} (:func:`video_summary`).
Intervals = dict[tuple[str, str], dict[str, dict]]


def video_intervals(docs: Iterable[Mapping]) -> Intervals:
    """Per-slice intervals over videos: each document's ``"uncertainty"`` block, or (older results without one)
    the same numbers computed from its per-video values (:func:`results_uncertainty`).

    >>> iv = video_intervals([{"method": "A", "slice": "all", "videos": {"a": {"psnr": 30.0}, "b": {"psnr": 32.0}}}])
    >>> iv[("A", "all")]["psnr"]["mean"], iv[("A", "all")]["psnr"]["se"]
    (31.0, 1.0)
    """
    out: Intervals = {}
    for doc in docs:
        key = result_cell(doc)
        block = doc.get("uncertainty")
        out[key] = dict(block) if block else results_uncertainty(doc.get("videos") or {})
    return out


__all__ = ["BOOTSTRAP_METHOD", "BOOTSTRAP_RESAMPLES", "DEFAULT_LEVEL", "Intervals", "NO_SLICE", "interval_method",
           "mean_se", "result_cell", "results_uncertainty", "video_intervals", "video_summary"]

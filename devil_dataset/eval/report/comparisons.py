"""Paired method comparisons on disk and in words: ``comparisons.json`` and ``devil report --compare A B``.

The rows come from :func:`devil_dataset.eval.stats.significance.compare_methods` (per slice, metric and pair of methods:
mean per-video difference a - b, sign-flip permutation p, Holm-adjusted p, and the interval of the same test
inverted at the level Holm applied to the comparison, ``ci_level``). The verdict is the test's (``p_holm < 0.05``)
and the interval printed beside it excludes 0 exactly then: interval, test and verdict agree.

    >>> rows = [{"slice": "s", "metric": "psnr", "a": "x", "b": "y", "n": 6, "mean_diff": 1.5, "ci": [0.5, 2.5],
    ...          "ci_level": 0.95, "p": 0.03125, "p_holm": 0.03125}]
    >>> print(compare_text(rows, "x", "y"), end="")
    x vs y (two-sided paired sign-flip permutation test over videos, Holm-adjusted, alpha 0.05):
      ([lo, hi] c%: the shifts this test does not reject at the level Holm gives the comparison)
      s: x better on psnr (+1.5 [0.5, 2.5] 95%, p_holm 0.031, 6 videos)
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from ...core.atomic import atomic_write_text
from ...core.errors import DevilError
from ...core.slices import SLICES
from ..protocols.registry import higher_is_better
from ..scoring.results import _clean
from ..stats.intervals import video_intervals
from ..stats.significance import SIGNIFICANCE_ALPHA, compare_methods, smallest_sign_flip_p
from .caveats import counted

COMPARISONS_JSON = "comparisons.json"  # written by `devil report --out` and `devil demo`
COMPARISON_FIELDS = ("slice", "metric", "a", "b", "n", "mean_diff", "ci", "ci_level", "p", "p_holm")


def comparisons_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as strict JSON (NaN -> null), fields in :data:`COMPARISON_FIELDS` order."""

    return json.dumps(_clean([{f: r.get(f) for f in COMPARISON_FIELDS} for r in rows]), indent=1,
                      allow_nan=False) + "\n"


def write_comparisons(rows: Sequence[Mapping[str, Any]], out_dir: str | Path) -> Path:
    """Write ``OUT/comparisons.json`` atomically; returns its path."""
    return atomic_write_text(Path(out_dir) / COMPARISONS_JSON, comparisons_json(rows))


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def compare_text(rows: Sequence[Mapping[str, Any]], a: str, b: str, *, alpha: float = SIGNIFICANCE_ALPHA) -> str:
    """Slice by slice, where ``a`` beats ``b``, where ``b`` beats ``a`` and where they cannot be told apart
    (Holm-adjusted paired p not below ``alpha``); the metrics' better direction comes from the registry."""
    mine = [r for r in rows if {r["a"], r["b"]} == {a, b}]
    if not mine:
        methods = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
        raise DevilError(f"--compare {a} {b}: no slice scores both methods on the same videos "
                         f"(methods in these results: {', '.join(methods) or 'none'})")
    lines = [f"{a} vs {b} (two-sided paired sign-flip permutation test over videos, Holm-adjusted, alpha {alpha:g}):",
             "  ([lo, hi] c%: the shifts this test does not reject at the level Holm gives the comparison)"]
    smallest = min((int(r["n"]) for r in mine), default=0)
    by_slice: dict[str, list[Mapping[str, Any]]] = {}
    for r in mine:
        by_slice.setdefault(str(r["slice"]), []).append(r)
    order = [s for s in SLICES if s in by_slice] + sorted(set(by_slice) - set(SLICES))  # the paper's slice order
    for s, rs in ((s, by_slice[s]) for s in order):
        wins: dict[str, list[str]] = {a: [], b: []}
        tied = []
        for r in rs:
            diff = r["mean_diff"] if r["a"] == a else -r["mean_diff"]  # a - b
            lo, hi = r["ci"] if r["a"] == a else [-r["ci"][1], -r["ci"][0]]
            level = r.get("ci_level")
            conf = "" if level is None or _nan(level) else f" {100 * float(level):.3g}%"
            desc = (f"{r['metric']} ({diff:+.4g} [{lo:.4g}, {hi:.4g}]{conf}, p_holm {r['p_holm']:.2g}, "
                    f"{counted(r['n'], 'video')})"
                    if not _nan(r["p_holm"]) else f"{r['metric']} (no paired values)")
            if _nan(r["p_holm"]) or r["p_holm"] >= alpha or diff == 0:
                tied.append(desc)
            else:
                wins[a if (diff > 0) == higher_is_better(str(r["metric"])) else b].append(desc)
        parts = [f"{m} better on " + ", ".join(w) for m, w in wins.items() if w]
        if tied:
            parts.append("cannot be told apart on " + ", ".join(tied))
        lines.append(f"  {s}: " + "; ".join(parts))
    if smallest and smallest_sign_flip_p(smallest) >= alpha:
        lines.append(f"  note: with {counted(smallest, 'video')} the smallest possible p of this test is "
                     f"{smallest_sign_flip_p(smallest):.3g} >= {alpha:g}: no difference can be significant there")
    return "\n".join(lines) + "\n"


def significance(docs: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """What a report stage needs for Table 1's marks and intervals: (paired comparisons, per-slice intervals).

    >>> docs = [{"slice": "s", "method": m, "videos": {c: {"psnr": v + i} for i, c in enumerate("abc")}}
    ...         for m, v in (("x", 30.0), ("y", 20.0))]
    >>> rows, intervals = significance(docs)
    >>> len(rows), intervals[("x", "s")]["psnr"]["mean"]
    (1, 31.0)
    """

    return compare_methods(docs), video_intervals(docs)


def power_note(counts: Mapping[str, int], *, alpha: float = SIGNIFICANCE_ALPHA) -> str:
    """A plain line when some slice has too few videos for any paired sign-flip test to reach ``alpha``.

    >>> power_note({"fg_size_low": 5, "fg_size_high": 5})[:97]
    'note: with 5 videos per slice no paired sign-flip test can reach p < 0.05 (the smallest two-sided'
    >>> power_note({"fg_size_low": 150})
    ''
    """
    small = sorted({n for n in counts.values() if n and smallest_sign_flip_p(n) >= alpha})
    if not small:
        return ""
    n = small[0]
    return (f"note: with {counted(n, 'video')} per slice no paired sign-flip test can reach p < {alpha:g} (the "
            f"smallest two-sided p is 2/{2 ** n} = {smallest_sign_flip_p(n):.3g}): Table 1's daggers mark every method "
            f"that is not the best, and no method difference on a slice is significant. The findings compare different "
            f"videos (an unpaired test) and can be.")


__all__ = ["COMPARISONS_JSON", "COMPARISON_FIELDS", "compare_text", "comparisons_json", "power_note", "significance",
           "write_comparisons"]

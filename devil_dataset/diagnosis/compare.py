"""Which attributes separate a method's scores: low vs high group per method, metric and attribute, with honest
statistics.

- **Units**: a video attribute's groups hold videos (a video's value = the mean over its pairs in the set), a
  foreground attribute's groups hold pairs, so a video with many masks does not count many times for its camera.
- **Per group**: mean, standard error and the seeded 95% bootstrap interval over the units
  (:func:`devil_dataset.eval.stats.video_summary`).
- **Test**: two-sided unpaired permutation test of mean(high) = mean(low) (the groups hold different videos:
  :func:`devil_dataset.eval.stats.unpaired_test`, ``scipy.stats.permutation_test``), Holm-adjusted across the five
  attributes of one method and metric (:func:`devil_dataset.eval.stats.holm`).
- **Confounding**: the Spearman correlation of every two attributes over the pairs, and for each attribute the other
  attributes its groups differ in: the mean percentile rank of the other attribute in the high group minus that in
  the low group; ``|gap| >= CONFOUND_RANK_GAP`` flags it (a finding on the first attribute may be the other's).

    >>> round(rank_gap([1.0, 2.0, 3.0, 4.0], ["low", "low", "high", "high"]), 3)  # ranks 0, 1/3, 2/3, 1
    0.667
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..eval.protocols.registry import higher_is_better
from ..eval.stats import SIGNIFICANCE_ALPHA, holm, results_uncertainty, unpaired_test
from ..eval.stats.significance import PERMUTATION_RESAMPLES
from .attribute_table import AttributeTable
from .attributes import ATTRIBUTES, VIDEO_ATTRIBUTES
from .scores import PairScores

# A finding is flagged when its groups' mean percentile ranks in another attribute differ by this much (a quarter of
# the ranking: e.g. the high group sits on average at the 62nd percentile of the other attribute, the low at the 37th).
CONFOUND_RANK_GAP = 0.25
LEVELS = ("low", "high")
# A group needs this many units for a permutation test (scipy.stats.permutation_test's minimum per sample).
MIN_GROUP_UNITS = 2


@dataclass
class Finding:
    """One (method, metric key, attribute): the groups' summaries, the difference high - low, its tests."""

    method: str
    key: str
    attribute: str
    unit: str
    low: dict[str, Any]
    high: dict[str, Any]
    diff: float
    p: float
    p_holm: float = math.nan
    confounders: list[str] = field(default_factory=list)
    min_p_holm: float = math.nan  # the smallest Holm p these group sizes allow (NaN: no test ran)

    @property
    def significant(self) -> bool:
        return not math.isnan(self.p_holm) and self.p_holm < SIGNIFICANCE_ALPHA

    @property
    def could_be_significant(self) -> bool:
        """Whether the group sizes allow a significant result at all (:func:`smallest_unpaired_p`, Holm-adjusted)."""
        return not math.isnan(self.min_p_holm) and self.min_p_holm < SIGNIFICANCE_ALPHA

    @property
    def worse(self) -> str:
        """The group where the method does worse (``high``/``low``; ``""`` without a difference)."""
        if math.isnan(self.diff) or self.diff == 0:
            return ""
        better_high = (self.diff > 0) == higher_is_better(self.key)
        return "low" if better_high else "high"


def unit_of(attribute: str, clip_id: str, mask_id: str) -> str:
    """The unit id of a pair for ``attribute``: the clip for a video attribute, ``clip / mask`` for a foreground one."""
    return clip_id if attribute in VIDEO_ATTRIBUTES else f"{clip_id} / {mask_id}"


def group_values(table: AttributeTable, values: Mapping[tuple[str, str], Mapping[str, float]], attribute: str,
                 level: str) -> dict[str, dict[str, float]]:
    """Unit id -> {key: value} of one group (a video's values: the mean over its scored pairs in the group)."""
    acc: dict[str, dict[str, list[float]]] = {}
    for r in table.rows:
        if r.groups.get(attribute) != level or r.key not in values:
            continue
        unit = acc.setdefault(unit_of(attribute, r.clip_id, r.mask_id), {})
        for k, v in values[r.key].items():
            unit.setdefault(k, []).append(float(v))
    return {u: {k: float(np.mean(vs)) for k, vs in ks.items()} for u, ks in sorted(acc.items())}


def group_documents(table: AttributeTable, scores: PairScores) -> list[dict[str, Any]]:
    """Results-like documents, one per (method, attribute, level) with ``slice = <attribute>_<level>``, so the eval
    report's Table 1, sensitivity figures and method comparisons read the groups as they read the slices."""
    docs = []
    for method, values in scores.items():
        for attr in ATTRIBUTES:
            for level in LEVELS:
                videos = group_values(table, values, attr, level)
                if not videos:
                    continue
                keys = sorted({k for v in videos.values() for k in v})
                summary = {k: float(np.mean([v[k] for v in videos.values() if k in v])) for k in keys}
                docs.append({"method": method, "slice": f"{attr}_{level}", "summary": summary, "videos": videos,
                             "uncertainty": results_uncertainty(videos), "num_videos": len(videos)})
    return docs


def rank_gap(other: Sequence[float], groups: Sequence[str]) -> float:
    """Mean percentile rank (0..1) of ``other`` in the high group minus that in the low group (NaN scores left out;
    NaN when a group has none)."""
    from scipy.stats import rankdata

    x = np.asarray(other, np.float64)
    g = np.asarray(groups, object)
    ok = ~np.isnan(x)
    if ok.sum() < 2:
        return math.nan
    ranks = np.full(len(x), np.nan)
    ranks[ok] = (rankdata(x[ok]) - 1) / (ok.sum() - 1)
    hi, lo = ranks[(g == "high") & ok], ranks[(g == "low") & ok]
    if not len(hi) or not len(lo):
        return math.nan
    return float(round(hi.mean() - lo.mean(), 12))


def confounders(table: AttributeTable) -> dict[str, dict[str, float]]:
    """attribute -> other attribute -> rank gap (see :func:`rank_gap`), over the table's pairs."""
    out: dict[str, dict[str, float]] = {}
    for a in ATTRIBUTES:
        groups = [r.groups.get(a, "") for r in table.rows]
        out[a] = {b: rank_gap([r.scores.get(b, math.nan) for r in table.rows], groups) for b in ATTRIBUTES if b != a}
    return out


def attribute_correlations(table: AttributeTable) -> dict[str, dict[str, float]]:
    """Spearman's rho of every two attributes over the pairs where both have a finite score (NaN: fewer than 3)."""
    from scipy.stats import spearmanr

    out: dict[str, dict[str, float]] = {a: {} for a in ATTRIBUTES}
    for a in ATTRIBUTES:
        for b in ATTRIBUTES:
            x = np.array([r.scores.get(a, math.nan) for r in table.rows], np.float64)
            y = np.array([r.scores.get(b, math.nan) for r in table.rows], np.float64)
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
                out[a][b] = math.nan
            else:
                out[a][b] = float(round(spearmanr(x[ok], y[ok]).statistic, 12))
    return out


def smallest_unpaired_p(n_a: int, n_b: int, resamples: int = PERMUTATION_RESAMPLES) -> float:
    """The smallest two-sided p :func:`~devil_dataset.eval.stats.unpaired_test` can give groups of ``n_a`` and
    ``n_b`` units, whatever their values: the exact test (at most ``resamples`` splits) puts the observed split and
    its mirror in the tails, 2 / C(n_a + n_b, n_a); the Monte Carlo test counts the observed one, 2 / (resamples + 1)
    (``scipy.stats.permutation_test``). NaN under :data:`MIN_GROUP_UNITS` units (no test runs).

        >>> round(smallest_unpaired_p(2, 2), 4), smallest_unpaired_p(3, 3), smallest_unpaired_p(1, 5)
        (0.3333, 0.1, nan)
    """
    if n_a < MIN_GROUP_UNITS or n_b < MIN_GROUP_UNITS:
        return math.nan
    splits = math.comb(n_a + n_b, n_a)
    return min(1.0, 2.0 / splits if splits <= resamples else 2.0 / (resamples + 1))


def smallest_holm_p(smallest: Sequence[float]) -> list[float]:
    """A lower bound of each test's Holm-adjusted p given each test's smallest attainable p (``smallest``, NaN: no
    test): the adjusted p is at least the test's own p and at least m times the family's smallest p (m tests).

        >>> smallest_holm_p([0.1, 0.3333, float("nan")])
        [0.2, 0.3333, nan]
    """
    ok = [p for p in smallest if not math.isnan(p)]
    floor = len(ok) * min(ok) if ok else math.nan
    return [p if math.isnan(p) else min(1.0, max(p, floor)) for p in smallest]


def _test(high: Sequence[float], low: Sequence[float], seed: int) -> float:
    """The unpaired permutation p of two groups; NaN when a group has fewer than :data:`MIN_GROUP_UNITS` units."""
    if len(high) < MIN_GROUP_UNITS or len(low) < MIN_GROUP_UNITS:
        return math.nan
    return unpaired_test(high, low, seed=seed)


def compare_groups(table: AttributeTable, scores: PairScores, keys: Sequence[str] | None = None, *,
                   seed: int = 0) -> list[Finding]:
    """Every (method, key, attribute) finding, Holm-adjusted per (method, key), confounders flagged."""
    docs = {(d["method"], d["slice"]): d for d in group_documents(table, scores)}
    gaps = confounders(table)
    found: list[Finding] = []
    for method in scores:
        present = sorted({k for (m, _), d in docs.items() if m == method for k in d["summary"]})
        for key in [k for k in (keys or present) if k in present]:
            family: list[Finding] = []
            smallest: list[float] = []  # each test's smallest attainable p
            for attr in ATTRIBUTES:
                lo, hi = docs.get((method, f"{attr}_low")), docs.get((method, f"{attr}_high"))
                if lo is None or hi is None:
                    continue
                a = [v[key] for v in hi["videos"].values() if key in v]
                b = [v[key] for v in lo["videos"].values() if key in v]
                if not a or not b:
                    continue
                low, high = lo["uncertainty"].get(key, {}), hi["uncertainty"].get(key, {})
                flagged = [o for o, gap in gaps[attr].items() if not math.isnan(gap) and abs(gap) >= CONFOUND_RANK_GAP]
                family.append(Finding(method, key, attr, "videos" if attr in VIDEO_ATTRIBUTES else "pairs", low, high,
                                      float(high.get("mean", math.nan)) - float(low.get("mean", math.nan)),
                                      _test(a, b, seed), confounders=flagged))
                smallest.append(smallest_unpaired_p(len(a), len(b)))
            for f, p in zip(family, holm([f.p for f in family])):
                f.p_holm = p
            for f, floor in zip(family, smallest_holm_p(smallest)):
                f.min_p_holm = floor
            found += family
    return found


__all__ = ["CONFOUND_RANK_GAP", "Finding", "attribute_correlations", "compare_groups", "confounders",
           "group_documents", "group_values", "rank_gap", "smallest_holm_p", "smallest_unpaired_p", "unit_of"]

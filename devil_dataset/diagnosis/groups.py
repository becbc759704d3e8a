"""Low and high groups of each attribute: the release's rank rule on a large set, tertiles on a small one.

- **Release rule** (the release's scorer, used for the DEVIL slices): sort by score; the lowest ``floor(0.16 N)`` are
  *low*, the highest ``floor(0.16 N)`` *high*. Used when ``N >= RANK_RULE_MIN_ITEMS``.
- **Small-set rule**: with fewer items the 16% tails are too small to compare (DAVIS's 50 videos would give 8 per
  group), so the lowest ``floor(N / 3)`` are *low*, the highest ``floor(N / 3)`` *high*, the middle third is left
  out (both groups stay as far apart as the set allows while holding a third of it each).

Ties are broken by the item key (clip id, then mask id), so groups are a function of the scores. An item without a
score (NaN: e.g. a video with no low-camera-motion segment has no scene-motion score) is in no group (the release
ranked NaN highest; a diagnosis leaves it out, as the corrected mode of the release's slices may). +inf (alignment
failed) ranks highest. The video attributes are ranked over distinct videos (every pair of a video shares its
group), the foreground attributes over pairs.

    >>> groups, rule = rank_groups({"a": 0.1, "b": 0.5, "c": 0.9, "d": float("nan")})
    >>> groups, rule.name
    ({'a': 'low', 'c': 'high'}, 'tertiles')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, TypeVar

# The release labels the lowest and highest 16% of the ranked clips.
RELEASE_TAIL = 0.16
# The release's tails hold 150+ videos per DEVIL slice; below this many items (16% tails of 24) the small-set
# rule is used: 150 * 0.16 = 24 items per group is the smallest tail we compare with a permutation test.
RANK_RULE_MIN_ITEMS = 150

K = TypeVar("K")


@dataclass(frozen=True)
class GroupRule:
    """The rule that made an attribute's groups: its ``name``, items ranked, items per group and a sentence."""

    name: str
    items: int
    per_group: int
    text: str


def group_rule(n: int) -> GroupRule:
    """The rule for ``n`` scored items.

        >>> group_rule(50).text
        'tertiles (50 scored items < 150): lowest 16 low, highest 16 high, middle 18 left out'
        >>> group_rule(1000).per_group
        160
    """
    if n >= RANK_RULE_MIN_ITEMS:
        k = int(math.floor(RELEASE_TAIL * n))
        return GroupRule("release", n, k, f"release rank rule: lowest 16% ({k}) low, highest "
                                          f"16% ({k}) high of {n} scored items")
    k = n // 3
    return GroupRule("tertiles", n, k, f"tertiles ({n} scored items < {RANK_RULE_MIN_ITEMS}): lowest {k} low, "
                                       f"highest {k} high, middle {n - 2 * k} left out")


def rank_groups(scores: Mapping[K, float]) -> tuple[dict[K, str], GroupRule]:
    """``(item -> "low" | "high", rule)`` for the items of ``scores``; NaN scores and the middle are left out."""
    scored = [(float(v), k) for k, v in scores.items() if not math.isnan(float(v))]
    scored.sort(key=lambda vk: (vk[0], str(vk[1])))
    rule = group_rule(len(scored))
    out: dict[K, str] = {}
    if rule.per_group < 1:
        return out, rule
    for _, k in scored[: rule.per_group]:
        out[k] = "low"
    for _, k in scored[len(scored) - rule.per_group:]:
        out[k] = "high"
    return dict(sorted(out.items(), key=lambda kv: str(kv[0]))), rule


#: Groups whose medians differ by less than this fraction of the larger median do not separate a set: the release's
#: low and high slices differ by a factor (the release's scorer: 16% tails of a ranked set of hundreds of clips; the
#: mask presets' low and high settings differ by 2x or more, the release's masks), so a gap of a few percent is below
#: any difference DEVIL's slices measure.
MIN_RELATIVE_GAP = 0.05
#: An absolute floor per attribute, below which a gap is measurement noise: a still camera scores up to 0.006 from
#: border resampling alone (the release's scorer), so camera-motion scores closer than 0.01 are the same camera motion.
MIN_ABSOLUTE_GAP: dict[str, float] = {"camera_motion": 0.01}


def _median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def separation_problem(attribute: str, low: list[float], high: list[float]) -> str | None:
    """Why the ``low`` and ``high`` groups of ``attribute`` do not separate the set (a sentence), or ``None`` when
    they do: the groups' medians must differ by at least :data:`MIN_RELATIVE_GAP` of the larger one in magnitude
    and by at least the attribute's :data:`MIN_ABSOLUTE_GAP`; an empty group separates nothing.

        >>> separation_problem("fg_size", [0.10012, 0.10013], [0.10019, 0.10021])  # the same ellipse: 0.07%
        'the groups differ by 0.07% (median 0.10012 vs 0.1002), below the 5% that separates a set'
        >>> separation_problem("fg_size", [0.05], [0.2]) is None
        True
        >>> separation_problem("camera_motion", [0.0], [0.006])
        'the groups differ by 0.006 (median 0 vs 0.006), below the 0.01 that separates a set'
    """
    if not low or not high:
        return None
    lo, hi = _median(low), _median(high)
    if math.isinf(hi) and not math.isinf(lo):
        return None
    gap, scale = hi - lo, max(abs(lo), abs(hi))
    floor = MIN_ABSOLUTE_GAP.get(attribute, 0.0)
    if gap < floor:
        return f"the groups differ by {gap:.3g} (median {lo:.5g} vs {hi:.5g}), below the {floor:g} that separates a set"
    if scale == 0 or gap < MIN_RELATIVE_GAP * scale:
        rel = 0.0 if scale == 0 else gap / scale
        return (f"the groups differ by {rel:.2%} (median {lo:.5g} vs {hi:.5g}), below the {MIN_RELATIVE_GAP:.0%} "
                "that separates a set")
    return None


__all__ = ["GroupRule", "MIN_ABSOLUTE_GAP", "MIN_RELATIVE_GAP", "RANK_RULE_MIN_ITEMS", "RELEASE_TAIL", "group_rule",
           "rank_groups", "separation_problem"]

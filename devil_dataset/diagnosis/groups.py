"""Low and high groups of each attribute: the release's rank rule on a large set, tertiles on a small one.

- **Release rule** (SPEC section 3, used for the DEVIL slices): sort by score; the lowest ``floor(0.16 N)`` are
  *low*, the highest ``floor(0.16 N)`` *high*. Used when ``N >= RANK_RULE_MIN_ITEMS``.
- **Small-set rule**: with fewer items the 16% tails are too small to compare (DAVIS's 50 videos would give 8 per
  group), so the lowest ``floor(N / 3)`` are *low*, the highest ``floor(N / 3)`` *high*, the middle third is left
  out (both groups stay as far apart as the set allows while holding a third of it each).

Ties are broken by the item key (clip id, then mask id), so groups are a function of the scores. An item without a
score (NaN: e.g. a video with no low-camera-motion segment has no scene-motion score) is in no group (the release
ranked NaN highest; a diagnosis leaves it out, as the corrected mode of SPEC section 6 may). +inf (alignment
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

# SPEC section 3: the release labels the lowest and highest 16% of the ranked clips.
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
        return GroupRule("release", n, k, f"release rank rule (SPEC section 3): lowest 16% ({k}) low, highest "
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


__all__ = ["GroupRule", "RANK_RULE_MIN_ITEMS", "RELEASE_TAIL", "group_rule", "rank_groups"]

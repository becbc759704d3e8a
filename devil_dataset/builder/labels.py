"""Low/high labels from clip scores (the release's labels and slices) and hand-made background-scene-motion labels.

- :func:`label_by_rank`: the release's rule, the lowest and highest floor(0.16 N) clips (+inf ranks highest).
  ``mode="release"`` (parity, default) ranks like the release's pandas sort: a stable ascending sort of the
  clips in name order with NaN/None last, so NaN-score clips fall into the *high* tail (the release's slices, last
  bullet); ``mode="corrected"`` leaves NaN/None clips unlabelled (N counts scored clips only).
- :func:`label_by_threshold`: fixed thresholds, for collections too small for rank tails.
- :func:`select_unique_source_first`: the release's "unique source video first" pick from ordered candidates.
- :func:`read_bg_labels_csv` / :func:`merge_bg_labels`: hand labels (``clip_id,label`` rows) that win over the
  automatic score; :func:`load_labels_file` / :func:`save_labels_file` keep them in a JSON labels file.

    >>> r = label_by_rank({"a": 0.1, "b": float("inf"), "c": 0.5, "d": 0.2, "e": 0.3, "f": 0.4, "g": 0.0})
    >>> r.low, r.high, r.labels
    (('g',), ('b',), {'g': 'low', 'b': 'high'})
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..core.atomic import atomic_write_text
from ..core.errors import DevilError

# The release's scorers: each label is a 16% rank tail of the sorted scores.
TAIL_FRACTION = 0.16
LOW, HIGH = "low", "high"
LABEL_VALUES: tuple[str, ...] = (LOW, HIGH)
# Format tag of the JSON labels file written by `devil label import-bg-labels`.
LABELS_FILE_FORMAT = "devil-bg-scene-motion-labels/1"
# Ranking modes (ARCHITECTURE: parity modes are named arguments). "release": pandas' order, NaN last and ranked
# (the release's NaN ranking); "corrected": clips without a score are left out of the ranking.
RANK_MODES: tuple[str, ...] = ("release", "corrected")


@dataclass(frozen=True)
class RankLabels:
    """Low and high candidates: ``low`` in ascending score order, ``high`` in descending order (+inf first)."""

    low: tuple[str, ...]
    high: tuple[str, ...]

    @property
    def labels(self) -> dict[str, str]:
        """clip id -> "low"/"high" for the labelled clips (low first, each group in candidate order)."""
        out = {cid: LOW for cid in self.low}
        out.update({cid: HIGH for cid in self.high})
        return out


def is_missing_score(score: float | None) -> bool:
    """True for a score the release's pandas sort treats as missing (None or NaN).

    >>> is_missing_score(float("nan")), is_missing_score(None), is_missing_score(float("inf"))
    (True, True, False)
    """
    return score is None or math.isnan(float(score))


def high_tail(order: Sequence[str], scores: Mapping[str, float | None], k: int) -> list[str]:
    """The last ``k`` clips of an ascending ``order`` (:func:`ranked_clip_ids`) as the release orders its high tail.

    the release's order inside the high tail: the release sorts its last ``k`` rows again, descending
    (``df_sorted[-N:].sort_values(score, ascending=False)``), and pandas keeps NaN last there too, so the scored
    clips come first, highest first (ties by descending clip id), then the NaN/None clips in name order: they are
    the high tail's lowest-priority candidates, not its highest.

    >>> s = {"a": 0.1, "b": float("inf"), "c": 0.5, "n": float("nan"), "m": None}
    >>> high_tail(ranked_clip_ids(s), s, 3), high_tail(ranked_clip_ids(s), s, 2)
    (['b', 'm', 'n'], ['m', 'n'])
    """
    tail = list(order[len(order) - k :]) if k > 0 else []
    scored = [cid for cid in reversed(tail) if not is_missing_score(scores[cid])]
    return scored + [cid for cid in tail if is_missing_score(scores[cid])]


def ranked_clip_ids(scores: Mapping[str, float | None], mode: str = "release") -> list[str]:
    """Clip ids in ascending score order; ties (e.g. several +inf) by clip id; +inf after every finite score.

    ``mode="release"``: the release's pandas sort (a stable sort of the clips in name order, NaN last), so clips
    whose score is NaN/None come after +inf, in name order. ``mode="corrected"``: NaN/None clips are dropped.

    >>> s = {"b": float("nan"), "a": float("inf"), "c": 0.5, "d": None, "e": float("inf")}
    >>> ranked_clip_ids(s), ranked_clip_ids(s, mode="corrected")
    (['c', 'a', 'e', 'b', 'd'], ['c', 'a', 'e'])
    """
    if mode not in RANK_MODES:
        raise ValueError(f"unknown ranking mode {mode!r}; valid: {', '.join(RANK_MODES)}")
    scored = sorted((float(s), str(cid)) for cid, s in scores.items() if s is not None and not is_missing_score(s))
    order = [cid for _, cid in scored]
    if mode == "release":
        order += sorted(str(cid) for cid, s in scores.items() if is_missing_score(s))
    return order


def label_by_rank(scores: Mapping[str, float | None], tail: float = TAIL_FRACTION, mode: str = "release") -> RankLabels:
    """The release's rank tails: the floor(tail * N) lowest clips are low, the floor(tail * N) highest high.

    One total order (:func:`ranked_clip_ids`: score, then clip id) decides ties, so the two tails never overlap;
    ``high`` is the end of that order in the release's high-tail order (:func:`high_tail`). ``mode="release"``
    (parity): N counts every clip and NaN/None scores rank above +inf, as in the release's pandas sort;
    ``mode="corrected"``: N counts scored clips only and NaN/None clips stay unlabelled.

    >>> label_by_rank({f"c{i}": float(i % 3) for i in range(13)}).labels
    {'c0': 'low', 'c12': 'low', 'c8': 'high', 'c5': 'high'}
    >>> s = {f"c{i}": float(i) for i in range(12)} | {"n": float("nan")}
    >>> label_by_rank(s).high, label_by_rank(s, mode="corrected").high
    (('c11', 'n'), ('c11',))
    """
    if not 0 <= tail <= 0.5:
        raise ValueError(f"tail must be in [0, 0.5], got {tail}")
    order = ranked_clip_ids(scores, mode)
    k = math.floor(tail * len(order) + 1e-9)  # 1e-9: 0.16 * 25 must give 4, not 3.9999
    return RankLabels(tuple(order[:k]), tuple(high_tail(order, scores, k)))


def label_by_threshold(scores: Mapping[str, float | None], low_max: float, high_min: float) -> RankLabels:
    """Fixed thresholds: score <= ``low_max`` is low, score >= ``high_min`` (or +inf) is high.

    For collections too small for rank tails. None/NaN scores are left unlabelled.

    >>> label_by_threshold({"a": 0.01, "b": 0.2, "c": float("inf"), "d": 0.5}, 0.05, 0.3).labels
    {'a': 'low', 'c': 'high', 'd': 'high'}
    """
    if not low_max < high_min:
        raise ValueError(f"low_max ({low_max}) must be below high_min ({high_min})")
    order = ranked_clip_ids(scores, mode="corrected")
    low = tuple(cid for cid in order if float(scores[cid]) <= low_max)  # type: ignore[arg-type]
    high = tuple(cid for cid in reversed(order) if float(scores[cid]) >= high_min)  # type: ignore[arg-type]
    return RankLabels(low, high)


def select_unique_source_first(ordered_clip_ids: Sequence[str], source_of: Mapping[str, str], k: int) -> list[str]:
    """Pick ``k`` clips "unique source video first" (the release's slices).

    In candidate order, take the first clip of every distinct source, then every source's second clip, and so
    on; the result keeps that round-by-round order.

    >>> select_unique_source_first(["a1", "a2", "b1", "c1", "b2"],
    ...                            {"a1": "a", "a2": "a", "b1": "b", "c1": "c", "b2": "b"}, 4)
    ['a1', 'b1', 'c1', 'a2']
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    seen: dict[str, int] = {}
    keyed = []
    for pos, cid in enumerate(ordered_clip_ids):
        source = source_of[cid]
        round_ = seen.get(source, 0)
        seen[source] = round_ + 1
        keyed.append((round_, pos, cid))
    return [cid for _, _, cid in sorted(keyed)[:k]]


def read_bg_labels_csv(path: str | os.PathLike) -> dict[str, str]:
    """Read hand labels: a CSV with ``clip_id,label`` rows, label ``low`` or ``high`` (case-insensitive).

    A header row ``clip_id,label`` is optional; blank lines and lines starting with ``#`` are skipped. Any other
    problem (missing column, unknown label, empty clip id, a clip listed twice with different labels) raises
    :class:`DevilError` naming the file and line.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DevilError(f"{path}: cannot read labels CSV ({exc.__class__.__name__}: {exc})") from None
    out: dict[str, str] = {}
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in row]
        if lineno == 1 and [c.lower() for c in cells[:2]] == ["clip_id", "label"]:
            continue
        if len(cells) != 2:
            raise DevilError(f"{path}:{lineno}: expected 2 columns 'clip_id,label', got {len(cells)}: "
                             f"{','.join(row)!r}")
        clip_id, label = cells[0], cells[1].lower()
        if not clip_id:
            raise DevilError(f"{path}:{lineno}: empty clip_id")
        if label not in LABEL_VALUES:
            raise DevilError(f"{path}:{lineno}: label must be 'low' or 'high', got {cells[1]!r}")
        if out.get(clip_id, label) != label:
            raise DevilError(f"{path}:{lineno}: clip {clip_id!r} already labelled {out[clip_id]!r} earlier in the file")
        out[clip_id] = label
    return out


def merge_bg_labels(auto: Mapping[str, str | None], manual: Mapping[str, str]) -> dict[str, str]:
    """Background-scene-motion labels: manual labels win over automatic ones; unlabelled (None) clips drop out.

    >>> merge_bg_labels({"a": "low", "b": "high", "c": None}, {"b": "low", "d": "high"})
    {'a': 'low', 'b': 'low', 'd': 'high'}
    """
    for cid, label in manual.items():
        if label not in LABEL_VALUES:
            raise ValueError(f"manual label of {cid!r} must be 'low' or 'high', got {label!r}")
    out = {cid: label for cid, label in auto.items() if label is not None}
    out.update(manual)
    return out


def load_labels_file(path: str | os.PathLike) -> dict[str, str]:
    """Read a labels file written by :func:`save_labels_file`; a missing file is an empty mapping."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DevilError(f"{path}: not a readable labels file ({exc})") from None
    if (not isinstance(data, dict) or data.get("format") != LABELS_FILE_FORMAT
            or not isinstance(data.get("labels"), dict)):
        raise DevilError(f"{path}: not a labels file (expected a JSON object with format {LABELS_FILE_FORMAT!r})")
    labels = data["labels"]
    bad = [cid for cid, label in labels.items() if label not in LABEL_VALUES]
    if bad:
        raise DevilError(f"{path}: clip {bad[0]!r} has label {labels[bad[0]]!r}; expected 'low' or 'high'")
    return dict(labels)


def save_labels_file(path: str | os.PathLike, labels: Mapping[str, str]) -> Path:
    """Write manual labels atomically as ``{"format": ..., "labels": {clip_id: label}}`` with sorted keys."""
    data = {"format": LABELS_FILE_FORMAT, "labels": {cid: labels[cid] for cid in sorted(labels)}}
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")

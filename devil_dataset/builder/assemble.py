"""Slice construction (the release's slices): which videos and which masks form each of the ten slices plus ``all``.

Pure planning over clip records and scores (no pixels), then :func:`materialize_pair`, which cuts one
video-mask pair to the evaluation size.

Release rules reproduced here:

- video candidates of ``cm-l``/``cm-h`` (``bsm-l``/``bsm-h``) are the rank tails of the camera-motion
  (background-scene-motion) score, lowest tail in ascending order, highest tail in descending order, +inf highest;
- from the candidates, ``per_slice`` videos are chosen "unique source video first" (first clip of every distinct
  source in score order, then every source's second clip, ...); the ``all`` list is shuffled with
  ``RandomState(seed)`` (0 in the release) and cut to ``per_slice``;
- the mask list of a subset is every preset containing the subset (sorted ``devil_<preset>`` order) x indices
  0..999; ``RandomState(seed)`` shuffles it, then draws ``randint(2, size=len, dtype=bool)`` reversal flags;
- pairing (the release's pairing): row i of a slice is the release's folder ``{i:05d}``: the i-th video of the
  slice's video list (the shuffled ``all`` list; the cm/bsm lists in name order) with the i-th entry of the
  shuffled mask list and the i-th reversal flag; the row keeps that index as ``release_index``; a clip with T
  frames uses mask frames 0..T-1 of the (possibly reversed) 90-frame mask;
- ranking (the release's NaN ranking): ``rank_mode="release"`` ranks NaN scores last like the release's pandas
  sort (they land in the high tail, as its last candidates); ``rank_mode="corrected"`` leaves them out.

Scaled-down rule for small collections (:func:`slice_sizes`): the release's 150 videos per slice from 16% tails
need N >= 938 clips. We use ``tail = max(1, min(floor(N / 3), max(floor(0.16 N), 150)))`` candidates per
low/high label and ``per_slice = min(150, tail)`` videos in *every* slice (``all`` included). That is exactly the
release for N >= 938, keeps 150 videos per slice down to N = 450 (tails grow up to a third of the clips), and
below that uses the lowest and highest thirds (the middle third stays unlabelled, so low and high stay apart).

    >>> slice_sizes(1250)
    SliceSizes(tail=200, per_slice=150)
    >>> slice_sizes(600), slice_sizes(12)
    (SliceSizes(tail=150, per_slice=150), SliceSizes(tail=4, per_slice=4))
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from ..core.cover_crop import cover_crop_frames
from ..core.masks import mask_seed
from ..core.slices import (
    EVAL_SIZE,
    RELEASE_MASKS_PER_PRESET,
    RELEASE_VIDEOS_PER_SLICE,
    SLICES,
    VIDEO_SUBSETS,
    release_mask_ids,
)
from .labels import high_tail, ranked_clip_ids, select_unique_source_first

# The release's labels: each label is a 16% rank tail.
TAIL_FRACTION = 0.16
# The release's slices: the shuffles use RandomState(0).
RELEASE_SEED = 0
LOW, HIGH = "low", "high"
# Scaled-down rule (module docstring): below the release's size, a tail is at most a third of the clips.
SMALL_TAIL_DIVISOR = 3


class SliceSizes(NamedTuple):
    """Rank-tail size (candidates per low/high label) and videos per slice."""

    tail: int
    per_slice: int


def slice_sizes(
    num_clips: int, *, videos_per_slice: int = RELEASE_VIDEOS_PER_SLICE, tail_fraction: float = TAIL_FRACTION
) -> SliceSizes:
    """The documented scaled-down rule (module docstring): release sizes for N >= 938, thirds for N < 450.

    >>> slice_sizes(938), slice_sizes(5), slice_sizes(1)
    (SliceSizes(tail=150, per_slice=150), SliceSizes(tail=1, per_slice=1), SliceSizes(tail=1, per_slice=1))
    """
    if num_clips < 1:
        raise ValueError("need at least one clip to build slices")
    release_tail = math.floor(tail_fraction * num_clips + 1e-9)  # 1e-9: 0.16 * 25 must give 4
    tail = max(1, min(num_clips // SMALL_TAIL_DIVISOR, max(release_tail, videos_per_slice)))
    return SliceSizes(tail, min(videos_per_slice, tail))


@dataclass(frozen=True)
class ClipInfo:
    """What slice construction needs to know about one curated clip."""

    clip_id: str
    source: str
    num_frames: int
    fps: float = 30.0
    camera_motion_score: float = math.nan
    bg_scene_motion_score: float = math.nan
    bg_scene_motion_manual: str | None = None  # "low"/"high" from a hand label; wins over the score
    source_first_frame: int = -1
    attribution: str = ""
    license: str = ""


@dataclass(frozen=True)
class MaskRef:
    """One mask of the release list: preset, index (0..999), its seed and the time-reversal flag."""

    preset: str
    index: int
    reversed: bool

    @property
    def mask_id(self) -> str:
        return f"devil_{self.preset}_{self.index:05d}"

    @property
    def seed(self) -> int:
        return mask_seed(self.index)


@dataclass(frozen=True)
class Pair:
    """Row i of a slice: video i paired with mask i; ``release_index`` = i, the release's folder ``{i:05d}``."""

    clip: ClipInfo
    mask: MaskRef
    release_index: int = -1


@dataclass
class SlicePlan:
    """The whole build plan: per config, its pairs in row order; plus the label of every clip."""

    sizes: SliceSizes
    videos: dict[str, list[str]]  # video subset -> clip ids in release folder order (``all`` shuffled, others sorted)
    pairs: dict[str, list[Pair]]  # config name -> pairs
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # clip id -> {attribute: low/high}


def rank_tails(scores: Mapping[str, float], tail: int, *, mode: str = "release") -> tuple[list[str], list[str]]:
    """Low and high candidates: the ``tail`` lowest clips (ascending) and the ``tail`` highest, in the release's
    high-tail order (:func:`~devil_dataset.builder.labels.high_tail`: descending, NaN after every scored clip).

    Same total order as :func:`devil_dataset.builder.labels.label_by_rank` ((score, clip id); in ``"release"``
    mode NaN ranks above +inf, in ``"corrected"`` mode NaN is left out), with the tail given as a count (see
    :func:`slice_sizes`).

    >>> rank_tails({"a": 0.1, "b": float("inf"), "c": 0.5, "d": 0.2}, 1)
    (['a'], ['b'])
    >>> rank_tails({"a": 0.1, "b": float("inf"), "n": float("nan")}, 1), rank_tails(
    ...     {"a": 0.1, "n": float("nan")}, 1, mode="corrected")
    ((['a'], ['n']), ([], []))
    >>> rank_tails({"a": 0.1, "b": float("inf"), "c": 0.5, "n": float("nan")}, 2)  # the release ranks NaN after +inf
    (['a', 'c'], ['b', 'n'])
    """
    order = ranked_clip_ids(scores, mode)
    k = min(tail, len(order) // 2)
    return order[:k], high_tail(order, scores, k)


def video_lists(
    clips: Sequence[ClipInfo], sizes: SliceSizes, *, seed: int = RELEASE_SEED, rank_mode: str = "release"
) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """Video subsets (``all``, ``cm-l``, ``cm-h``, ``bsm-l``, ``bsm-h``) in the release's folder order, and labels.

    ``all``: the name-sorted clip list shuffled in place by ``RandomState(seed)``, its first ``per_slice`` names in
    shuffled order; the cm/bsm subsets: their ``per_slice`` chosen clips sorted by name (the release's slices).
    """
    by_id = {c.clip_id: c for c in clips}
    if len(by_id) != len(clips):
        raise ValueError("clip ids must be unique")
    source_of = {c.clip_id: c.source for c in clips}
    labels: dict[str, dict[str, str]] = {cid: {} for cid in by_id}
    out: dict[str, list[str]] = {}

    names = sorted(by_id)
    np.random.RandomState(seed).shuffle(names)  # the release shuffles the list itself
    out["all"] = names[: sizes.per_slice]

    cm_low, cm_high = rank_tails({c.clip_id: c.camera_motion_score for c in clips}, sizes.tail, mode=rank_mode)
    manual = {c.clip_id: c.bg_scene_motion_manual for c in clips if c.bg_scene_motion_manual in (LOW, HIGH)}
    bsm_scores = {c.clip_id: c.bg_scene_motion_score for c in clips}
    if manual:
        # Manual labels win (the paper labelled BG scene motion by hand): candidates are the hand-labelled clips,
        # ordered by score when there is one (NaN last), then by name.
        def key(cid: str, sign: float) -> tuple:
            s = bsm_scores[cid]
            return (math.isnan(s), sign * s if not math.isnan(s) else 0.0, cid)

        bsm_low = sorted([c for c, label in manual.items() if label == LOW], key=lambda c: key(c, 1.0))
        bsm_high = sorted([c for c, label in manual.items() if label == HIGH], key=lambda c: key(c, -1.0))
    else:
        bsm_low, bsm_high = rank_tails(bsm_scores, sizes.tail, mode=rank_mode)
    for attr, low, high in (("camera_motion", cm_low, cm_high), ("bg_scene_motion", bsm_low, bsm_high)):
        for cid in low:
            labels[cid][attr] = LOW
        for cid in high:
            labels[cid][attr] = HIGH
    for subset, cands in (("cm-l", cm_low), ("cm-h", cm_high), ("bsm-l", bsm_low), ("bsm-h", bsm_high)):
        out[subset] = sorted(select_unique_source_first(cands, source_of, sizes.per_slice))
    assert set(out) == set(VIDEO_SUBSETS)
    return out, labels


def mask_list(
    mask_subset: str, count: int, *, seed: int = RELEASE_SEED, masks_per_preset: int = RELEASE_MASKS_PER_PRESET
) -> list[MaskRef]:
    """The first ``count`` masks of a subset's shuffled release list with their reversal flags, in shuffled order.

    Entry i is the release's mask folder ``{i:05d}``: ``RandomState(seed)`` shuffles the list, then draws one flag
    per entry; entry i gets flag i (the release's slices).

    >>> [(m.mask_id, m.reversed) for m in mask_list("fgd-h", 2)]
    [('devil_fgs-l_fgm-h_fgd-h_00230', True), ('devil_fgs-h_fgm-h_fgd-h_00668', True)]
    """
    ids = release_mask_ids(mask_subset, masks_per_preset)
    rs = np.random.RandomState(seed)
    rs.shuffle(ids)  # the release shuffles the list itself
    flags = rs.randint(2, size=len(ids), dtype=bool)
    return [MaskRef(preset, index, bool(flag)) for (preset, index), flag in zip(ids[:count], flags[:count])]


def plan_slices(
    clips: Sequence[ClipInfo], *, seed: int = RELEASE_SEED, sizes: SliceSizes | None = None, rank_mode: str = "release"
) -> SlicePlan:
    """Plan every config (``all`` + the ten slices); row i is the release's folder ``{i:05d}``.

    Video i of the slice's video list (:func:`video_lists`) with mask i of its shuffled mask list
    (:func:`mask_list`); ``rank_mode`` is passed to :func:`rank_tails` ("release": NaN scores rank highest).

    >>> plan = plan_slices([ClipInfo(f"s{i}-00000", f"s{i}", 45, camera_motion_score=i / 10) for i in range(6)])
    >>> [(p.release_index, p.clip.clip_id, p.mask.mask_id) for p in plan.pairs["camera_motion_high"]]
    [(0, 's4-00000', 'devil_fgs-h_fgm-l_fgd-l_00069'), (1, 's5-00000', 'devil_fgs-h_fgm-h_fgd-l_00675')]
    """
    sizes = sizes or slice_sizes(len(clips))
    videos, labels = video_lists(clips, sizes, seed=seed, rank_mode=rank_mode)
    by_id = {c.clip_id: c for c in clips}
    pairs: dict[str, list[Pair]] = {}
    for name, spec in SLICES.items():
        vids = videos[spec.videos]
        masks = mask_list(spec.masks, len(vids), seed=seed)
        pairs[name] = [Pair(by_id[v], m, i) for i, (v, m) in enumerate(zip(vids, masks))]
    return SlicePlan(sizes, videos, pairs, labels)


def mask_frames_for_clip(mask: np.ndarray, num_frames: int, reverse: bool) -> np.ndarray:
    """Time-reverse a 90-frame mask if flagged (frame k -> 89 - k), then take frames 0..T-1.

    A clip longer than the mask cycles it back and forth (the release's behaviour): 0..89, 88..0, 1.. .

    >>> m = np.arange(4)[:, None, None] * np.ones((1, 1, 1), int)
    >>> mask_frames_for_clip(m, 7, False)[:, 0, 0].tolist()
    [0, 1, 2, 3, 2, 1, 0]
    >>> mask_frames_for_clip(m, 2, True)[:, 0, 0].tolist()
    [3, 2]
    """
    if reverse:
        mask = mask[::-1]
    n = len(mask)
    if num_frames <= n:
        return np.ascontiguousarray(mask[:num_frames])
    period = max(1, 2 * n - 2)
    idx = [(t % period) if (t % period) < n else period - (t % period) for t in range(num_frames)]
    return np.ascontiguousarray(mask[idx])


def materialize_pair(
    pair: Pair,
    load_frames: Callable[[ClipInfo], np.ndarray],
    load_mask: Callable[[str, int], np.ndarray],
    *,
    size: tuple[int, int] = EVAL_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """Frames uint8 [T, H, W, 3] and hole bool [T, H, W] of one row, both at ``size`` (W, H).

    ``load_frames(clip)`` gives the clip's frames at any resolution (cover-cropped here); ``load_mask(preset,
    index)`` gives the unreversed 90-frame hole mask already at ``size``.
    """
    frames = load_frames(pair.clip)
    if frames.shape[1:3] != (size[1], size[0]):
        frames = cover_crop_frames(frames, size)
    mask = load_mask(pair.mask.preset, pair.mask.index)
    if mask.shape[1:] != (size[1], size[0]):
        raise ValueError(f"mask {pair.mask.mask_id}: expected {size[0]}x{size[1]}, got {mask.shape[2]}x{mask.shape[1]}")
    hole = mask_frames_for_clip(mask, len(frames), pair.mask.reversed)
    return frames, hole


def plan_summary(plan: SlicePlan) -> dict:
    """A JSON-friendly description of the plan (stored with the build; its hash keys resume)."""
    return {
        "sizes": {"tail": plan.sizes.tail, "per_slice": plan.sizes.per_slice},
        "configs": {
            name: [[p.clip.clip_id, p.mask.mask_id, p.mask.reversed] for p in pairs]
            for name, pairs in plan.pairs.items()
        },
    }


def preset_labels(preset: str) -> dict[str, str]:
    """``fg_*`` labels of a preset name, e.g. ``fgs-h_fgm-l_fgd-h`` -> fg_size high, fg_motion low, ...

    >>> preset_labels("fgs-h_fgm-l_fgd-h")["fg_size_label"]
    'high'
    """
    parts = dict(p.split("-") for p in preset.split("_")) if preset else {}
    names = {"fgs": "fg_size_label", "fgm": "fg_motion_label", "fgd": "fg_displacement_label"}
    word = {"l": LOW, "h": HIGH}
    return {col: word.get(parts.get(key, ""), "") for key, col in names.items()}


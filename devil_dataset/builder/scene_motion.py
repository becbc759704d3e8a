"""Automatic background-scene-motion score (the release's scorer): residual optical flow after camera alignment.

1. Split the clip (all frames at 854x480) into low-camera-motion segments: walk k = 1..n-1 with a segment start
   i; while AffineScore(frame_i -> frame_k) is below the threshold the segment grows, otherwise it is closed (kept
   when it has >= 12 frames) and a new one starts at k.
2. In each segment, align every consecutive pair k -> k+1 with a similarity, warp frame k onto frame k+1 and
   compute optical flow between the aligned frames. Flow vectors starting on pixels the warp left invalid or ending
   where the target mask is < 0.999 are dropped; the segment score is the mean magnitude of the remaining vectors.
3. Clip score = segment-length-weighted mean of the segment scores; NaN when there is no segment.

Two AffineScore modes, named explicitly:

- ``mode="release"`` (parity): the release subtracted uint8 arrays, so ``target - warped`` wraps modulo 256
  (a 1-level darker pixel counts as 255); the threshold 375 (the release's scorer) was tuned on that value.
- ``mode="corrected"``: the true absolute difference (int16), L1 over RGB, mean over valid pixels, compared with
  :data:`CORRECTED_AFFINE_THRESHOLD` (chosen on the validation scenes; see ``docs/labelling.md``).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> still = np.repeat((rng.random((1, 96, 128, 3)) * 255).astype(np.uint8), 14, axis=0)
    >>> scene_motion_score(still, detector="orb", scoring_size=None)
    0.0
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence, TypeVar

import cv2
import numpy as np

from ..core.alignment import (
    MASK_WARP_DTYPE,
    all_ones_mask,
    resolve_detector,
    single_threaded_blas,
    warp_frame,
    warp_valid_mask,
)
from ..core.cpu_pins import cpu_pinned
from ..core.cv_determinism import serial_opencv
from ..core.errors import UnknownNameError, WeightsMissingError
from ..core.flow import flow_estimator, resolve_flow_backend
from ..core.thread_map import default_threads, thread_map
from .camera_motion import SCORING_SIZE, resize_for_scoring
from .clip_features import ClipFeatures

# The release's scorer: AffineScore threshold of the release, tuned on its uint8 wrap-around value.
RELEASE_AFFINE_THRESHOLD = 375.0
# Corrected mode: threshold on the true mean L1-over-RGB difference (0..765), chosen on the validation data
# (docs/labelling.md, "Corrected-mode threshold"): rendered scenes with strong water and foliage motion stay below
# 25 over whole 90-frame clips (scene motion must not split segments), real footage whose view a similarity no
# longer explains (bikes.mp4 pan with rack focus) passes 50 within 4-8 frames. 50 = about 2x the former.
CORRECTED_AFFINE_THRESHOLD = 50.0
# The release's scorer: a segment is kept only with at least this many frames.
MIN_SEGMENT_FRAMES = 12
# The release's scorer: a flow vector is dropped when the target mask at its end is below this value.
TARGET_MASK_MIN = 0.999
MODES: tuple[str, ...] = ("release", "corrected")
# The segment walk computes AffineScore(i -> k) for the next frames at once, as many as hold this many pairs per thread
# that still need matching (pairs the camera scorer aligned come along for free; speculative: after a break the rest
# are not used); 2 keeps the threads busy between the walk's steps and wastes little at a break.
WALK_AHEAD = 2
FLOWS: tuple[str, ...] = ("dis", "raft")

FlowFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
R = TypeVar("R")


@dataclass(frozen=True)
class SceneMotionResult:
    """A clip's scene-motion score with its segments ([start, end) frame ranges) and their scores."""

    score: float
    segments: tuple[tuple[int, int], ...]
    segment_scores: tuple[float, ...]
    mode: str
    flow: str
    detector: str


def affine_score(target: np.ndarray, warped: np.ndarray, valid: np.ndarray, mode: str = "release") -> float:
    """Mean over ``valid`` pixels of the L1 norm over RGB of ``target - warped`` (uint8 frames [H, W, 3]).

    ``mode="release"`` subtracts in uint8 (wraps modulo 256, the release's behaviour); ``"corrected"`` takes the
    true absolute difference. +inf when no pixel is valid.

    >>> t = np.full((1, 2, 3), 10, np.uint8); w = np.full((1, 2, 3), 11, np.uint8); v = np.ones((1, 2), bool)
    >>> affine_score(t, w, v, "release"), affine_score(t, w, v, "corrected")
    (765.0, 3.0)
    """
    _check_mode(mode)
    count = int(np.count_nonzero(valid))
    if count == 0:
        return math.inf
    target, warped = np.ascontiguousarray(target, np.uint8), np.ascontiguousarray(warped, np.uint8)
    if mode == "release":
        diff = np.subtract(target, warped)  # uint8: wraps, 10 - 11 -> 255
    else:
        diff = cv2.absdiff(target, warped)  # the true |difference| of uint8 values, in uint8
    # zero the invalid pixels, then integer sums per channel (OpenCV sums 8-bit data in integers; every total is an
    # integer below 2^53, exact in float64): the bits of the float64 mean of the same integers
    diff = cv2.bitwise_and(diff, diff, mask=np.ascontiguousarray(valid, bool).view(np.uint8))
    total = int(sum(cv2.sumElems(diff)[: diff.shape[2]]))
    return total / count


def pair_affine_score(source: np.ndarray, target: np.ndarray, matrix: np.ndarray | None,
                      mode: str = "release") -> float:
    """AffineScore of ``source`` aligned onto ``target`` with ``matrix``; +inf when alignment failed."""
    if matrix is None:
        return math.inf
    size = (target.shape[1], target.shape[0])
    return affine_score(target, warp_frame(source, matrix, size), warp_valid_mask(matrix, size), mode)


def split_segments(
    num_frames: int,
    score: Callable[[int, int], float],
    threshold: float,
    min_frames: int = MIN_SEGMENT_FRAMES,
) -> list[tuple[int, int]]:
    """The release's segment walk over frames 0..n-1; ``score(i, k)`` is AffineScore(frame_i -> frame_k).

    Returns the kept segments as [start, end) ranges (end exclusive), each with >= ``min_frames`` frames.

    >>> split_segments(30, lambda i, k: 0.0 if k < 20 else 999.0, 375)
    [(0, 20)]
    """
    out: list[tuple[int, int]] = []
    start = 0
    for k in range(1, num_frames):
        if score(start, k) < threshold:
            continue
        if k - start >= min_frames:
            out.append((start, k))
        start = k
    if num_frames - start >= min_frames:
        out.append((start, num_frames))
    return out


@lru_cache(maxsize=4)
def _pixel_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """x and y pixel coordinates (float32 [H, W]), once per frame size (read-only)."""
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    for a in (xs, ys):
        a.flags.writeable = False
    return xs, ys


def valid_flow_vectors(flow: np.ndarray, start_valid: np.ndarray, target_mask: np.ndarray | None = None) -> np.ndarray:
    """Bool [H, W]: flow vectors that start on a valid pixel and end where the target mask is >= 0.999.

    The target mask (float [H, W], all ones by default) is sampled bilinearly at the end point with border 0,
    so vectors leaving the frame are dropped too.

    >>> f = np.zeros((4, 4, 2), np.float32); f[0, 0] = (-3, 0)
    >>> int(valid_flow_vectors(f, np.ones((4, 4), bool)).sum())
    15
    """
    h, w = flow.shape[:2]
    xs, ys = _pixel_grid(h, w)
    if target_mask is None:
        target_mask = all_ones_mask(h, w)  # float64 like the release's mask
    map_x = xs + flow[..., 0].astype(np.float32)
    map_y = ys + flow[..., 1].astype(np.float32)
    at_end = cv2.remap(np.asarray(target_mask, MASK_WARP_DTYPE), map_x, map_y, cv2.INTER_LINEAR,
                       borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return start_valid & (at_end >= TARGET_MASK_MIN)


def resolve_flow(flow: str, device: str | None = None) -> FlowFn:
    """The flow function for ``flow``: ``"dis"`` (OpenCV DIS, default) or ``"raft"`` (torchvision RAFT).

    RAFT uses :mod:`devil_dataset.core.networks.raft` with the weights cache of :mod:`devil_dataset.core.weights`
    (``devil weights`` fetches / imports them); without cached weights it raises
    :class:`~devil_dataset.core.errors.WeightsMissingError` naming what to do. ``device`` defaults to CUDA when
    available.
    """

    if flow not in FLOWS:
        raise UnknownNameError(f"unknown flow {flow!r}; valid: {', '.join(FLOWS)}")
    if flow == "raft":
        if resolve_flow_backend("auto") != "raft":
            raise WeightsMissingError("RAFT weights are not in the weights cache: run `devil weights` to fetch or "
                                      "import them (see docs), or use flow='dis'")
        if device is None:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
    return flow_estimator(flow, device or "cpu")  # the one flow dispatcher


def pair_flow_stats(source: np.ndarray, target: np.ndarray, matrix: np.ndarray | None,
                    flow_fn: FlowFn) -> tuple[float, int]:
    """Sum of the valid flow magnitudes and their count for ``source`` aligned onto ``target`` with ``matrix``;
    ``(0.0, 0)`` when the alignment failed (the release's scorer: such a pair is skipped)."""
    if matrix is None:
        return 0.0, 0
    size = (target.shape[1], target.shape[0])
    aligned = warp_frame(source, matrix, size)
    flow = flow_fn(aligned, target)
    keep = valid_flow_vectors(flow, warp_valid_mask(matrix, size))
    f64 = flow.astype(np.float64)
    fx, fy = f64[..., 0], f64[..., 1]
    magnitude = np.sqrt(fx * fx + fy * fy)  # = sqrt of the sum over the last axis (fx^2 + fy^2): same bits, 7x faster
    return float(magnitude[keep].sum()), int(keep.sum())


def pair_values(features: ClipFeatures, pairs: Sequence[tuple[int, int]],
                fn: Callable[[np.ndarray, np.ndarray, np.ndarray | None], R], memo: dict[tuple[int, int], R],
                threads: int) -> list[R]:
    """``fn(frame i, frame j, similarity i -> j)`` for each pair ``(i, j)``, computed once per pair of frame contents
    (``memo``, keyed by :meth:`ClipFeatures.same_as`) and spread over ``threads`` threads; in pair order. A pair's
    alignment (where it is not known yet) and ``fn`` run in one task, so no thread waits for the slowest alignment
    before the values start."""
    keys = [(features.same_as(i), features.same_as(j)) for i, j in pairs]
    todo = [k for k in dict.fromkeys(keys) if k not in memo]
    features.detect(k for pair in todo for k in pair)
    frames = features.frames
    values = thread_map(lambda key: fn(frames[key[0]], frames[key[1]], features.similarity(*key)), todo,
                        threads=threads)
    memo.update(zip(todo, values))
    return [memo[k] for k in keys]


def walk_window(features: ClipFeatures, start: int, k: int, to_match: int) -> list[tuple[int, int]]:
    """The walk's next pairs ``(start, m)``, ``m = k, k + 1, ...``: up to the one that makes ``to_match`` pairs whose
    frames are not aligned yet (pairs the camera scorer aligned cost no matching), at most ``4 x to_match`` pairs.

    >>> rng = np.random.default_rng(0)
    >>> cf = ClipFeatures((rng.random((8, 32, 32, 3)) * 255).astype(np.uint8), "orb")
    >>> _ = cf.similarities([(0, 2)])  # aligned already, as the camera scorer aligns (0, 3k)
    >>> walk_window(cf, 0, 1, 2)
    [(0, 1), (0, 2), (0, 3)]
    """
    pairs: list[tuple[int, int]] = []
    new = 0
    for m in range(k, min(len(features.frames), k + 4 * to_match)):
        pairs.append((start, m))
        new += not features.has_similarity(start, m)
        if new >= to_match:
            break
    return pairs


def segment_flow_stats(features: ClipFeatures, segments: Sequence[tuple[int, int]], flow_fn: FlowFn,
                       threads: int = 1) -> list[tuple[float, int]]:
    """Per segment [start, end): the sum of valid flow magnitudes and their count over its pairs k -> k+1.

    All pairs run on ``threads`` threads; each segment's sums are added in pair order (the same float sums for any
    thread count).
    """
    pairs = [(k, k + 1) for start, end in segments for k in range(start, end - 1)]
    memo: dict[tuple[int, int], tuple[float, int]] = {}
    stats = iter(pair_values(features, pairs, lambda a, b, m: pair_flow_stats(a, b, m, flow_fn), memo, threads))
    out = []
    for start, end in segments:
        total, count = 0.0, 0
        for _ in range(start, end - 1):
            pair_total, pair_count = next(stats)
            total += pair_total
            count += pair_count
        out.append((total, count))
    return out


def scene_motion(
    frames: np.ndarray,
    *,
    mode: str = "release",
    flow: str = "dis",
    detector: str | None = None,
    scoring_size: tuple[int, int] | None = SCORING_SIZE,
    threshold: float | None = None,
    threads: int | None = None,
    features: ClipFeatures | None = None,
) -> SceneMotionResult:
    """Background-scene-motion score of uint8 RGB frames [T, H, W, 3] with its segments.

    ``mode``: "release" (uint8 wrap-around AffineScore, threshold 375) or "corrected" (true difference,
    threshold :data:`CORRECTED_AFFINE_THRESHOLD`); ``threshold`` overrides the mode's threshold.
    ``flow``: "dis" or "raft". Higher = more motion of the scene itself (pixels per frame at 854x480).
    ``threads``: frames and pairs are spread over this many threads (default: the CPUs this process may use; RAFT
    flow runs on one); the score does not depend on it.
    ``features``: the camera-motion scorer's :class:`~devil_dataset.builder.clip_features.ClipFeatures` of the same
    frames (``camera_motion(...).features``, same detector and scoring size): its resized frames, features and
    alignments are used instead of computing them again (:func:`devil_dataset.builder.motion_scores.motion_scores`).
    """
    _check_mode(mode)
    flow_fn = resolve_flow(flow)
    detector = resolve_detector(detector)
    if threshold is None:
        threshold = RELEASE_AFFINE_THRESHOLD if mode == "release" else CORRECTED_AFFINE_THRESHOLD
    threads = (features.threads if features is not None else default_threads()) if threads is None else threads
    if features is None:
        features = ClipFeatures(resize_for_scoring(frames, scoring_size), detector, threads=threads)
    else:
        features.check_fits(frames, detector, scoring_size)
        features.threads = threads
    num_frames = len(features.frames)
    ahead: dict[tuple[int, int], float] = {}
    memo: dict[tuple[int, int], float] = {}

    def score(i: int, k: int) -> float:  # AffineScore(i -> k); the walk's next pairs are computed meanwhile
        if (i, k) not in ahead:
            pairs = walk_window(features, i, k, WALK_AHEAD * threads)
            values = pair_values(features, pairs, lambda a, b, m: pair_affine_score(a, b, m, mode), memo, threads)
            ahead.update(zip(pairs, values))
        return ahead[(i, k)]

    with single_threaded_blas(), serial_opencv():  # one OpenCV thread count for all detections of the clip
        # the walk aligns every frame: all described at once, spread over the threads, instead of a few per window
        # (nothing left to do after motion_scores, which describes them all before the camera scorer)
        features.detect(range(num_frames))
        segments = split_segments(num_frames, score, threshold)
        if flow != "dis":  # RAFT pairs run on one thread: their alignments first, on the threads
            features.similarities([(k, k + 1) for start, end in segments for k in range(start, end - 1)])
    # RAFT runs on torch, whose own threads must not be limited (nor run in several threads at once). DIS pairs run
    # on the threads, each DIS on one OpenCV thread (its flow does not depend on OpenCV's thread count: tested), so
    # OpenCV's own pool does not spin beside them
    with single_threaded_blas(), serial_opencv() if flow == "dis" else contextlib.nullcontext():
        stats = segment_flow_stats(features, segments, flow_fn, threads if flow == "dis" else 1)
    seg_scores: list[float] = []
    weighted, weight = 0.0, 0
    for (start, end), (total, count) in zip(segments, stats):
        seg = total / count if count else math.nan
        seg_scores.append(seg)
        if count:  # a segment without a single valid vector has no score and no weight
            weighted += (end - start) * seg
            weight += end - start
    result = weighted / weight if weight else math.nan
    return SceneMotionResult(result, tuple(segments), tuple(seg_scores), mode, flow, detector)


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def scene_motion_score(
    frames: np.ndarray,
    *,
    mode: str = "release",
    flow: str = "dis",
    detector: str | None = None,
    scoring_size: tuple[int, int] | None = SCORING_SIZE,
    threads: int | None = None,
    features: ClipFeatures | None = None,
) -> float:
    """Background-scene-motion score (see :func:`scene_motion`); NaN when the clip has no segment.

    >>> scene_motion_score(np.zeros((5, 32, 32, 3), np.uint8), detector="orb", scoring_size=None)
    nan
    """
    return scene_motion(frames, mode=mode, flow=flow, detector=detector, scoring_size=scoring_size,
                        threads=threads, features=features).score


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")

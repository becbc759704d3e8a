"""Camera-motion score of a clip (the release's scorer): how much of each sampled frame other frames fail to cover.

Ten frames are sampled; for every ordered pair (i, j) frame i is aligned to frame j with a similarity
(:mod:`devil_dataset.core.alignment`) and the pair score is the fraction of frame j that the warped frame i
does not cover (+inf when alignment fails). The clip score is the 96th percentile ("higher") of the 10x10 matrix
with its zero diagonal. Higher = more camera motion; the range is [0, 1] or +inf.

Unlike the release, features are detected once per sampled frame and each unordered pair is matched once
(cross-checked matches are symmetric), which gives the same scores as the release's per-pair loop, faster
(see ``benchmarks/camera_motion.py``); frames and pairs are spread over threads
(:class:`~devil_dataset.builder.clip_features.ClipFeatures`), and the result carries them to the scene-motion scorer.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> still = np.repeat((rng.random((1, 120, 160, 3)) * 255).astype(np.uint8), 45, axis=0)
    >>> camera_motion_score(still, detector="orb", scoring_size=None)
    0.0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import cv2
import numpy as np

from ..core.alignment import resolve_detector, single_threaded_blas, warp_valid_mask
from ..core.cpu_pins import cpu_pinned
from ..core.cv_determinism import serial_opencv
from ..core.thread_map import default_threads
from .clip_features import ClipFeatures

# The release's clips: videos are scored at 854x480 (W, H), resized with area interpolation.
SCORING_SIZE: tuple[int, int] = (854, 480)
# The release's scorer: number of sampled frames (spacing floor((n - 1) / 9)).
NUM_SAMPLED_FRAMES = 10
# The release's scorer: clip score = this percentile of the 10x10 pair matrix, numpy method "higher".
SCORE_PERCENTILE = 96
@dataclass(frozen=True)
class CameraMotionResult:
    """A clip's camera-motion score with what produced it.

    ``matrix[i, j]`` is the pair score of sampled frame i aligned onto sampled frame j (diagonal 0, +inf where
    alignment failed); ``indices`` are the sampled frame indices; ``detector`` is the feature detector used.
    ``features`` holds the frames at the scoring size with the sampled frames' features and alignments: hand it to
    :func:`devil_dataset.builder.scene_motion.scene_motion` (``features=``) and the clip's frames are resized and
    described once.
    """

    score: float
    detector: str
    matrix: np.ndarray
    indices: tuple[int, ...]
    features: ClipFeatures | None = field(default=None, compare=False, repr=False)


def sample_indices(num_frames: int) -> list[int]:
    """The 10 sampled frame indices of the release's scorer: spacing floor((n - 1) / 9), starting at 0.

    >>> sample_indices(45)
    [0, 4, 8, 12, 16, 20, 24, 28, 32, 36]
    >>> sample_indices(90)[-1]
    81
    """
    if num_frames < NUM_SAMPLED_FRAMES:
        raise ValueError(f"camera motion needs at least {NUM_SAMPLED_FRAMES} frames, got {num_frames}")
    spacing = (num_frames - 1) // (NUM_SAMPLED_FRAMES - 1)
    return [k * spacing for k in range(NUM_SAMPLED_FRAMES)]


def resize_for_scoring(frames: np.ndarray, size: tuple[int, int] | None = SCORING_SIZE) -> np.ndarray:
    """Resize uint8 frames [T, H, W, 3] to ``size`` (W, H) with area interpolation (the release's clips).

    Frames already at that size (or ``size=None``) are returned unchanged.

    >>> resize_for_scoring(np.zeros((2, 960, 1708, 3), np.uint8)).shape
    (2, 480, 854, 3)
    """
    _check_frames(frames)
    if size is None or (frames.shape[2], frames.shape[1]) == tuple(size):
        return frames
    return np.stack([cv2.resize(f, tuple(size), interpolation=cv2.INTER_AREA) for f in frames])


def percentile_higher(values: np.ndarray, q: float = SCORE_PERCENTILE) -> float:
    """numpy's ``percentile(values, q, method="higher")``, exact with +inf entries.

    The "higher" method takes the sorted value at index ceil(q / 100 * (n - 1)); no interpolation.

    >>> percentile_higher(np.arange(100.0))
    96.0
    >>> percentile_higher(np.array([0.0] * 97 + [np.inf] * 3))  # 4 failed pairs would give inf
    0.0
    """
    flat = np.sort(np.asarray(values, dtype=np.float64).ravel())
    return float(flat[int(np.ceil(q / 100.0 * (flat.size - 1)))])


def pair_score(matrix: np.ndarray | None, size: tuple[int, int]) -> float:
    """Fraction of the target frame (W, H) not covered by the input frame warped with ``matrix``; +inf if None."""
    if matrix is None:
        return float("inf")
    covered = warp_valid_mask(matrix, size)
    # count / size: the bits of the bool array's float64 mean (an exact integer sum, one division), without its cast
    return float(1.0 - np.count_nonzero(covered) / covered.size)


def pair_matrix(features: ClipFeatures, indices: Sequence[int]) -> np.ndarray:
    """The [N, N] pair-score matrix over frames ``indices`` of ``features``: entry (i, j) aligns frame i onto frame j.

    Each unordered pair is matched once; the reversed pair reuses the same cross-checked matches in the order
    OpenCV would have returned them, then runs its own RANSAC. Unordered pairs are spread over ``features.threads``
    threads, each task aligning and scoring both directions, in the same parallel step as the frames' detection.
    """
    n = len(indices)
    size = (features.frames.shape[2], features.frames.shape[1])

    def both_directions(pair: tuple[int, int]) -> Callable[[], tuple[float, float]]:
        i, j = indices[pair[0]], indices[pair[1]]
        return lambda: (pair_score(features.similarity(i, j), size), pair_score(features.similarity(j, i), size))

    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    out = np.zeros((n, n), np.float64)
    # the pairs start while the last frames (with any others the clip wants, ClipFeatures.want) are still described
    scores = features.detect(indices, then=[both_directions(p) for p in pairs])
    for (i, j), (forward, backward) in zip(pairs, scores):
        out[i, j], out[j, i] = forward, backward
    return out


def camera_motion(
    frames: np.ndarray,
    *,
    detector: str | None = None,
    scoring_size: tuple[int, int] | None = SCORING_SIZE,
    threads: int | None = None,
    features: ClipFeatures | None = None,
) -> CameraMotionResult:
    """Camera-motion score of uint8 RGB frames [T, H, W, 3] (T >= 10) with its pair matrix and detector.

    ``detector``: "surf" (when OpenCV has it), "sift" (default without SURF) or "orb".
    ``scoring_size``: frames are first resized there (area interpolation); ``None`` scores them as they are.
    ``threads``: frames and pairs are spread over this many threads (default: the CPUs this process may use);
    the score does not depend on it. ``features``: a :class:`~devil_dataset.builder.clip_features.ClipFeatures` of
    these frames at the scoring size to work in (its threads are used; ``frames`` is then only checked against it);
    by default a new one. Either way the result carries it (``result.features``) for the scene-motion scorer.

    >>> rng = np.random.default_rng(1)
    >>> r = camera_motion(np.repeat((rng.random((1, 96, 128, 3)) * 255).astype(np.uint8), 12, 0),
    ...                   detector="orb", scoring_size=None)
    >>> r.score, r.detector, r.indices[:3]
    (0.0, 'orb', (0, 1, 2))
    """
    detector = resolve_detector(detector)
    if features is None:
        frames = resize_for_scoring(frames, scoring_size)
        features = ClipFeatures(frames, detector, threads=default_threads() if threads is None else threads)
    else:
        features.check_fits(frames, detector, scoring_size)
    indices = sample_indices(len(features.frames))
    with single_threaded_blas(), serial_opencv():  # one OpenCV thread count for all detections of the clip
        matrix = pair_matrix(features, indices)
    return CameraMotionResult(percentile_higher(matrix), detector, matrix, tuple(indices), features)


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def camera_motion_score(
    frames: np.ndarray,
    *,
    detector: str | None = None,
    scoring_size: tuple[int, int] | None = SCORING_SIZE,
    threads: int | None = None,
) -> float:
    """Camera-motion score (see :func:`camera_motion`): [0, 1] or +inf, higher = more camera motion.

    >>> camera_motion_score(np.zeros((10, 64, 64, 3), np.uint8), detector="orb", scoring_size=None)
    inf
    """
    return camera_motion(frames, detector=detector, scoring_size=scoring_size, threads=threads).score


def _check_frames(frames: np.ndarray) -> None:
    if not isinstance(frames, np.ndarray) or frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
        shape = getattr(frames, "shape", None)
        dtype = getattr(frames, "dtype", type(frames).__name__)
        raise ValueError(f"expected uint8 RGB frames [T, H, W, 3], got {dtype} {shape}")

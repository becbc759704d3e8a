"""The five DEVIL attributes of one (video, mask) pair, computed with the package's own code.

- ``camera_motion``: the release's camera-motion score of the video
  (:func:`devil_dataset.builder.camera_motion.camera_motion_score`, the release's scorer);
- ``bg_scene_motion``: the release's automatic background-scene-motion score of the video
  (:func:`devil_dataset.builder.scene_motion.scene_motion_score`, the release's scorer);
- ``fg_size``, ``fg_displacement``, ``fg_motion``: the mask statistics that define the foreground slices
  (:func:`devil_dataset.core.mask_stats.mask_stats`: mean hole area, mean centroid speed, pose motion), measured on the
  mask at its own size (areas relative to the frame, lengths to the frame diagonal, so sizes compare).

The two video attributes depend on the frames only, the three foreground attributes on the hole only: each is cached
on the content hash of what it reads (:mod:`devil_dataset.diagnosis.cache`).

    >>> import numpy as np
    >>> hole = np.zeros((3, 48, 64), bool)
    >>> for t in range(3):
    ...     hole[t, 10:20, 10 + 2 * t:20 + 2 * t] = True
    >>> s = mask_attributes(hole)
    >>> round(s["fg_size"], 4), s["fg_motion"]
    (0.0326, 0.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..builder.camera_motion import SCORING_SIZE, camera_motion
from ..builder.clip_features import ClipFeatures
from ..builder.scene_motion import FLOWS, MODES, scene_motion
from ..core.alignment import resolve_detector
from ..core.errors import DevilError
from ..core.mask_stats import mask_stats

# The order of the five attributes (the columns of attributes.tsv).
ATTRIBUTES: tuple[str, ...] = ("camera_motion", "bg_scene_motion", "fg_size", "fg_displacement", "fg_motion")
VIDEO_ATTRIBUTES: tuple[str, ...] = ("camera_motion", "bg_scene_motion")  # functions of the frames
MASK_ATTRIBUTES: tuple[str, ...] = ("fg_size", "fg_displacement", "fg_motion")  # functions of the hole
# The mask statistic behind each foreground attribute (core/mask_stats.py; the FG slices' settings, the release's
# masks).
MASK_STATISTIC: dict[str, str] = {"fg_size": "mean_area", "fg_displacement": "centroid_speed",
                                  "fg_motion": "pose_motion"}
# The camera-motion labeller needs this many frames (the release's scorer: 10 sampled frames).
MIN_VIDEO_FRAMES = 10


@dataclass(frozen=True)
class AttributeOptions:
    """How the video attributes are scored: ``scoring_size`` (W, H; default the release's 854x480;
    frames are resized there with area interpolation), the feature ``detector`` (None: SURF when OpenCV has it, else
    SIFT), the scene-motion AffineScore ``scene_mode`` (``release`` or ``corrected``) and its optical ``flow``
    (``dis`` or ``raft``).

        >>> AttributeOptions().key()
        'size=854x480;detector=sift;scene_mode=release;flow=dis'
    """

    scoring_size: tuple[int, int] = SCORING_SIZE
    detector: str | None = None
    scene_mode: str = "release"
    flow: str = "dis"

    def __post_init__(self) -> None:
        if self.scene_mode not in MODES:
            raise DevilError(f"unknown scene-motion mode {self.scene_mode!r}; valid: {', '.join(MODES)}")
        if self.flow not in FLOWS:
            raise DevilError(f"unknown flow {self.flow!r}; valid: {', '.join(FLOWS)}")
        w, h = self.scoring_size
        if int(w) < 16 or int(h) < 16:
            raise DevilError(f"scoring size {w}x{h} is too small (at least 16x16)")

    def resolved(self) -> "AttributeOptions":
        """The same options with the detector named (what a cache key must hold)."""
        try:
            detector = resolve_detector(self.detector)
        except ValueError as exc:
            raise DevilError(str(exc)) from None
        return AttributeOptions((int(self.scoring_size[0]), int(self.scoring_size[1])), detector, self.scene_mode,
                                self.flow)

    def key(self) -> str:
        """The options as one string (part of every video attribute's cache key)."""
        r = self.resolved()
        return f"size={r.scoring_size[0]}x{r.scoring_size[1]};detector={r.detector};scene_mode={r.scene_mode};" \
               f"flow={r.flow}"


class VideoScorer:
    """The video attributes of one video's frames, scored in the order asked: when camera motion is scored first (as
    :data:`VIDEO_ATTRIBUTES` orders them), scene motion gets its resized frames and features as an argument
    (:func:`devil_dataset.builder.motion_scores.motion_scores` does the same), so no frame is described twice.

        >>> f = np.zeros((12, 64, 64, 3), np.uint8)
        >>> scorer = VideoScorer(f, AttributeOptions(scoring_size=(64, 64), detector="orb"))
        >>> scorer.score("camera_motion"), scorer.score("bg_scene_motion")
        (inf, nan)
    """

    def __init__(self, frames: np.ndarray, options: AttributeOptions) -> None:
        self.frames = frames
        self.options = options.resolved()
        self._features: ClipFeatures | None = None

    def score(self, name: str) -> float:
        """``camera_motion`` in [0, 1] or +inf (alignment failed; NaN under 10 frames), or ``bg_scene_motion`` (NaN
        when the video has no low-camera-motion segment, the release's scorer)."""
        r = self.options
        if name == "camera_motion":
            if len(self.frames) < MIN_VIDEO_FRAMES:
                return math.nan
            result = camera_motion(self.frames, detector=r.detector, scoring_size=r.scoring_size)
            self._features = result.features
            return float(result.score)
        if name == "bg_scene_motion":
            return float(scene_motion(self.frames, mode=r.scene_mode, flow=r.flow, detector=r.detector,
                                      scoring_size=r.scoring_size, features=self._features).score)
        raise DevilError(f"{name!r} is not a video attribute; valid: {', '.join(VIDEO_ATTRIBUTES)}")


def video_attribute(name: str, frames: np.ndarray, options: AttributeOptions) -> float:
    """One video attribute (``camera_motion`` or ``bg_scene_motion``) of uint8 RGB frames [T, H, W, 3]
    (:meth:`VideoScorer.score`; score both of a video with one :class:`VideoScorer`).

    ``camera_motion`` is in [0, 1] or +inf (alignment failed); ``bg_scene_motion`` is NaN when the video has no
    low-camera-motion segment (the release's scorer). A video shorter than 10 frames has no camera-motion score (NaN).

        >>> f = np.zeros((12, 64, 64, 3), np.uint8)
        >>> video_attribute("camera_motion", f, AttributeOptions(scoring_size=(64, 64), detector="orb"))
        inf
    """
    return VideoScorer(frames, options).score(name)


def canonical_hole(hole: np.ndarray) -> np.ndarray:
    """``hole`` as a bool array whose bytes are 0/1. Pillow's mode '1' images decode to bool arrays holding the bytes
    0/255 (``np.asarray(im.convert("1"), dtype=bool)``, the dataset loader's hole): :mod:`devil_dataset.core.mask_stats`
    sums the bytes, and a content hash must not depend on the decoder.

        >>> canonical_hole(np.array([0, 255], np.uint8).view(bool)).view(np.uint8).tolist()
        [0, 1]
    """
    arr = np.asarray(hole)
    if arr.dtype == bool:
        return np.ascontiguousarray(arr).view(np.uint8) != 0
    return arr.astype(bool)


def mask_attributes(hole: np.ndarray) -> dict[str, float]:
    """The three foreground attributes of a bool hole mask [T, H, W] (True = hole), measured at its own size:
    ``fg_size`` = mean hole fraction, ``fg_displacement`` = mean centroid speed (frame diagonals per frame),
    ``fg_motion`` = pose motion (1 - IoU after removing the displacement). See the module example."""
    hole = canonical_hole(hole)
    if hole.ndim != 3 or len(hole) == 0:
        raise DevilError(f"expected a bool hole mask [T, H, W] with T >= 1, got shape {hole.shape}")
    stats = mask_stats(hole, size=(hole.shape[2], hole.shape[1]))
    return {name: float(getattr(stats, stat)) for name, stat in MASK_STATISTIC.items()}


__all__ = ["ATTRIBUTES", "AttributeOptions", "canonical_hole", "MASK_ATTRIBUTES", "MASK_STATISTIC", "MIN_VIDEO_FRAMES",
           "VIDEO_ATTRIBUTES", "VideoScorer", "mask_attributes", "video_attribute"]

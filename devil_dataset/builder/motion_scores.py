"""Both motion labels of a clip in one pass: camera motion first, its frames and features handed to scene motion.

The release's camera-motion scorer and scene-motion scorer align frames of the
same clip at the same scoring size. :func:`motion_scores` resizes the frames once, marks all of them as wanted
(:meth:`~devil_dataset.builder.clip_features.ClipFeatures.want`) so that the camera scorer's parallel step describes
every frame (its ten sampled frames first, its pairs starting as threads come free), and passes the camera scorer's
:class:`~devil_dataset.builder.clip_features.ClipFeatures` to the scene scorer as an argument, so no frame is resized or
described twice. The scores are those of the two scorers called alone.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> still = np.repeat((rng.random((1, 96, 128, 3)) * 255).astype(np.uint8), 14, axis=0)
    >>> camera, scene = motion_scores(still, detector="orb", scoring_size=None)
    >>> camera.score, scene.score
    (0.0, 0.0)
    >>> MotionScorer(detector="orb", scoring_size=None)(still)
    (0.0, 0.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.alignment import resolve_detector
from ..core.thread_map import default_threads
from .camera_motion import SCORING_SIZE, CameraMotionResult, camera_motion, resize_for_scoring
from .clip_features import ClipFeatures
from .scene_motion import SceneMotionResult, scene_motion


def motion_scores(
    frames: np.ndarray,
    *,
    detector: str | None = None,
    mode: str = "release",
    flow: str = "dis",
    scoring_size: tuple[int, int] | None = SCORING_SIZE,
    threads: int | None = None,
) -> tuple[CameraMotionResult, SceneMotionResult]:
    """``(camera_motion(frames, ...), scene_motion(frames, ...))`` sharing the resized frames and their features.

    Arguments as those of :func:`~devil_dataset.builder.camera_motion.camera_motion` and
    :func:`~devil_dataset.builder.scene_motion.scene_motion` (``mode`` and ``flow`` are the scene scorer's).
    """
    detector = resolve_detector(detector)
    features = ClipFeatures(resize_for_scoring(frames, scoring_size), detector,
                            threads=default_threads() if threads is None else threads)
    # every frame is needed by the scene scorer: all described in the camera scorer's parallel step (its sampled
    # frames first, its pairs filling the threads while the last frames are described)
    features.want(range(len(frames)))
    camera = camera_motion(frames, detector=detector, scoring_size=scoring_size, features=features)
    resized = features.frames
    scene = scene_motion(resized, mode=mode, flow=flow, detector=detector, scoring_size=None, threads=threads,
                         features=camera.features)
    return camera, scene


@dataclass(frozen=True)
class MotionScorer:
    """``(camera-motion score, scene-motion score)`` of a clip's frames (:func:`motion_scores`); picklable, so engine
    workers can run it."""

    detector: str | None = None
    mode: str = "release"
    flow: str = "dis"
    scoring_size: tuple[int, int] | None = SCORING_SIZE
    threads: int | None = None

    def __call__(self, frames: np.ndarray) -> tuple[float, float]:
        camera, scene = motion_scores(frames, detector=self.detector, mode=self.mode, flow=self.flow,
                                      scoring_size=self.scoring_size, threads=self.threads)
        return float(camera.score), float(scene.score)


__all__ = ["MotionScorer", "motion_scores"]

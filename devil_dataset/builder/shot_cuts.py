"""Shot-cut detection for curation (the release's clips): PySceneDetect's ``ContentDetector`` fed in-memory frames.

The release recorded an ffmpeg scene-change score (0-1) per clip but never filtered on it; we detect cuts and split
shots at them, and record PySceneDetect's own per-frame score ``content_val`` (mean HSV change between consecutive
frames, 0-255 scale; a cut is declared at ``>= 27``, PySceneDetect's default threshold).

Frames are downscaled to :data:`DETECTION_WIDTH` pixels wide with area interpolation before detection, as
PySceneDetect's own ``SceneManager`` does by default (cuts are a low-frequency change; this keeps detection cheap on
1080p sources). The downscale happens here, on decoded RGB frames, so the result does not depend on the decoder.

    >>> import numpy as np
    >>> a = np.zeros((20, 48, 64, 3), np.uint8); b = np.full((20, 48, 64, 3), 200, np.uint8)
    >>> result = detect_cuts(np.concatenate([a, b]), fps=25)
    >>> result.cuts, result.shots()
    ((20,), [(0, 20), (20, 40)])
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

import cv2
import numpy as np

from ..core.video_io import iter_frames, probe_video

# PySceneDetect ContentDetector defaults (threshold on content_val and the minimum shot length in frames).
CUT_THRESHOLD = 27.0
MIN_SHOT_FRAMES = 15
# PySceneDetect's SceneManager downscales frames to about this width before detection (DEFAULT_MIN_WIDTH).
DETECTION_WIDTH = 256


@dataclass(frozen=True)
class ShotCuts:
    """Cut detection result for one video.

    ``cuts``: frame indices where a new shot starts (each > 0, ascending). ``scores``: float64 ``[T]``, the
    ContentDetector score of the change from frame ``k - 1`` to frame ``k`` (``scores[0] == 0``).
    """

    cuts: tuple[int, ...]
    scores: np.ndarray = field(repr=False)
    num_frames: int
    threshold: float = CUT_THRESHOLD

    def shots(self) -> list[tuple[int, int]]:
        """Shots as half-open frame ranges ``[(start, end), ...]`` covering every frame."""
        bounds = [0, *self.cuts, self.num_frames]
        return [(s, e) for s, e in zip(bounds[:-1], bounds[1:]) if e > s]

    def max_score(self, start: int, end: int) -> float:
        """Largest score over the transitions inside frames ``[start, end)`` (0.0 for a single frame)."""
        inside = self.scores[start + 1 : end]
        return float(inside.max()) if inside.size else 0.0


def detection_frame(frame_rgb: np.ndarray) -> np.ndarray:
    """Downscale an RGB frame to :data:`DETECTION_WIDTH` wide (area) and convert it to BGR for PySceneDetect."""
    h, w = frame_rgb.shape[:2]
    if w > DETECTION_WIDTH:
        new_h = max(1, int(round(h * DETECTION_WIDTH / w)))
        frame_rgb = cv2.resize(frame_rgb, (DETECTION_WIDTH, new_h), interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(np.ascontiguousarray(frame_rgb), cv2.COLOR_RGB2BGR)


class CutDetector:
    """Streaming cut detector: call :meth:`push` once per frame in order, then :meth:`finish`.

    >>> import numpy as np
    >>> det = CutDetector(fps=25)
    >>> for v in [0] * 20 + [255] * 20:
    ...     det.push(np.full((24, 32, 3), v, np.uint8))
    >>> det.finish().cuts
    (20,)
    """

    def __init__(
        self,
        *,
        fps: float | Fraction = 25,
        threshold: float = CUT_THRESHOLD,
        min_shot_frames: int = MIN_SHOT_FRAMES,
    ) -> None:
        from scenedetect.common import FrameTimecode
        from scenedetect.detectors import ContentDetector
        from scenedetect.stats_manager import StatsManager

        self._FrameTimecode = FrameTimecode
        self._fps = Fraction(fps) if not isinstance(fps, float) else Fraction(fps).limit_denominator(1001)
        if self._fps <= 0:
            self._fps = Fraction(25)
        self._threshold = float(threshold)
        self._detector = ContentDetector(threshold=threshold, min_scene_len=min_shot_frames)
        self._stats = StatsManager()
        self._stats.register_metrics(self._detector.get_metrics())
        self._detector.stats_manager = self._stats
        self._cuts: list[int] = []
        self._count = 0

    def push(self, frame_rgb: np.ndarray) -> None:
        """Feed the next frame (uint8 RGB ``[H, W, 3]``, any size)."""
        tc = self._FrameTimecode(self._count, self._fps)
        for cut in self._detector.process_frame(tc, detection_frame(frame_rgb)):
            self._cuts.append(int(cut.frame_num))
        self._count += 1

    def finish(self) -> ShotCuts:
        """Flush the detector and return the cuts and per-frame scores."""
        if self._count:
            last = self._FrameTimecode(self._count - 1, self._fps)
            for cut in self._detector.post_process(last):
                self._cuts.append(int(cut.frame_num))
        scores = np.zeros(self._count, np.float64)
        key = self._detector.FRAME_SCORE_KEY
        for k in range(1, self._count):
            value = self._stats.get_metrics(k, [key])[0]
            scores[k] = float(value) if value is not None else 0.0
        cuts = tuple(sorted({c for c in self._cuts if 0 < c < self._count}))
        return ShotCuts(cuts=cuts, scores=scores, num_frames=self._count, threshold=self._threshold)


def detect_cuts(
    frames: Iterable[np.ndarray],
    *,
    fps: float | Fraction = 25,
    threshold: float = CUT_THRESHOLD,
    min_shot_frames: int = MIN_SHOT_FRAMES,
) -> ShotCuts:
    """Detect hard cuts in uint8 RGB frames (an array ``[T, H, W, 3]`` or any iterable of ``[H, W, 3]``).

    >>> import numpy as np
    >>> detect_cuts(np.zeros((30, 24, 32, 3), np.uint8)).cuts
    ()
    """
    det = CutDetector(fps=fps, threshold=threshold, min_shot_frames=min_shot_frames)
    for frame in frames:
        det.push(frame)
    return det.finish()


def detect_cuts_in_file(
    path: str | os.PathLike,
    *,
    backend: str = "auto",
    threshold: float = CUT_THRESHOLD,
    min_shot_frames: int = MIN_SHOT_FRAMES,
) -> ShotCuts:
    """Decode a video (streaming, constant memory) and detect its cuts; decoding errors raise ``DevilError``.

    >>> import numpy as np, tempfile, pathlib
    >>> from devil_dataset.core.video_io import write_video
    >>> p = write_video(pathlib.Path(tempfile.mkdtemp()) / "v.mp4", np.zeros((10, 32, 32, 3), np.uint8), fps=25)
    >>> detect_cuts_in_file(p).num_frames
    10
    """

    info = probe_video(path)
    return detect_cuts(
        iter_frames(path, backend=backend),
        fps=info.fps or 25,
        threshold=threshold,
        min_shot_frames=min_shot_frames,
    )

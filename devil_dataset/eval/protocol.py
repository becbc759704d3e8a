"""What every metric sees and how it reports: one pass over the videos feeds all requested metrics.

A metric is a small object (torchmetrics-style): ``update(video)`` once per video, returning that video's
values (or ``{}`` for set-level metrics such as FID), then ``compute()`` once for the slice-level values.

    >>> import numpy as np
    >>> v = VideoSample("clip", np.zeros((2, 4, 4, 3), np.uint8), np.full((2, 4, 4, 3), 255, np.uint8),
    ...                 np.zeros((2, 4, 4), bool))
    >>> int(v.composite.max())  # no hole: the composite is the ground truth
    0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class VideoSample:
    """One video to score: ground truth, raw prediction and hole mask, all at the evaluation size.

    ``gt`` and ``pred`` are uint8 [T, H, W, 3]; ``hole`` is bool [T, H, W] with True = occluded (to inpaint).
    ``composite`` is the release's C = M*GT + (1-M)*Pred with M = known (SPEC section 7), exact in uint8.
    """

    clip_id: str
    gt: np.ndarray
    pred: np.ndarray
    hole: np.ndarray
    meta: dict = field(default_factory=dict)

    @cached_property
    def composite(self) -> np.ndarray:
        return np.where(self.hole[..., None], self.pred, self.gt)

    @property
    def num_frames(self) -> int:
        return int(self.gt.shape[0])


@runtime_checkable
class VideoMetric(Protocol):
    """Protocol of a metric: ``keys`` lists the result keys it produces (e.g. ``("psnr",)``)."""

    keys: tuple[str, ...]

    def update(self, video: VideoSample) -> dict[str, float]:
        """Consume one video; return its per-video values (``{}`` for set-level metrics)."""

    def compute(self) -> dict[str, float]:
        """Slice-level values for every key in ``keys``."""

    def provenance(self) -> dict:
        """Modes, weights hashes and backends that produced the values (stored in the results JSON)."""


@dataclass(frozen=True)
class EvalOptions:
    """Options every metric receives at construction: ``MetricClass(options)``.

    ``ssim_mode``: ``"release"`` (data range 2, the release's implicit float range) or ``"standard"`` (range 1).
    ``flow``: ``"auto"`` (RAFT when its weights are cached, else DIS), ``"raft"`` or ``"dis"``.
    ``second_inpainter``: baseline used by the re-inpainting self-consistency metric.
    ``pvcs_mode``: padding of the 10-frame PVCS window for videos shorter than 10 frames (SPEC section 7):
    ``"release"`` pads the composite window with the ground truth's last frame, as the release does;
    ``"corrected"`` pads each window with its own last frame. Videos of 10+ frames score the same in both.
    """

    device: str = "cpu"
    batch_size: int = 8
    ssim_mode: str = "release"
    pvcs_mode: str = "release"
    flow: str = "auto"
    seed: int = 0
    second_inpainter: str = "telea"
    self_consistency_submetric: str = "lpips"
    self_consistency_k: int = 10

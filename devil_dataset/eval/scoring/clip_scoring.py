"""Streaming per-clip scoring: several predictions of one clip scored as they are made, never read back from disk.

:class:`ClipScorer` holds one clip's ground truth and the metric objects of the registry.
The ground-truth work of the metrics (``prepare``: the warp error's flows) runs once
per clip, the hole work (``for_hole``: the pixels entering the warp error, occlusion near the hole) once per hole,
and :meth:`ClipScorer.score` returns one prediction's per-video values: the values :func:`evaluate_slice` writes
for the same prediction (the same metric classes and the same updates).

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics import EvalOptions
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> scorer = ClipScorer("a", gt, ["psnr", "ssim"], EvalOptions())
    >>> row = scorer.score(np.full_like(gt, 255), hole, "hole-1")
    >>> round(row["psnr"], 2), round(row["ssim"], 4)
    (12.04, 0.8563)
"""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np

from ...core.content_hash import clip_content_hash
from ..metrics.metric import EvalOptions, VideoSample
from ..metrics.registry import build_metrics
from .gt_cache import GroundTruthCache, cached_hole_prepares, cached_prepare_clip, is_hole_keyed
from .one_pass import prepare_clip, prepared_for_hole, update_metrics


class ClipScorer:
    """The per-video values of predictions of the clip ``clip_id`` (ground truth ``gt`` uint8 [T, H, W, 3]) for
    the metrics ``metric_names`` (per-video metrics, e.g. :data:`~devil_dataset.eval.metrics.registry.PIXEL_METRICS`).

    ``gt_cache``: the cached metrics' ground-truth work (:mod:`devil_dataset.eval.scoring.gt_cache`) is read from it or
    computed and stored there (the same values). The warp error's entries are per (clip, hole), as ``devil
    evaluate`` writes them: a hole whose entry is there needs no flow at all; the clip's flows are computed once,
    at the first hole whose entry is missing, and shared by the clip's other holes."""

    def __init__(self, clip_id: str, gt: np.ndarray, metric_names: Sequence[str], options: EvalOptions,
                 gt_cache: GroundTruthCache | None = None):
        self.clip_id, self.gt, self.gt_cache = clip_id, gt, gt_cache
        self.metrics, _ = build_metrics(list(metric_names), options)
        self._by_hole: dict[str, Any] = ({} if gt_cache is None
                         else {n: m for n, m in self.metrics.items() if is_hole_keyed(m)})
        rest = {n: m for n, m in self.metrics.items() if n not in self._by_hole}
        self.prepared = (prepare_clip(rest, gt, None) if gt_cache is None
                         else cached_prepare_clip(rest, gt, gt_cache))
        self._clip_states: dict[str, Any] = {}  # hole-keyed metrics' clip-level state, made at the first miss
        self._clip_hash: str | None = None
        self._hole_key: Hashable | None = None
        self._for_hole: dict[str, object] = {}

    def _clip_state(self, name: str) -> Any:
        if name not in self._clip_states:
            self._clip_states[name] = self._by_hole[name].prepare(self.gt, None)
        return self._clip_states[name]

    def score(self, pred: np.ndarray, hole: np.ndarray, hole_key: Hashable | None = None) -> dict[str, float]:
        """One prediction's values ``{key: value}`` (PSNR-type values unclipped: ``inf`` for a perfect one).

        ``hole_key`` names the hole (e.g. its fingerprint): consecutive predictions of the same key share the
        hole work; ``None`` prepares it again.
        """
        if hole_key is None or hole_key != self._hole_key:
            self._for_hole = prepared_for_hole(self.prepared, hole)
            if self._by_hole and self.gt_cache is not None:
                self._clip_hash = self._clip_hash or clip_content_hash(self.gt)
                self._for_hole.update(cached_hole_prepares(self._by_hole, self.gt, self.gt_cache, hole,
                                                           self._clip_state, clip_hash=self._clip_hash))
            self._hole_key = hole_key
        return update_metrics(self.metrics, VideoSample(self.clip_id, self.gt, pred, hole), self._for_hole)


__all__ = ["ClipScorer"]

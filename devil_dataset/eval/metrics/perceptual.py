"""LPIPS and FID (the release's metrics): frame-level networks on the composite and the ground truth.

``Metric(options)`` loads its network (:class:`~devil_dataset.core.errors.WeightsMissingError` when weights are not
cached); tests inject networks with random weights through ``network=``. Frames go through the networks in
batches of ``EvalOptions.batch_size``; FID keeps streaming float64 sums (:class:`~devil_dataset.eval.kernels.frechet.
GaussianStats`), never the per-frame features, and its state merges across workers. With
``EvalOptions.set_level_ci`` it also keeps those sums per group of videos (:func:`~devil_dataset.eval.stats.
video_group`) and ``uncertainty()`` gives FID a delete-a-group jackknife interval.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ...core.atomic import file_sha256
from ...core.weights import weights_info, weights_provenance
from ..kernels.frechet import GaussianStats, blas_provenance, frechet_of
from ..stats.jackknife import add_grouped, set_level_uncertainty, video_group
from .metric import EvalOptions, Metric, VideoSample, frame_batches


# ------------------------------------------------------------------------------------------------------- LPIPS
class LPIPSMetric(Metric):
    """LPIPS (AlexNet, v0.1) between the composite and the ground truth, full frame, mean over frames."""

    keys = ("lpips",)
    values: list[float]  # declared state (add_state): one value per video

    def __init__(self, options: EvalOptions, network=None) -> None:
        from ...core.networks.lpips import LPIPSNetwork

        super().__init__()
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else LPIPSNetwork(options.device, precision=options.precision)
        self.add_state("values", list)

    def update(self, video: VideoSample, prepared=None) -> dict[str, float]:
        comp, gt = video.composite, video.gt
        per_frame = np.concatenate(
            [self.net.distance(gt[s], comp[s]) for s in frame_batches(len(gt), self.options.batch_size)]
        )
        value = float(per_frame.mean())
        self.values.append(value)
        return {"lpips": value}

    def compute(self) -> dict[str, float]:
        # exactly rounded: the same bits in any order (engine workers' parts merge in the order they finish)
        return {"lpips": math.fsum(self.values) / len(self.values) if self.values else float("nan")}

    def provenance(self) -> dict:
        from ...core.networks.lpips import LPIPS_NET, LPIPS_VERSION, lpips_heads_path
        from ...core.networks.precision import precision_provenance

        return {
            "network": f"lpips {LPIPS_NET} v{LPIPS_VERSION}", "input": "composite vs GT, full frame, (x/255)*2-1",
            **precision_provenance(getattr(self.net, "precision", self.options.precision), self.options.device),
            "weights": {**weights_provenance(("alexnet",), self._injected),
                        "lpips_heads": {"file": f"lpips/weights/v{LPIPS_VERSION}/{LPIPS_NET}.pth",
                                        "sha256": file_sha256(lpips_heads_path()),
                                        "verified": "shipped in the lpips wheel"}},
        }


# --------------------------------------------------------------------------------------------------------- FID
class FIDMetric(Metric):
    """FID between all composite frames and all GT frames of the slice (pool3 of the FID Inception).

    ``EvalOptions(set_level_ci=True)``: the features are also pooled per group of videos (state ``gt_groups``,
    ``comp_groups``: group -> GaussianStats; ``group_videos``: group -> videos), 10x the memory of the plain
    statistics (2 x 10 x 32 MiB for 2048-d), and :meth:`uncertainty` gives the jackknife interval.
    """

    keys = ("fid",)
    gt_stats: GaussianStats  # declared state (add_state)
    comp_stats: GaussianStats
    gt_groups: dict[int, GaussianStats]  # declared only with set_level_ci
    comp_groups: dict[int, GaussianStats]
    group_videos: dict[int, int]

    def __init__(self, options: EvalOptions, network=None) -> None:
        from ...core.networks.inception import FIDInception

        super().__init__()
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else FIDInception(options.device, precision=options.precision)
        self.add_state("gt_stats", GaussianStats)
        self.add_state("comp_stats", GaussianStats)
        if options.set_level_ci:
            for name in ("gt_groups", "comp_groups", "group_videos"):
                self.add_state(name, dict)

    def update(self, video: VideoSample, prepared=None) -> dict[str, float]:
        comp, gt = video.composite, video.gt
        gt_features = prepared if prepared is not None else self.prepare(gt)
        comp_features = []
        for s, feats in zip(frame_batches(len(gt), self.options.batch_size), gt_features):
            comp_features.append(self.net.features(comp[s]))
            self.gt_stats.add(feats)
            self.comp_stats.add(comp_features[-1])
        if self.options.set_level_ci:  # one D x D update per video and side (not per batch: 10x less work)
            add_grouped(self.gt_groups, video.clip_id, np.concatenate(gt_features))
            add_grouped(self.comp_groups, video.clip_id, np.concatenate(comp_features))
            g = video_group(video.clip_id)
            self.group_videos[g] = self.group_videos.get(g, 0) + 1
        return {}

    # Declared for the ground-truth cache: the ground truth's Inception features are worth preparing and storing.
    prepares_ground_truth = True

    def prepare_identity(self) -> dict[str, Any] | None:
        """What changes the features: device, batch size (their grouping), precision and the weights' sha256;
        ``None`` for an injected network (no stable identity)."""
        if self._injected:
            return None
        return {"metric": "fid", "device": self.options.device, "batch_size": self.options.batch_size,
                "precision": self.options.precision, "weights": {"inception": str(weights_info("inception")["sha256"])}}

    def prepare(self, gt, hole=None) -> list:
        """Inception features of the ground truth per frame batch (shared by the methods scored on this clip)."""
        return [self.net.features(gt[s]) for s in frame_batches(len(gt), self.options.batch_size)]

    def compute(self) -> dict[str, float]:
        return {"fid": frechet_of(self.gt_stats, self.comp_stats)}

    def uncertainty(self, computed: Mapping[str, float] | None = None) -> dict[str, dict[str, Any]]:
        """``{"fid": {"n", "mean", "se", "ci", "level", "method", "groups"}}``: the delete-a-group jackknife of
        :func:`~devil_dataset.eval.stats.jackknife.grouped_jackknife_frechet`, centred on ``computed["fid"]`` (what
        :meth:`compute` returned; computed again when not given); ``{}`` without ``set_level_ci``."""
        if not self.options.set_level_ci:
            return {}
        return set_level_uncertainty("fid", self.gt_groups, self.comp_groups, self.group_videos,
                                     computed if computed is not None else self.compute())

    def provenance(self) -> dict:
        from ...core.networks.precision import precision_provenance

        return {"network": "pytorch-fid InceptionV3 pool3 (2048-d)", "input": "x/255, bilinear 299x299, 2x-1",
                **precision_provenance(getattr(self.net, "precision", self.options.precision), self.options.device),
                "samples": {"gt_frames": self.gt_stats.n, "composite_frames": self.comp_stats.n},
                "frechet": {"statistics": "exact fixed-point sums (eval/frechet.GaussianStats)", **blas_provenance()},
                "weights": weights_provenance(("inception",), self._injected)}


__all__ = ["FIDMetric", "LPIPSMetric"]

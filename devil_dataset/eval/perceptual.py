"""LPIPS and FID (SPEC section 7): frame-level networks on the composite and the ground truth.

``Metric(options)`` loads its network (:class:`~devil_dataset.core.errors.WeightsMissingError` when weights are not
cached); tests inject networks with random weights through ``network=``. Frames go through the networks in
batches of ``EvalOptions.batch_size``; FID keeps streaming float64 sums (:class:`~devil_dataset.eval.frechet.
GaussianStats`), never the per-frame features, and its state merges across workers.
"""
from __future__ import annotations

import numpy as np

from ..core.weights import weights_provenance
from .frechet import GaussianStats, frechet_of
from .protocol import EvalOptions, Metric, VideoSample, frame_batches


# ------------------------------------------------------------------------------------------------------- LPIPS
class LPIPSMetric(Metric):
    """LPIPS (AlexNet, v0.1) between the composite and the ground truth, full frame, mean over frames."""

    keys = ("lpips",)
    values: list[float]  # declared state (add_state): one value per video

    def __init__(self, options: EvalOptions, network=None) -> None:
        from ..core.networks.lpips import LPIPSNetwork

        super().__init__()
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else LPIPSNetwork(options.device)
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
        return {"lpips": float(np.mean(self.values)) if self.values else float("nan")}

    def provenance(self) -> dict:
        from ..core.atomic import file_sha256
        from ..core.networks.lpips import LPIPS_NET, LPIPS_VERSION, lpips_heads_path

        return {
            "network": f"lpips {LPIPS_NET} v{LPIPS_VERSION}", "input": "composite vs GT, full frame, (x/255)*2-1",
            "weights": {**weights_provenance(("alexnet",), self._injected),
                        "lpips_heads": {"file": f"lpips/weights/v{LPIPS_VERSION}/{LPIPS_NET}.pth",
                                        "sha256": file_sha256(lpips_heads_path()),
                                        "verified": "shipped in the lpips wheel"}},
        }


# --------------------------------------------------------------------------------------------------------- FID
class FIDMetric(Metric):
    """FID between all composite frames and all GT frames of the slice (pool3 of the FID Inception)."""

    keys = ("fid",)
    gt_stats: GaussianStats  # declared state (add_state)
    comp_stats: GaussianStats

    def __init__(self, options: EvalOptions, network=None) -> None:
        from ..core.networks.inception import FIDInception

        super().__init__()
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else FIDInception(options.device)
        self.add_state("gt_stats", GaussianStats)
        self.add_state("comp_stats", GaussianStats)

    def update(self, video: VideoSample, prepared=None) -> dict[str, float]:
        comp, gt = video.composite, video.gt
        gt_features = prepared if prepared is not None else self.prepare(gt)
        for s, feats in zip(frame_batches(len(gt), self.options.batch_size), gt_features):
            self.gt_stats.add(feats)
            self.comp_stats.add(self.net.features(comp[s]))
        return {}

    def prepare(self, gt, hole=None) -> list:
        """Inception features of the ground truth per frame batch (shared by the methods scored on this clip)."""
        return [self.net.features(gt[s]) for s in frame_batches(len(gt), self.options.batch_size)]

    def compute(self) -> dict[str, float]:
        return {"fid": frechet_of(self.gt_stats, self.comp_stats)}

    def provenance(self) -> dict:
        return {"network": "pytorch-fid InceptionV3 pool3 (2048-d)", "input": "x/255, bilinear 299x299, 2x-1",
                "samples": {"gt_frames": self.gt_stats.n, "composite_frames": self.comp_stats.n},
                "weights": weights_provenance(("inception",), self._injected)}


__all__ = ["FIDMetric", "LPIPSMetric"]

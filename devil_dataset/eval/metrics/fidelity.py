"""EditBoard fidelity metrics (Chen et al., "EditBoard", Sec. 3.1 "Fidelity"): the classes that keep per-video
values; the math (FF-alpha, FF-beta, the unchanged region) is in :mod:`devil_dataset.eval.kernels.flow_fidelity`.

The ground truth's flows are estimated once per video and shared by FF-alpha and FF-beta of one pass.

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics.metric import VideoSample
    >>> gt = np.random.default_rng(0).integers(0, 256, (3, 24, 32, 3), dtype=np.uint8)
    >>> hole = np.zeros((3, 24, 32), bool); hole[:, 8:16, 8:16] = True
    >>> UnchangedRegionMetric().update(VideoSample("a", gt, gt, hole))
    {'unchanged_region': 0.0}
"""
from __future__ import annotations

import numpy as np

from ...core.flow import flow_estimator
from ..kernels.flow_fidelity import (
    FF_ALPHA_MIN_VALID,
    FF_ALPHA_THRESHOLD_255,
    FLOW_ZERO_PX,
    FlowFn,
    backward_warp,
    ff_alpha,
    ff_alpha_pairs,
    ff_beta,
    ff_beta_frame,
    unchanged_region,
    unchanged_region_frames,
    video_flows,
)
from ..kernels.pixel import mean_of
from .metric import EvalOptions, VideoSample


def flow_function(backend: str = "dis", device: str = "cpu", precision: str = "float32") -> tuple[FlowFn, str]:
    """The flow estimator for ``EvalOptions.flow`` and the backend name actually used.

    Dispatched by :func:`devil_dataset.core.flow.flow_estimator` (the one flow dispatcher): RAFT without cached
    weights raises :class:`~devil_dataset.core.errors.WeightsMissingError` here, at construction, not mid-pass.
    ``precision`` is RAFT's arithmetic (``EvalOptions.precision``); DIS ignores it.

    >>> flow_function("dis")[1]
    'dis'
    """
    est = flow_estimator(backend, device, precision=precision)
    return est, est.name


class _FlowCache:
    """Keeps the flows of the last video array seen (held by reference, so identity cannot be reused), so that
    FF-alpha and FF-beta of one evaluation pass estimate the ground truth's flows once."""

    def __init__(self) -> None:
        self.frames: np.ndarray | None = None
        self.backend: str | None = None
        self.flows: np.ndarray | None = None

    def get(self, frames: np.ndarray, flow_fn: FlowFn, backend: str) -> np.ndarray:
        if self.flows is None or self.frames is not frames or self.backend != backend:  # None: nothing seen yet
            self.flows = video_flows(frames, flow_fn)
            self.frames, self.backend = frames, backend
        return self.flows


_GT_FLOWS = _FlowCache()


class _FidelityMetric:
    keys: tuple[str, ...] = ()

    def __init__(self, options: EvalOptions | None = None, *, flow_fn: FlowFn | None = None) -> None:
        self.options = options or EvalOptions()
        if flow_fn is None:
            self._flow_fn, self.flow_backend = flow_function(self.options.flow, self.options.device,
                                                             self.options.precision)
        else:
            self._flow_fn, self.flow_backend = flow_fn, getattr(flow_fn, "__name__", "injected")
        self.values: list[float] = []

    def _gt_flows(self, video: VideoSample) -> np.ndarray:
        # RAFT's flows differ by precision: the shared cache of the GT's flows is keyed by it too
        key = f"raft:{self.options.precision}" if self.flow_backend == "raft" else self.flow_backend
        return _GT_FLOWS.get(video.gt, self._flow_fn, key)

    def compute(self) -> dict[str, float]:
        return {self.keys[0]: mean_of(np.asarray(self.values, np.float64))}

    def provenance(self) -> dict:
        # the stable name recorded since the metrics were added (the classes moved since)
        prov = {"implementation": f"devil_dataset.eval.fidelity.{type(self).__name__}",
                "paper": "EditBoard (Chen et al.), Sec. 3.1 Fidelity", "flow": self.flow_backend,
                "flow_requested": self.options.flow, "units": "[0, 1]"}
        if self.flow_backend == "raft":  # a network's flow: its arithmetic is part of what produced the values
            from ...core.networks.precision import precision_provenance  # torch

            prov.update(precision_provenance(self.options.precision, self.options.device))
        return prov


class FFAlphaMetric(_FidelityMetric):
    """``ff_alpha``: warp the composite with the ground truth's flow; error where the GT's own warp error <= theta."""

    keys = ("ff_alpha",)

    def __init__(self, options: EvalOptions | None = None, *, flow_fn: FlowFn | None = None,
                 threshold: float = FF_ALPHA_THRESHOLD_255) -> None:
        super().__init__(options, flow_fn=flow_fn)
        self.threshold = threshold
        self.valid_fractions: list[float] = []

    def update(self, video: VideoSample) -> dict[str, float]:
        scores, valid = ff_alpha_pairs(video.composite, video.gt, self._gt_flows(video), self.threshold)
        value = mean_of(scores)
        self.values.append(value)
        self.valid_fractions.append(float(valid.mean()) if len(valid) else float("nan"))
        return {"ff_alpha": value}

    def provenance(self) -> dict:
        vf = np.asarray(self.valid_fractions, np.float64)
        return {**super().provenance(), "result": "composite", "threshold_255": self.threshold,
                "threshold_rule": "max-channel |warp(GT_t+1) - GT_t| <= theta, inside the frame",
                "mean_valid_fraction": mean_of(vf) if len(vf) else None,
                "min_valid_fraction_sigma": FF_ALPHA_MIN_VALID,
                "videos_below_sigma": int(np.sum(vf < FF_ALPHA_MIN_VALID))}


class FFBetaMetric(_FidelityMetric):
    """``ff_beta``: 1 - cos of the angle between the composite's flow and the ground truth's flow, frame mean."""

    keys = ("ff_beta",)

    def update(self, video: VideoSample) -> dict[str, float]:
        gt_flows = self._gt_flows(video)
        value = ff_beta(video_flows(video.composite, self._flow_fn), gt_flows)
        self.values.append(value)
        return {"ff_beta": value}

    def provenance(self) -> dict:
        return {**super().provenance(), "result": "composite", "pixel_score": "1 - cos(angle)",
                "zero_flow_px": FLOW_ZERO_PX, "zero_rule": "both still: 0; one still: 1", "units": "[0, 2]"}


class UnchangedRegionMetric(_FidelityMetric):
    """``unchanged_region``: how much the RAW prediction altered known pixels (EditBoard's Semantic Score)."""

    keys = ("unchanged_region",)

    def update(self, video: VideoSample) -> dict[str, float]:
        value = unchanged_region(video.pred, video.gt, video.hole)
        self.values.append(value)
        return {"unchanged_region": value}

    def provenance(self) -> dict:
        prov = super().provenance()
        for key in ("flow", "flow_requested", "precision", "precision_effective"):  # no flow enters this score
            prov.pop(key, None)
        return {**prov, "result": "raw prediction", "region": "known pixels (hole == False)",
                "pixel_score": "max over RGB of |pred - gt| / 255"}


__all__ = ["FFAlphaMetric", "FFBetaMetric", "UnchangedRegionMetric", "backward_warp", "ff_alpha", "ff_alpha_pairs",
           "ff_beta", "ff_beta_frame", "flow_function", "unchanged_region", "unchanged_region_frames", "video_flows"]

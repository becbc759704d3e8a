"""The metrics that keep state: every metric class, the protocol they follow and the registry that names them.

Each class declares its state (mergeable across workers) and what it prepares from the ground truth (the cache asks
it: :meth:`~devil_dataset.eval.metrics.metric.Metric.prepare_identity`). Classes are imported here on first use
(the network metrics import torch). The Frechet and warp kernels the former ``metrics`` module re-exported are here
too, so its imports keep working:

    >>> from devil_dataset.eval.metrics import PSNRMetric, METRICS
    >>> PSNRMetric.keys, METRICS["fid"].keys
    (('psnr',), ('fid',))
"""
from __future__ import annotations

import importlib
from typing import Any

from ..kernels.frechet import FRECHET_EPS, FRECHET_IMAG_ATOL, GaussianStats, frechet_distance, frechet_of
from ..kernels.warp import (
    OCC_FB_ABS,
    OCC_FB_REL,
    OCC_GRAD_ABS,
    OCC_GRAD_REL,
    occlusion_mask,
    warp_backward,
    warp_error_pair,
)
from .metric import EvalOptions, Metric, VideoMetric, VideoSample
from .registry import DEVIL_METRICS, METRICS, PIXEL_METRICS, build_metrics, higher_is_better, metric_entry

#: Class name -> its module (imported when the name is first used: the network metrics import torch).
_CLASSES: dict[str, str] = {
    "PSNRMetric": "pixel", "SSIMMetric": "pixel", "PConsMetric": "pixel", "WarpErrorMetric": "warp",
    "LPIPSMetric": "perceptual", "FIDMetric": "perceptual", "I3DMetric": "i3d", "PVCSMetric": "i3d",
    "VFIDMetric": "i3d", "I3DVideoPass": "i3d", "SelfConsistencyMetric": "self_consistency",
    "FFAlphaMetric": "fidelity", "FFBetaMetric": "fidelity", "UnchangedRegionMetric": "fidelity",
    "PVCS_MODES": "i3d", "PVCS_NORM_EPS": "i3d", "PVCS_WINDOW": "i3d",
}


def __getattr__(name: str) -> Any:
    """A metric class by name, its module imported on first use."""
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = ["DEVIL_METRICS", "EvalOptions", "FRECHET_EPS", "FRECHET_IMAG_ATOL", "GaussianStats", "METRICS", "Metric",
           "OCC_FB_ABS", "OCC_FB_REL", "OCC_GRAD_ABS", "OCC_GRAD_REL", "PIXEL_METRICS", "VideoMetric", "VideoSample",
           "build_metrics", "frechet_distance", "frechet_of", "higher_is_better", "metric_entry", "occlusion_mask",
           "warp_backward", "warp_error_pair", *_CLASSES]

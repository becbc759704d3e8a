"""The background and masked PSNR / SSIM object-removal papers print (definitions in
:mod:`devil_dataset.eval.kernels.removal_fidelity` and ``docs/removal.md``), as metrics of the package's own videos:
the method's raw prediction (never the composite, which is the ground truth outside the hole by construction)
against the ground truth.

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics.metric import VideoSample
    >>> gt = np.zeros((2, 16, 16, 3), np.uint8); pred = gt.copy(); hole = np.zeros((2, 16, 16), bool)
    >>> hole[:, 4:8, 4:8] = True; pred[:, 0, 0] = 10  # one of 240 background pixels: 10 log10(255^2 720 / 300)
    >>> m = BackgroundPSNRMetric(); round(m.update(VideoSample("c", gt, pred, hole))["bg_psnr"], 2)
    51.93
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..kernels.removal_fidelity import (
    background_psnr_frames,
    background_ssim_frames,
    masked_psnr_frames,
    masked_ssim_frames,
)
from .metric import EvalOptions, Metric, VideoSample

#: Result key -> per-frame function (reference, result, hole); PSNR-type functions return [values, capped].
FIDELITY_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "bg_psnr": background_psnr_frames,
    "bg_ssim": background_ssim_frames,
    "masked_psnr": masked_psnr_frames,
    "masked_ssim": masked_ssim_frames,
}
REMOVAL_FIDELITY_METRICS: tuple[str, ...] = tuple(FIDELITY_FUNCTIONS)


def fidelity_video(key: str, reference: np.ndarray, result: np.ndarray, hole: np.ndarray) -> tuple[float, int]:
    """(per-video value: mean over the frames that have one; frames whose PSNR was capped) of metric ``key``."""
    out = FIDELITY_FUNCTIONS[key](reference, result, hole)
    values, capped = (out[0], int(out[1].sum())) if out.ndim == 2 else (out, 0)
    ok = values[np.isfinite(values)]
    return (math.fsum(ok) / len(ok) if len(ok) else float("nan")), capped


class _FidelityMetric(Metric):
    keys: tuple[str, ...] = ()
    values: list[float]
    capped: dict[str, int]

    def __init__(self, options: EvalOptions | None = None) -> None:
        super().__init__()
        self.options = options or EvalOptions()
        self.add_state("values", list)
        self.add_state("capped", dict)

    def update(self, video: VideoSample, prepared: Any = None) -> dict[str, float]:
        value, capped = fidelity_video(self.keys[0], video.gt, video.pred, video.hole)
        self.values.append(value)
        if capped:
            self.capped[video.clip_id] = capped
        return {self.keys[0]: value}

    def compute(self) -> dict[str, float]:
        ok = [v for v in self.values if not math.isnan(v)]
        return {self.keys[0]: math.fsum(ok) / len(ok) if ok else float("nan")}

    def provenance(self) -> dict:
        return {"compared": "raw prediction vs ground truth", "capped_frames": dict(self.capped)}


class BackgroundPSNRMetric(_FidelityMetric):
    """MiniMax-Remover's background PSNR (outside the hole; identical frames capped at the one-grey-level PSNR)."""

    keys = ("bg_psnr",)


class BackgroundSSIMMetric(_FidelityMetric):
    """MiniMax-Remover's background SSIM (the SSIM map averaged outside the hole)."""

    keys = ("bg_ssim",)


class MaskedPSNRMetric(_FidelityMetric):
    """VideoPainter's masked PSNR (both frames times the mask, full-frame PSNR)."""

    keys = ("masked_psnr",)


class MaskedSSIMMetric(_FidelityMetric):
    """VideoPainter's masked SSIM (both frames times the mask, full-frame SSIM)."""

    keys = ("masked_ssim",)


__all__ = ["FIDELITY_FUNCTIONS", "REMOVAL_FIDELITY_METRICS", "BackgroundPSNRMetric", "BackgroundSSIMMetric",
           "MaskedPSNRMetric", "MaskedSSIMMetric", "fidelity_video"]

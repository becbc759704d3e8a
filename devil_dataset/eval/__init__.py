"""DEVIL evaluation: functional metrics for one video, a streaming :class:`Evaluator`, and the engine.

    >>> import numpy as np
    >>> from devil_dataset.eval import psnr
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> round(psnr(np.full_like(gt, 255), gt, hole), 2)
    12.04

Torch and the networks are imported only when a network metric (``lpips``, ``pvcs``, ...) runs.
``devil_dataset.eval.evaluate`` stays the engine module (its ``evaluate`` function is not re-exported here).
"""
from __future__ import annotations

from .evaluate import evaluate_dataset, evaluate_directory, evaluate_methods, evaluate_slice
from .functional import Evaluator, as_frames, as_hole, lpips, pcons, psnr, pvcs, ssim, warp_error
from .protocol import EvalOptions, Metric, VideoSample
from .registry import DEVIL_METRICS, METRICS

__all__ = ["DEVIL_METRICS", "EvalOptions", "Evaluator", "METRICS", "Metric", "VideoSample", "as_frames", "as_hole",
           "evaluate_dataset", "evaluate_directory", "evaluate_methods", "evaluate_slice", "lpips", "pcons",
           "psnr", "pvcs", "ssim", "warp_error"]

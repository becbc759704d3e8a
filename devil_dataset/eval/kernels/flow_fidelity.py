"""EditBoard fidelity kernels (Chen et al., "EditBoard", Sec. 3.1 "Fidelity"), adapted to video inpainting.

The "original video" is the ground truth GT and the "edited video" is the result R:

- ``ff_alpha`` (Eq. 2-4): the GT's flow l_t (frame t -> t+1) backward-warps frame t+1 onto frame t, for the GT
  (w_t) and for the result (w'_t). Valid pixels M_t: inside the frame and ``max_c |w_t - GT_t| <= theta``.
  Frame score: mean over M_t of ``max_c |w'_t - R_t|``; video score: mean over frame pairs. R = composite.
- ``ff_beta``: flows of the result l'_t vs flows of the GT l_t; per pixel ``1 - cos(angle(l_t, l'_t))``, mean
  over the whole frame, then over pairs. R = composite.
- ``unchanged_region`` (EditBoard's Semantic Score, Eq. 5, with "outside the edit mask" = the known pixels): mean
  over known pixels of ``max_c |Pred - GT|`` on the RAW prediction (before compositing), then over frames.

All intensity values are in [0, 1] (EditBoard reports 0..255: multiply by 255 to compare). Lower is better for
all three. The functions take the result first, then the ground truth, as every metric function of the package
(``devil_dataset.eval.psnr(pred, gt, hole)``).

    >>> import numpy as np
    >>> gt = np.random.default_rng(0).integers(0, 256, (3, 24, 32, 3), dtype=np.uint8)
    >>> hole = np.zeros((3, 24, 32), bool); hole[:, 8:16, 8:16] = True
    >>> unchanged_region(gt, gt, hole)
    0.0
"""
from __future__ import annotations

from typing import Callable

import cv2
import numpy as np

from ...core.flow import flow_estimator
from .pixel import mean_of

FlowFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


# EditBoard's reference implementation (ff_alpha.py, ``threshold=5``): theta on 0..255 absolute differences
# (the paper names theta without a value). Inclusive (``<=``), as there. Units here: 0..255.
FF_ALPHA_THRESHOLD_255 = 5.0


# EditBoard sigma (reference implementation: 0.70): below this mean valid-pixel fraction the paper prefers FF-beta.
# We always report FF-alpha and record in provenance how many videos fall below sigma (not replaced by 0).
FF_ALPHA_MIN_VALID = 0.70


# Flow vectors shorter than this (pixels) count as "no motion". EditBoard divides by (|l| + 1e-7), which scores
# two zero vectors as 1; we score them 0 (both still: agreement) and one zero vs one moving vector as 1 (cos 0).
FLOW_ZERO_PX = 1e-6


def video_flows(frames: np.ndarray, flow_fn: FlowFn) -> np.ndarray:
    """Forward flows float32 [T-1, H, W, 2] of a uint8 [T, H, W, 3] video: frame_t(p) ~ frame_t+1(p + flow_t(p))."""
    t, h, w = frames.shape[:3]
    out = np.empty((max(t - 1, 0), h, w, 2), np.float32)
    for i in range(t - 1):
        out[i] = flow_fn(frames[i], frames[i + 1])
    return out


def backward_warp(frame: np.ndarray, flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``frame(p + flow(p))`` (bilinear, float32) and the bool mask of samples inside the frame.

    >>> f = np.arange(12, dtype=np.float32).reshape(3, 4); fl = np.zeros((3, 4, 2), np.float32); fl[..., 0] = 1
    >>> w, ok = backward_warp(f, fl); w[0, :3].tolist(), ok[0].tolist()
    ([1.0, 2.0, 3.0], [True, True, True, False])
    """
    h, w = flow.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    mx, my = gx + flow[..., 0], gy + flow[..., 1]
    warped = cv2.remap(np.ascontiguousarray(frame, dtype=np.float32), mx, my, cv2.INTER_LINEAR,
                       borderMode=cv2.BORDER_REPLICATE)
    inside = (mx >= 0) & (mx <= w - 1) & (my >= 0) & (my <= h - 1)
    return warped, inside


def _max_channel_abs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b).max(axis=-1)


def ff_alpha_pairs(result: np.ndarray, gt: np.ndarray, gt_flows: np.ndarray,
                   threshold: float = FF_ALPHA_THRESHOLD_255) -> tuple[np.ndarray, np.ndarray]:
    """Per frame pair t (0..T-2): FF-alpha score in [0, 1] (NaN without valid pixel) and valid-pixel fraction.

    ``threshold`` is theta in 0..255 units (default 5, EditBoard's implementation).
    """
    n = len(gt_flows)
    scores, valid_frac = np.full(n, np.nan), np.zeros(n)
    for t in range(n):
        g0, g1 = gt[t].astype(np.float32), gt[t + 1].astype(np.float32)
        r0, r1 = result[t].astype(np.float32), result[t + 1].astype(np.float32)
        wg, inside = backward_warp(g1, gt_flows[t])
        wr, _ = backward_warp(r1, gt_flows[t])
        valid = inside & (_max_channel_abs(wg, g0) <= threshold)
        valid_frac[t] = valid.mean()
        if valid.any():
            scores[t] = float(_max_channel_abs(wr, r0)[valid].mean(dtype=np.float64)) / 255.0
    return scores, valid_frac


def ff_alpha(result: np.ndarray, gt: np.ndarray, flow_fn: FlowFn | None = None,
             threshold: float = FF_ALPHA_THRESHOLD_255) -> tuple[float, float]:
    """FF-alpha of ``result`` against ``gt`` (uint8 [T, H, W, 3]): (score in [0, 1], mean valid fraction).

    >>> v = np.random.default_rng(0).integers(0, 256, (3, 16, 16, 3), dtype=np.uint8)
    >>> still = np.repeat(v[:1], 3, axis=0)  # a still video: zero flow, zero warp error
    >>> ff_alpha(still, still)
    (0.0, 1.0)
    """
    flows = video_flows(gt, flow_fn or flow_estimator("dis"))
    scores, valid = ff_alpha_pairs(result, gt, flows, threshold)
    return mean_of(scores), float(valid.mean()) if len(valid) else float("nan")


def ff_beta_frame(result_flow: np.ndarray, gt_flow: np.ndarray) -> float:
    """Mean over the frame of ``1 - cos`` of the angle between two flows [H, W, 2] (0 = same directions, 2 = opposite).

    >>> a = np.zeros((2, 2, 2), np.float32); a[..., 0] = 1
    >>> ff_beta_frame(a, a), ff_beta_frame(a, -a), ff_beta_frame(a, a[..., ::-1])
    (0.0, 2.0, 1.0)
    """
    a = gt_flow.astype(np.float64)
    b = result_flow.astype(np.float64)
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    moving = (na > FLOW_ZERO_PX) & (nb > FLOW_ZERO_PX)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(moving, (a * b).sum(-1) / (na * nb), 0.0)
    still = (na <= FLOW_ZERO_PX) & (nb <= FLOW_ZERO_PX)
    per_pixel = np.where(still, 0.0, 1.0 - np.clip(cos, -1.0, 1.0))
    return float(per_pixel.mean())


def ff_beta(result_flows: np.ndarray, gt_flows: np.ndarray) -> float:
    """FF-beta from flows [T-1, H, W, 2] of the result and of the ground truth: mean of :func:`ff_beta_frame`."""
    if gt_flows.shape != result_flows.shape:
        raise ValueError(f"flow shapes differ: result {result_flows.shape} vs gt {gt_flows.shape}")
    return mean_of(np.array([ff_beta_frame(r, g) for r, g in zip(result_flows, gt_flows)]))


def unchanged_region_frames(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Per frame: mean over known pixels of ``max_c |pred - gt|`` / 255 (NaN for a frame without known pixels)."""
    if gt.shape != pred.shape or hole.shape != gt.shape[:3]:
        raise ValueError(f"shape mismatch: pred {pred.shape}, gt {gt.shape}, hole {hole.shape}")
    out = np.full(len(gt), np.nan)
    for t in range(len(gt)):
        known = ~hole[t]
        if known.any():
            diff = np.abs(gt[t].astype(np.int16) - pred[t].astype(np.int16)).max(axis=-1)
            out[t] = float(diff[known].mean(dtype=np.float64)) / 255.0
    return out


def unchanged_region(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> float:
    """Unchanged-region score of a RAW prediction: mean over frames of :func:`unchanged_region_frames`.

    >>> gt = np.zeros((1, 2, 2, 3), np.uint8); pred = gt + 51; hole = np.array([[[True, False], [False, False]]])
    >>> unchanged_region(pred, gt, hole)
    0.2
    """
    return mean_of(unchanged_region_frames(pred, gt, hole))


__all__ = ["FF_ALPHA_MIN_VALID", "FF_ALPHA_THRESHOLD_255", "FLOW_ZERO_PX", "FlowFn", "backward_warp", "ff_alpha",
           "ff_alpha_pairs", "ff_beta", "ff_beta_frame", "unchanged_region", "unchanged_region_frames", "video_flows"]

"""EditBoard fidelity metrics (Chen et al., "EditBoard", Sec. 3.1 "Fidelity"), adapted to video inpainting.

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

from ..core.cv_determinism import pin_opencv
from .pixel import mean_of
from .protocol import EvalOptions, VideoSample

pin_opencv()  # CPU-independent OpenCV results (issue 27, core/cv_determinism.py)

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


def flow_function(backend: str = "dis", device: str = "cpu", precision: str = "float32") -> tuple[FlowFn, str]:
    """The flow estimator for ``EvalOptions.flow`` and the backend name actually used.

    Dispatched by :func:`devil_dataset.core.flow.flow_estimator` (the one flow dispatcher): RAFT without cached
    weights raises :class:`~devil_dataset.core.errors.WeightsMissingError` here, at construction, not mid-pass.
    ``precision`` is RAFT's arithmetic (``EvalOptions.precision``); DIS ignores it.

    >>> flow_function("dis")[1]
    'dis'
    """
    from ..core.flow import flow_estimator

    est = flow_estimator(backend, device, precision=precision)
    return est, est.name


def video_flows(frames: np.ndarray, flow_fn: FlowFn) -> np.ndarray:
    """Forward flows float32 [T-1, H, W, 2] of a uint8 [T, H, W, 3] video: frame_t(p) ~ frame_t+1(p + flow_t(p))."""
    t, h, w = frames.shape[:3]
    out = np.empty((max(t - 1, 0), h, w, 2), np.float32)
    for i in range(t - 1):
        out[i] = flow_fn(frames[i], frames[i + 1])
    return out


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
    flows = video_flows(gt, flow_fn or flow_function("dis")[0])
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
        prov = {"implementation": f"devil_dataset.eval.fidelity.{type(self).__name__}",
                "paper": "EditBoard (Chen et al.), Sec. 3.1 Fidelity", "flow": self.flow_backend,
                "flow_requested": self.options.flow, "units": "[0, 1]"}
        if self.flow_backend == "raft":  # a network's flow: its arithmetic is part of what produced the values
            from ..core.networks.precision import precision_provenance

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

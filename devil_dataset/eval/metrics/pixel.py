"""The pixel metrics that keep state (the release's metrics): PSNR, SSIM and PCons (PSNR, mask) of the composite.

Each collects one value per video (declared state: mergeable across workers) and averages at ``compute()``, PSNR-type
values clipped as the release clips them. ``options.pixel_backend`` picks where the values are computed
(:func:`resolve_pixel_backend`): the numpy kernels of :mod:`devil_dataset.eval.kernels.pixel`, or their torch
versions in :mod:`devil_dataset.eval.kernels.pixel_torch` (the same values within 1e-9).

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics.metric import VideoSample
    >>> gt = np.zeros((3, 60, 60, 3), np.uint8); hole = np.zeros((3, 60, 60), bool); hole[:, 20:30, 20:30] = True
    >>> m = PSNRMetric(); round(m.update(VideoSample("a", gt, np.full_like(gt, 255), hole))["psnr"], 2)
    15.56
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core.errors import DevilError, UnknownNameError
from ..kernels import pixel_torch
from ..kernels.pixel import (
    PCONS_PATCH,
    PCONS_SEARCH,
    PSNR_DATA_RANGE,
    SSIM_ARITHMETIC,
    SSIM_DATA_RANGE,
    SSIM_WIN_SIZE,
    cap_frames,
    clip_psnr_values,
    mean_of,
    pcons_psnr_mask,
    pcons_psnr_mask_pairs,
    psnr,
    psnr_frames,
    ssim,
)
from ..kernels.pixel_torch import to_device
from ..kernels.ssim_window import SSIM_K1, SSIM_K2
from .metric import EvalOptions, Metric, VideoSample

if TYPE_CHECKING:
    import torch


def resolve_pixel_backend(options: EvalOptions) -> tuple[str, str]:
    """(backend, device) where PSNR, SSIM, PCons and the warp error compute for ``options``.

    ``pixel_backend="numpy"``: ``("numpy", "cpu")``; ``"torch"``: torch on ``options.device`` (``auto``: CUDA when
    torch sees a GPU, else the CPU); ``"auto"``: torch when the device is a GPU, numpy on the CPU. A CUDA device
    without a GPU is a :class:`~devil_dataset.core.errors.DevilError` naming it. torch is imported only when a GPU
    may be involved.

    >>> resolve_pixel_backend(EvalOptions()), resolve_pixel_backend(EvalOptions(pixel_backend="torch"))
    (('numpy', 'cpu'), ('torch', 'cpu'))
    """
    backend, device = options.pixel_backend, options.device
    if backend == "numpy" or (backend == "auto" and device == "cpu"):
        return "numpy", "cpu"
    if device == "cpu":
        return "torch", "cpu"
    import torch

    if device == "auto":
        if not torch.cuda.is_available():
            return ("torch", "cpu") if backend == "torch" else ("numpy", "cpu")
        device = "cuda"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DevilError(f"pixel_backend {backend!r} on device {device!r}: no CUDA device is available "
                         "(use device='cpu' or pixel_backend='numpy')")
    return "torch", device


def video_tensors(video: VideoSample, device: str) -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]:
    """(composite, gt, hole) of ``video`` on ``device``: moved once per video, kept in ``video.cache`` for every
    pixel metric that scores it."""
    key = ("pixel_torch", device)
    found = video.cache.get(key)
    if found is None:
        found = video.cache[key] = (to_device(video.composite, device), to_device(video.gt, device),
                                    to_device(video.hole, device))
    return found


def _frame_samples(video: VideoSample) -> int:
    """The values one frame's PSNR is computed over: H x W x channels."""
    return int(np.prod(video.gt.shape[1:]))


def _clip_rule(options: EvalOptions) -> str:
    """The provenance of ``options.psnr_cap`` (the release's text unchanged, so its results stay comparable)."""
    if options.psnr_cap == "one_grey_level":
        return "each frame (pair) capped at the PSNR of a one-grey-level error: 10 log10(N 255^2), N samples"
    return "[0, max finite] per video"


class _PerVideoMetric(Metric):
    """Shared machinery: collect per-video values (declared state ``values``: key -> list), average at compute().

    ``options.pixel_backend`` picks where the values are computed (``pixel_backend``, ``pixel_device``: see
    :func:`resolve_pixel_backend`): the numpy kernels, or their torch versions (the same values within 1e-9).
    """

    keys: tuple[str, ...] = ()
    clip_keys: tuple[str, ...] = ()  # PSNR-type keys clipped to [0, max finite] before averaging
    values: dict[str, list[float]]  # declared state (add_state): key -> one value per video

    def __init__(self, options: EvalOptions | None = None) -> None:
        super().__init__()
        self.options = options or EvalOptions()
        self.add_state("values", lambda: {k: [] for k in self.keys})
        self.pixel_backend, self.pixel_device = resolve_pixel_backend(self.options)

    @property
    def _torch(self) -> bool:
        return self.pixel_backend == "torch"

    def _torch_kwargs(self) -> dict:
        return {"device": self.pixel_device, "batch_size": self.options.batch_size}

    def _video_values(self, video: VideoSample) -> dict[str, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def update(self, video: VideoSample, prepared=None) -> dict[str, float]:
        values = self._video_values(video)
        for k, v in values.items():
            self.values[k].append(v)
        return values

    def compute(self) -> dict[str, float]:
        out = {}
        for k in self.keys:
            vals = np.asarray(self.values[k], np.float64)
            if k in self.clip_keys:
                vals, _ = clip_psnr_values(vals)
            out[k] = mean_of(vals)
        return out

    def provenance(self) -> dict:
        # the metric's stable name, recorded in every results file (the class moved to
        # eval/metrics/pixel.py; the name stays so that results and value caches stay comparable)
        return {"implementation": f"devil_dataset.eval.pixel.{type(self).__name__}",
                "pixel_backend": self.pixel_backend, "pixel_device": self.pixel_device}


class PSNRMetric(_PerVideoMetric):
    """PSNR of the composite against the ground truth (data range 1, frame mean; the release's metrics)."""

    keys = ("psnr",)
    clip_keys = ("psnr",)

    def _video_values(self, video: VideoSample) -> dict[str, float]:
        capped = self.options.psnr_cap == "one_grey_level"
        if self._torch:
            comp, gt, hole = video_tensors(video, self.pixel_device)
            if capped:
                frames = pixel_torch.psnr_frames(comp, gt, hole, **self._torch_kwargs())
                return {"psnr": float(np.mean(cap_frames(frames, _frame_samples(video))))}
            return {"psnr": pixel_torch.psnr(comp, gt, hole, **self._torch_kwargs())}
        if capped:
            frames = psnr_frames(video.composite, video.gt, video.hole)
            return {"psnr": float(np.mean(cap_frames(frames, _frame_samples(video))))}
        return {"psnr": psnr(video.composite, video.gt, video.hole)}  # the composite differs only in the hole

    def provenance(self) -> dict:
        return {**super().provenance(), "data_range": PSNR_DATA_RANGE, "clip": _clip_rule(self.options)}


class SSIMMetric(_PerVideoMetric):
    """SSIM of the composite (scikit-image, 7x7 uniform window); ``options.ssim_mode`` picks the data range."""

    keys = ("ssim",)
    ssim_mode: str  # ``options.ssim_mode``, checked

    def __init__(self, options: EvalOptions | None = None) -> None:
        super().__init__(options)
        mode = self.options.ssim_mode
        if mode not in SSIM_DATA_RANGE:
            raise UnknownNameError(f"unknown ssim mode {mode!r}; valid: {', '.join(SSIM_DATA_RANGE)}")
        self.ssim_mode = mode

    def _video_values(self, video: VideoSample) -> dict[str, float]:
        if self._torch:
            comp, gt, _ = video_tensors(video, self.pixel_device)
            return {"ssim": pixel_torch.ssim(comp, gt, self.ssim_mode, **self._torch_kwargs())}
        # the composite differs from the ground truth only inside the hole: the map is computed around it only
        return {"ssim": ssim(video.composite, video.gt, self.ssim_mode, video.hole)}

    def provenance(self) -> dict:
        return {
            **super().provenance(), "mode": self.ssim_mode, "arithmetic": SSIM_ARITHMETIC,
            "data_range": SSIM_DATA_RANGE[self.ssim_mode], "win_size": SSIM_WIN_SIZE,
            "K1": SSIM_K1, "K2": SSIM_K2, "gaussian_weights": False, "use_sample_covariance": True,
        }


class PConsMetric(_PerVideoMetric):
    """PCons (PSNR, mask): best-matching 50x50 patch PSNR between consecutive composite frames (the release's
    metrics)."""

    keys = ("pcons_psnr_mask",)
    clip_keys = ("pcons_psnr_mask",)

    def _video_values(self, video: VideoSample) -> dict[str, float]:
        capped = self.options.psnr_cap == "one_grey_level"
        if self._torch:
            comp, _, hole = video_tensors(video, self.pixel_device)
            if not capped:
                return {"pcons_psnr_mask": pixel_torch.pcons_psnr_mask(comp, hole, **self._torch_kwargs())}
            pairs = pixel_torch.pcons_psnr_mask_pairs(comp, hole, **self._torch_kwargs())
        elif not capped:
            return {"pcons_psnr_mask": pcons_psnr_mask(video.composite, video.hole)}
        else:
            pairs = pcons_psnr_mask_pairs(video.composite, video.hole)
        pairs = cap_frames(pairs[~np.isnan(pairs)], PCONS_PATCH * PCONS_PATCH * video.gt.shape[-1])
        return {"pcons_psnr_mask": float(np.mean(pairs)) if len(pairs) else float("nan")}

    def provenance(self) -> dict:
        return {
            **super().provenance(), "patch": PCONS_PATCH, "search_offsets": [-PCONS_SEARCH, PCONS_SEARCH - 1],
            "pairs_without_hole": "skipped", "clip": _clip_rule(self.options),
        }


__all__ = ["PConsMetric", "PSNRMetric", "SSIMMetric", "resolve_pixel_backend", "video_tensors"]

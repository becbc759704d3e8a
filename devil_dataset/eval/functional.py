"""The front door: score your own videos with the DEVIL metrics, one call per video or a streaming Evaluator.

Every function takes ``(pred, gt, hole)`` for one video: numpy arrays or torch tensors, frames uint8 in
[0, 255] or float in [0, 1], laid out ``"THWC"`` (default) or ``"TCHW"`` (the training dataset's layout; an
explicit argument, never guessed from the shape); ``hole`` is True (or 1) where the frame was missing, shaped
[T, H, W] (or [T, 1, H, W] / [T, H, W, 1]). One validator (:func:`as_frames`, :func:`as_hole`) checks all of them
and raises :class:`~devil_dataset.core.errors.InvalidInputError` naming the argument; nothing is rescaled silently.
Float frames are quantised to 8 bits (``round(255 x)``): the DEVIL metrics are defined on 8-bit frames (the
release's metrics). The values are those of the metric classes and of ``devil evaluate`` on the same frames.

    >>> import numpy as np
    >>> from devil_dataset.eval import psnr, ssim
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); pred = np.full_like(gt, 255)
    >>> hole = np.zeros((3, 64, 64), bool); hole[:, 16:32, 16:32] = True
    >>> round(psnr(pred, gt, hole), 2), round(ssim(pred, gt, hole), 4)
    (12.04, 0.8563)
"""
from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from ..core.cpu_pins import cpu_pinned
from ..core.errors import DevilError, InvalidInputError, UnknownNameError
from .metrics.metric import EvalOptions, Metric, VideoMetric, VideoSample
from .protocols.registry import build_metrics
from .scoring.one_pass import collect, update_metrics
from .scoring.results import build_results

# Layouts a caller may name (explicit argument; the release's frames are [T, H, W, 3] uint8).
LAYOUTS: tuple[str, ...] = ("THWC", "TCHW")


def _to_numpy(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    raise InvalidInputError(f"{name}: expected a numpy array or a torch tensor, got {type(x).__name__}")


def as_frames(x: Any, name: str = "frames", layout: str = "THWC") -> np.ndarray:
    """``x`` as uint8 [T, H, W, 3] (see the module docstring for what is accepted).

    >>> as_frames(np.ones((2, 3, 4, 5), np.float32), "pred", layout="TCHW").shape
    (2, 4, 5, 3)
    >>> as_frames(np.full((1, 2, 2, 3), 2.0), "pred")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.InvalidInputError: pred: float frames must lie in [0, 1] (got values in [2, 2]);
    pass uint8 for 0-255 frames
    """
    if layout not in LAYOUTS:
        raise UnknownNameError(f"layout: unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
    a = _to_numpy(x, name)
    if a.ndim != 4:
        raise InvalidInputError(f"{name}: expected 4 dimensions ({layout}), got shape {tuple(a.shape)}")
    if layout == "TCHW":
        a = a.transpose(0, 2, 3, 1)
    if a.shape[-1] != 3:
        raise InvalidInputError(f"{name}: expected 3 colour channels in layout {layout}, got shape {tuple(a.shape)}")
    if a.shape[0] == 0:
        raise InvalidInputError(f"{name}: the video has no frames")
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if np.issubdtype(a.dtype, np.floating):
        lo, hi = float(np.min(a)), float(np.max(a))
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo < 0.0 or hi > 1.0:
            raise InvalidInputError(f"{name}: float frames must lie in [0, 1] (got values in [{lo:g}, {hi:g}]); "
                                    "pass uint8 for 0-255 frames")
        return np.ascontiguousarray(np.rint(a.astype(np.float64) * 255.0).astype(np.uint8))
    raise InvalidInputError(f"{name}: dtype {a.dtype} is not supported; pass uint8 in [0, 255] or float in [0, 1]")


def as_hole(x: Any, shape: Sequence[int], name: str = "hole") -> np.ndarray:
    """``x`` as bool [T, H, W] (True = hole) for frames of ``shape`` [T, H, W, 3]; values must be 0/1.

    >>> as_hole(np.ones((2, 1, 4, 5), np.uint8), (2, 4, 5, 3)).shape
    (2, 4, 5)
    """
    a = _to_numpy(x, name)
    t, h, w = (int(v) for v in shape[:3])
    if a.ndim == 4 and a.shape[1] == 1:
        a = a[:, 0]
    elif a.ndim == 4 and a.shape[3] == 1:
        a = a[..., 0]
    if a.shape != (t, h, w):
        raise InvalidInputError(f"{name}: expected shape ({t}, {h}, {w}) to match the frames, got {tuple(x.shape)}")
    if a.dtype == bool:
        return np.ascontiguousarray(a)
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise InvalidInputError(f"{name}: dtype {a.dtype} is not supported; pass bool (True = hole) or 0/1")
    if not np.isin(a, (0, 1)).all():
        raise InvalidInputError(f"{name}: values must be 0/1 or bool (True = hole), got values in "
                                f"[{float(np.min(a)):g}, {float(np.max(a)):g}]")
    return a.astype(bool)


def video_sample(pred: Any, gt: Any, hole: Any, *, layout: str = "THWC", clip_id: str = "video") -> VideoSample:
    """Validate one video's arguments and return the :class:`VideoSample` every metric consumes."""
    g = as_frames(gt, "gt", layout)
    p = as_frames(pred, "pred", layout)
    if p.shape != g.shape:
        raise InvalidInputError(f"pred: shape {p.shape} differs from gt's {g.shape} (in THWC)")
    return VideoSample(clip_id, g, p, as_hole(hole, g.shape))


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def _score(name: str, pred, gt, hole, layout: str, **options) -> dict[str, float]:
    video = video_sample(pred, gt, hole, layout=layout)
    metrics, _ = build_metrics([name], EvalOptions(**options))
    return {k: float(v) for k, v in metrics[name].update(video).items()}


def psnr(pred, gt, hole, *, layout: str = "THWC") -> float:
    """PSNR (dB) of the composite against the ground truth, mean over frames (inf when they are equal)."""
    return _score("psnr", pred, gt, hole, layout)["psnr"]


def ssim(pred, gt, hole, *, layout: str = "THWC", mode: str = "release") -> float:
    """SSIM of the composite; ``mode="release"`` (data range 2, as the release) or ``"standard"`` (range 1)."""
    return _score("ssim", pred, gt, hole, layout, ssim_mode=mode)["ssim"]


def pcons(pred, gt, hole, *, layout: str = "THWC") -> float:
    """PCons (PSNR, mask): patch consistency between consecutive composite frames (frames of at least 50x50)."""
    return _score("pcons", pred, gt, hole, layout)["pcons_psnr_mask"]


def warp_error(pred, gt, hole, *, layout: str = "THWC", flow: str = "auto", device: str = "cpu") -> float:
    """Warp error (mask) with flow on the GT frames (``flow``: ``"auto"``, ``"raft"`` or ``"dis"``)."""
    return _score("warp_error", pred, gt, hole, layout, flow=flow, device=device)["warp_error_mask"]


def lpips(pred, gt, hole, *, layout: str = "THWC", device: str = "cpu") -> float:
    """LPIPS (AlexNet v0.1) of the composite, mean over frames (needs the cached weights)."""
    return _score("lpips", pred, gt, hole, layout, device=device)["lpips"]


def pvcs(pred, gt, hole, *, layout: str = "THWC", device: str = "cpu") -> float:
    """PVCS: I3D feature distance over 10-frame windows (needs the cached I3D weights)."""
    return _score("pvcs", pred, gt, hole, layout, device=device)["pvcs"]


class Evaluator:
    """Streaming evaluation of your own videos: ``update`` per video, ``compute`` for slice values.

    Set-level metrics (``fid``, ``vfid``) work here too; ``results()`` gives the ``devil evaluate`` document.
    Two evaluators (e.g. from two workers) combine with ``merge``.

    >>> ev = Evaluator(["psnr", "ssim"])
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> row = ev.update(np.full_like(gt, 255), gt, hole)
    >>> {k: round(v, 2) for k, v in ev.compute().items()}
    {'psnr': 12.04, 'ssim': 0.86}
    """

    def __init__(self, metrics: Sequence[str] | None = None, options: EvalOptions | None = None, *,
                 layout: str = "THWC") -> None:
        if layout not in LAYOUTS:
            raise UnknownNameError(f"layout: unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
        self.options = options or EvalOptions()
        self.layout = layout
        self.metrics, self.skipped = build_metrics(list(metrics) if metrics is not None else None, self.options)
        self.videos: dict[str, dict[str, float]] = {}
        self.frames = 0

    @cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
    def update(self, pred, gt, hole, clip_id: str | None = None) -> dict[str, float]:
        """Score one video (``clip_id`` defaults to its position); returns its per-video values."""

        clip_id = clip_id if clip_id is not None else f"video{len(self.videos):05d}"
        if clip_id in self.videos:
            raise InvalidInputError(f"clip_id: {clip_id!r} was already scored")
        video = video_sample(pred, gt, hole, layout=self.layout, clip_id=clip_id)
        self.videos[clip_id] = row = update_metrics(self.metrics, video)
        self.frames += video.num_frames
        return dict(row)

    @cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
    def _evaluation(self):
        if not self.videos:
            raise DevilError("Evaluator: no video was scored yet (call update first)")
        return collect(self.metrics, copy.deepcopy(self.videos), self.frames)

    def compute(self) -> dict[str, float]:
        """Slice-level values (PSNR-type per-video values clipped as in the release before averaging)."""
        return self._evaluation().summary

    def results(self, method: str = "method", slice_name: str | None = None) -> dict:
        """The results document ``devil evaluate`` writes (summary, per-video values, provenance)."""

        return build_results(self._evaluation(), method=method, slice_name=slice_name, inputs={"mode": "python"},
                             options=self.options, metrics=list(self.metrics), skipped=dict(self.skipped))

    def merge(self, other: "Evaluator") -> "Evaluator":
        """Add ``other``'s videos (same metrics, disjoint clip ids) to this evaluator; returns ``self``."""
        if list(other.metrics) != list(self.metrics):
            raise InvalidInputError(f"other: metrics {list(other.metrics)} differ from {list(self.metrics)}")
        twice = set(self.videos) & set(other.videos)
        if twice:
            raise InvalidInputError(f"other: clip ids scored in both evaluators: {', '.join(sorted(twice))}")
        mine, theirs = _with_declared_state(self.metrics, "merged"), _with_declared_state(other.metrics, "merged")
        for name, metric in mine.items():
            metric.merge(theirs[name])
        self.videos.update(other.videos)
        self.frames += other.frames
        return self

    def reset(self) -> None:
        """Forget every scored video."""
        for metric in _with_declared_state(self.metrics, "reset").values():
            metric.reset()
        self.videos, self.frames = {}, 0


def _with_declared_state(metrics: dict[str, VideoMetric], verb: str) -> dict[str, Metric]:
    """``metrics``, each a :class:`~devil_dataset.eval.metrics.metric.Metric` (declared state: mergeable, resettable);
    a metric that keeps undeclared state (``self_consistency``, the fidelity metrics) is an error."""
    out: dict[str, Metric] = {}
    for name, metric in metrics.items():
        if not isinstance(metric, Metric):
            raise DevilError(f"metric {name}: its state cannot be {verb} (it declares no state)")
        out[name] = metric
    return out


__all__ = ["Evaluator", "LAYOUTS", "as_frames", "as_hole", "lpips", "pcons", "psnr", "pvcs", "ssim", "video_sample",
           "warp_error"]

"""PROVE's reference-free object-removal metrics RC-S and RC-T (``docs/removal.md``), computed as
xiaomi-research/prove's ``utils/metrics.py`` computes them, with each distinct (frame, crop) passed through DINOv2
once and crops of one size batched.

- **RC-S** (higher is better), per frame: the mask's components (grey > 127, 4-connectivity, small ones dropped),
  each cropped to its bounding square grown by 1/3; in each crop, windows of DINOv2 patch cells compare the filled
  cells' features with the known ones (RBF MMD); the frame's value is exp(-max(0, mean MMD) / 3), averaged over
  components; the video's value the mean over frames that have one.
- **RC-T** (lower is better), per consecutive pair: both frames cropped to the grown bounding square of the union of
  the two masks; windows of the cells inside both masks compare frame t's features with frame t+1's (RBF MMD); the
  pair's value the mean over windows; the video's value the mean over pairs that have one.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> def features(images):  # a stand-in network: 4 random channels per 14x14 patch
    ...     return np.stack([rng.normal(size=(im.shape[0] // 14, im.shape[1] // 14, 4)) for im in images])
    >>> frames = rng.integers(0, 255, (3, 64, 64, 3), dtype=np.uint8)
    >>> masks = np.zeros((3, 64, 64), np.uint8); masks[:, 20:44, 20:44] = 255
    >>> s = removal_scores(frames, masks, features)
    >>> s.frames_scored, s.pairs_scored, s.forward_crops, 0 < s.rc_s < 1, s.rc_t > 0
    (3, 2, 3, True, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...kernels.device import resolve_device
from ...metrics.metric import EvalOptions, Metric, VideoSample
from .definition import REMOVAL_METRICS
from .kernels import (
    MASK_THRESHOLD,
    Box,
    GridGeometry,
    bounding_square,
    first_channel_mask,
    grey_mask,
    grid_geometry,
    kept_components,
    network_input,
    pooled_mask,
    rcs_crop_value,
    rct_pair_value,
)

#: A feature network: equal-size uint8 RGB images -> float [N, H / 14, W / 14, C] patch features.
FeatureFn = Callable[[Sequence[np.ndarray]], np.ndarray]
#: The MMD arithmetic of each parity: ``release`` computes as PROVE's code (torch float32, one window at a time),
#: ``corrected`` in float64 (exact to ~1e-12; PROVE's float32 rounding moves a small RC-T by up to ~3e-4 of it).
ARITHMETIC_OF_PARITY: dict[str, str] = {"release": "float32", "corrected": "float64"}


@dataclass
class RemovalScores:
    """One video's RC-S and RC-T: per-frame (``rcs_frames``, NaN where a frame has no score) and per-pair
    (``rct_pairs``) values, the video values (NaN when nothing was scored) and the DINOv2 crops computed."""

    rcs_frames: np.ndarray
    rct_pairs: np.ndarray
    forward_crops: int

    @property
    def rc_s(self) -> float:
        return _mean_scored(self.rcs_frames)

    @property
    def rc_t(self) -> float:
        return _mean_scored(self.rct_pairs)

    @property
    def frames_scored(self) -> int:
        return int(np.isfinite(self.rcs_frames).sum())

    @property
    def pairs_scored(self) -> int:
        return int(np.isfinite(self.rct_pairs).sum())

    def values(self, metrics: Sequence[str] = REMOVAL_METRICS) -> dict[str, float]:
        return {m: getattr(self, m) for m in metrics}


def _mean_scored(values: np.ndarray) -> float:
    ok = values[np.isfinite(values)]
    return math.fsum(ok) / len(ok) if len(ok) else float("nan")


@dataclass(frozen=True)
class _Crop:
    """One DINOv2 pass: frame ``t`` cut to ``box``."""

    t: int
    box: Box


def _rcs_plan(mask: np.ndarray) -> list[tuple[Box, np.ndarray]]:
    """(box, grey mask crop) of each component RC-S scores in one mask frame."""
    grey = grey_mask(mask)
    out = []
    for comp in kept_components(grey > MASK_THRESHOLD):
        box = bounding_square(comp)
        if box is not None:
            x1, y1, x2, y2 = box
            out.append((box, grey[y1:y2, x1:x2]))
    return out


def _rct_plan(mask_t: np.ndarray, mask_t1: np.ndarray) -> tuple[Box, np.ndarray, np.ndarray] | None:
    """(box, binary crop of t, binary crop of t+1) of one RC-T pair, or None when both masks are empty."""
    bin_t = (first_channel_mask(mask_t) > MASK_THRESHOLD).astype(np.uint8) * 255
    bin_t1 = (first_channel_mask(mask_t1) > MASK_THRESHOLD).astype(np.uint8) * 255
    box = bounding_square(bin_t | bin_t1)
    if box is None:
        return None
    x1, y1, x2, y2 = box
    return box, bin_t[y1:y2, x1:x2], bin_t1[y1:y2, x1:x2]


class _FeatureStore:
    """Features of each distinct (frame, crop), computed once, crops of one network-input size in one batch."""

    def __init__(self, frames: np.ndarray, features: FeatureFn, batch_size: int) -> None:
        self.frames, self.features, self.batch_size = frames, features, max(1, batch_size)
        self.held: dict[_Crop, np.ndarray] = {}
        self.computed = 0

    def geometry(self, box: Box) -> GridGeometry:
        return grid_geometry(box[3] - box[1], box[2] - box[0])

    def compute(self, crops: Sequence[_Crop]) -> None:
        todo = [c for c in dict.fromkeys(crops) if c not in self.held]
        by_size: dict[tuple[int, int], list[tuple[_Crop, np.ndarray]]] = {}
        for c in todo:
            x1, y1, x2, y2 = c.box
            image = network_input(self.frames[c.t][y1:y2, x1:x2], self.geometry(c.box))
            by_size.setdefault(image.shape[:2], []).append((c, image))
        for group in by_size.values():
            for i in range(0, len(group), self.batch_size):
                chunk = group[i:i + self.batch_size]
                out = np.asarray(self.features([im for _, im in chunk]))
                for (c, _), f in zip(chunk, out):
                    self.held[c] = f.reshape(-1, f.shape[-1])
                self.computed += len(chunk)

    def drop_before(self, t: int) -> None:
        for c in [c for c in self.held if c.t < t]:
            del self.held[c]


def removal_scores(frames: np.ndarray, masks: np.ndarray, features: FeatureFn,  # noqa: PLR0913
                   metrics: Sequence[str] = REMOVAL_METRICS, batch_size: int = 8,
                   arithmetic: str = "float64") -> RemovalScores:
    """RC-S and RC-T of one video: ``frames`` uint8 [T, H, W, 3] RGB (the removal result), ``masks`` uint8 [T, H, W]
    or [T, H, W, 3] (white = removed object; grey values kept: RC-S reads them as PROVE does), ``features`` the
    network (:data:`FeatureFn`). Frames are taken in chunks of ``batch_size``; each distinct (frame, crop) goes
    through the network once. ``arithmetic``: the MMDs' (:data:`~.kernels.MMD_ARITHMETICS`;
    ``float32`` = PROVE's own, :data:`ARITHMETIC_OF_PARITY`). See the module docstring."""
    n = len(frames)
    if len(masks) != n:
        raise ValueError(f"{n} frames but {len(masks)} masks")
    rcs = np.full(n if "rc_s" in metrics else 0, np.nan)
    rct = np.full(max(n - 1, 0) if "rc_t" in metrics else 0, np.nan)
    store = _FeatureStore(frames, features, batch_size)
    rcs_plans = {t: _rcs_plan(masks[t]) for t in range(n)} if "rc_s" in metrics else {}
    rct_plans = {t: _rct_plan(masks[t], masks[t + 1]) for t in range(n - 1)} if "rc_t" in metrics else {}
    step = max(1, batch_size)
    for start in range(0, n, step):
        stop = min(n, start + step)
        wanted = [_Crop(t, box) for t in range(start, stop) for box, _ in rcs_plans.get(t, [])]
        for t in range(max(0, start - 1), stop):
            plan = rct_plans.get(t)
            if plan is not None:
                wanted += [_Crop(t, plan[0]), _Crop(t + 1, plan[0])] if t + 1 < stop else [_Crop(t, plan[0])]
        store.compute(wanted)
        for t in range(start, stop):
            values = [rcs_crop_value(store.held[_Crop(t, box)], pooled_mask(crop, store.geometry(box)), arithmetic)
                      for box, crop in rcs_plans.get(t, [])]
            if values:
                rcs[t] = sum(values) / len(values)  # a component without a scored window makes the frame NaN
        for t in range(max(0, start - 1), stop - 1):
            plan = rct_plans.get(t)
            if plan is not None:
                box, crop_t, crop_t1 = plan
                g = store.geometry(box)
                rct[t] = rct_pair_value(store.held[_Crop(t, box)], store.held[_Crop(t + 1, box)],
                                        pooled_mask(crop_t, g), pooled_mask(crop_t1, g), arithmetic)
        store.drop_before(stop - 1)
    return RemovalScores(rcs, rct, store.computed)


def planned_crops(masks: np.ndarray, metrics: Sequence[str] = REMOVAL_METRICS) -> int:
    """How many DINOv2 crops :func:`removal_scores` passes for ``masks`` (each distinct (frame, crop) once): the
    total a progress bar counts to.

    >>> m = np.zeros((3, 64, 64), np.uint8); m[:, 20:44, 20:44] = 255
    >>> planned_crops(m)  # a still mask: RC-S and RC-T share the 3 squares
    3
    """
    crops = {_Crop(t, box) for t in range(len(masks)) for box, _ in _rcs_plan(masks[t])} if "rc_s" in metrics \
        else set()
    for t in range(len(masks) - 1 if "rc_t" in metrics else 0):
        plan = _rct_plan(masks[t], masks[t + 1])
        if plan is not None:
            crops.update((_Crop(t, plan[0]), _Crop(t + 1, plan[0])))
    return len(crops)


def mask_report(masks: np.ndarray) -> dict[str, int]:
    """How far a mask video is from binary: ``{"frames": T, "non_binary_frames": frames holding a grey value
    other than 0 and 255 (thresholded at > 127 as PROVE does), "non_binary_pixels": such pixels}``.

    >>> mask_report(np.array([[[0, 255]], [[3, 200]]], np.uint8))
    {'frames': 2, 'non_binary_frames': 1, 'non_binary_pixels': 2}
    """
    grey = np.stack([grey_mask(m) for m in masks]) if len(masks) else np.zeros((0, 1, 1), np.uint8)
    odd = (grey != 0) & (grey != 255)
    return {"frames": int(len(grey)), "non_binary_frames": int(odd.reshape(len(grey), -1).any(1).sum()),
            "non_binary_pixels": int(odd.sum())}


_NETWORKS: dict[tuple[str, str], Any] = {}  # one DINOv2 per (model, device) in each process


def dinov2(model: str, device: str) -> Any:
    """DINOv2 ``model`` on ``device`` (resolved), loaded once per process: RC-S and RC-T, the metric classes and the
    ``--protocol prove`` run share it."""
    from ....core.networks.dinov2 import load_dinov2

    if (model, device) not in _NETWORKS:
        _NETWORKS[(model, device)] = load_dinov2(model, device)
    return _NETWORKS[(model, device)]


def dinov2_for(options: EvalOptions) -> Any:
    """The DINOv2 of ``options`` (``dino_model`` on ``device``, resolved by
    :func:`~devil_dataset.eval.kernels.device.resolve_device`); a missing model raises
    :class:`~devil_dataset.core.errors.WeightsMissingError` naming it and how to fetch it."""
    return dinov2(options.dino_model, resolve_device(options.device))


class _RemovalMetric(Metric):
    """RC-S or RC-T on the package's own videos (a DEVIL slice or a release-layout folder): the prediction is the
    removal result, the hole the removed object (white). Per-video values; the slice value is their mean over the
    videos that have one."""

    keys: tuple[str, ...] = ()
    higher_better = True
    values: list[float]  # declared state (add_state): one value per video

    def __init__(self, options: EvalOptions, network: Any = None) -> None:
        super().__init__()
        self.options = options
        self.network = network if network is not None else dinov2_for(options)  # one per (model, device)
        self.add_state("values", list)

    def update(self, video: VideoSample, prepared: Any = None) -> dict[str, float]:
        arithmetic = ARITHMETIC_OF_PARITY[str(self.options.parity)]
        shared = ("prove", self.options.dino_model, arithmetic, id(self.network))
        scores = video.cache.get(shared)  # RC-S and RC-T of one video share one DINOv2 pass per crop
        if scores is None:
            scores = video.cache[shared] = removal_scores(video.pred, video.hole.astype(np.uint8) * 255,
                                                          self.network.patch_features, REMOVAL_METRICS,
                                                          self.options.batch_size, arithmetic)
        key = self.keys[0]
        value = getattr(scores, key)
        self.values.append(value)
        return {key: value}

    def compute(self) -> dict[str, float]:
        return {self.keys[0]: _mean_scored(np.asarray(self.values, float))}

    def provenance(self) -> dict:
        identity = self.network.identity() if hasattr(self.network, "identity") else {"name": "injected"}
        return {"protocol": "prove", "dino": identity, "higher_is_better": self.higher_better,
                "mmd_arithmetic": ARITHMETIC_OF_PARITY[str(self.options.parity)]}


class RCSMetric(_RemovalMetric):
    """PROVE's RC-S (spatial coherence of the fill with its surroundings; higher is better)."""

    keys = ("rc_s",)
    higher_better = True


class RCTMetric(_RemovalMetric):
    """PROVE's RC-T (temporal coherence of the fill between consecutive frames; lower is better)."""

    keys = ("rc_t",)
    higher_better = False


__all__ = ["ARITHMETIC_OF_PARITY", "REMOVAL_METRICS", "FeatureFn", "RCSMetric", "RCTMetric", "RemovalScores",
           "dinov2", "dinov2_for", "mask_report", "planned_crops", "removal_scores"]

"""Re-inpainting self-consistency (Chen et al., "Assessing Image Inpainting via Re-Inpainting Self-Consistency
Evaluation", Eq. 1): a reference-free score of a first inpainting.

The first inpainting X1 is the composite C = M*GT + (1-M)*Pred (the release's convention). For
k = 1..K an Algorithm-2 patch mask re-masks only previously known pixels (the hole keeps the first inpainting),
a second inpainter F2 fills them, and the result is composited back into X1: X2_k = M2*F2(X1, M2) + (1-M2)*X1.
The score is ``mean_k d(X1, X2_k)`` with d the sub-metric, computed per frame and averaged over frames.

Lower is better for the default LPIPS sub-metric; with PSNR or SSIM higher is better (``provenance()`` and
:func:`submetric_direction` say which). The registry key stays ``self_consistency`` either way.

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
    >>> gt = np.full((2, 32, 32, 3), 90, np.uint8); hole = np.zeros((2, 32, 32), bool); hole[:, 8:16, 8:16] = True
    >>> m = SelfConsistencyMetric(EvalOptions(self_consistency_submetric="psnr", self_consistency_k=2))
    >>> m.update(VideoSample("a", gt, gt, hole))  # a flat video is re-inpainted exactly: PSNR +inf
    {'self_consistency': inf}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from devil_dataset.inpaint import get_inpainter

from ...core.errors import UnknownNameError, WeightsMissingError
from ...core.weights import weights_path
from ..kernels.patch_masks import DEFAULT_PATCH_SIZE, DEFAULT_RATIO_RANGE, ReMask, clip_rng, re_inpainting_masks
from ..kernels.pixel import clip_psnr_values, mean_of, psnr_frames, ssim_frames
from .metric import EvalOptions, VideoSample
from .registry import higher_is_better

# (first uint8 [T, H, W, 3], second uint8 [T, H, W, 3]) -> per-frame values float [T]
SubMetric = Callable[[np.ndarray, np.ndarray], np.ndarray]
# (frames uint8 [T, H, W, 3], hole bool [T, H, W]) -> uint8 [T, H, W, 3]  (devil_dataset.inpaint contract)
Inpainter = Callable[[np.ndarray, np.ndarray], np.ndarray]

# Paper Sec. 4.3: LPIPS is the chosen sub-metric; PSNR and SSIM are the alternatives studied (their better direction
# is the registry's, the one table of directions).
SUBMETRICS: tuple[str, ...] = ("lpips", "psnr", "ssim")
# Evaluate every n-th frame only (1 = all frames, the paper-faithful default). Costs scale with frames x K.
DEFAULT_FRAME_STRIDE = 1


def submetric_direction(name: str) -> bool:
    """True when a higher self-consistency value is better for sub-metric ``name``.

    >>> submetric_direction("lpips"), submetric_direction("psnr")
    (False, True)
    """
    if name not in SUBMETRICS:
        raise UnknownNameError(f"unknown self-consistency sub-metric {name!r}; valid: {', '.join(SUBMETRICS)}")
    return higher_is_better(name)


def make_submetric(name: str, options: EvalOptions | None = None) -> tuple[SubMetric, dict]:
    """The per-frame sub-metric ``name`` ("lpips", "psnr", "ssim") and its provenance.

    PSNR (data range 1) and SSIM (``options.ssim_mode``) are the release's pixel metrics
    (:mod:`devil_dataset.eval.kernels.pixel`); LPIPS is the release's AlexNet LPIPS
    (:mod:`devil_dataset.core.networks.lpips`), which raises :class:`~devil_dataset.core.errors.WeightsMissingError`
    when its weights are not cached.

    >>> fn, prov = make_submetric("psnr")
    >>> prov["name"], fn(np.zeros((1, 4, 4, 3), np.uint8), np.full((1, 4, 4, 3), 255, np.uint8)).tolist()
    ('psnr', [0.0])
    """
    options = options or EvalOptions()
    submetric_direction(name)
    if name == "psnr":
        # X1 (first) is the reference, as the ground truth of the pixel metrics: (test, gt) = (second, first)
        return (lambda first, second: psnr_frames(second, first)), {"name": "psnr", "data_range": 1.0}
    if name == "ssim":
        mode = options.ssim_mode
        assert mode is not None  # resolved by EvalOptions
        return (lambda first, second: ssim_frames(second, first, mode)), {"name": "ssim", "ssim_mode": mode}
    return lpips_submetric(options)


def lpips_submetric(options: EvalOptions | None = None, network=None) -> tuple[SubMetric, dict]:
    """Per-frame LPIPS (AlexNet, v0.1; :class:`~devil_dataset.core.networks.lpips.LPIPSNetwork`) as a sub-metric.

    ``network`` injects a ready network (e.g. random weights in tests); by default the cached AlexNet weights
    are loaded, computing in ``options.precision``, and a missing file raises
    :class:`~devil_dataset.core.errors.WeightsMissingError` saying how to run without them. Frames go through the
    network in chunks of ``options.batch_size``.
    """
    options = options or EvalOptions()

    if network is None:
        try:

            weights_path("alexnet")  # fail fast, before importing torch
            from ...core.networks.lpips import LPIPSNetwork

            network = LPIPSNetwork(device=options.device, precision=options.precision)
        except WeightsMissingError as exc:
            raise WeightsMissingError(
                f"self_consistency: the LPIPS sub-metric needs the AlexNet weights: {exc} -- or choose the "
                "psnr or ssim sub-metric (EvalOptions.self_consistency_submetric), which need no weights"
            ) from exc
        prov = {"name": "lpips", "net": "alex", "version": "0.1", "weights": "cache:alexnet"}
    else:
        prov = {"name": "lpips", "net": "alex", "version": "0.1", "weights": "injected"}
    from ...core.networks.precision import precision_provenance

    # the arithmetic the network really runs in (an injected network keeps its own)
    prov.update(precision_provenance(getattr(network, "precision", options.precision), options.device))
    batch = max(1, int(options.batch_size))

    def frames_lpips(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([network.distance(a[i:i + batch], b[i:i + batch]) for i in range(0, len(a), batch)])

    return frames_lpips, prov


@dataclass(frozen=True)
class SelfConsistencyResult:
    """One clip's score (``value``), the per-re-inpainting values and the drawn second-mask ratios."""

    value: float
    per_k: tuple[float, ...]
    ratios: tuple[float, ...]
    remasked_fraction: float  # mean fraction of all pixels re-masked (known pixels only)


def second_inpaintings(first: np.ndarray, hole: np.ndarray, inpainter: Inpainter, rng: np.random.Generator, *,
                       k: int = 10, patch_size: int = DEFAULT_PATCH_SIZE,
                       ratio_range: tuple[float, float] = DEFAULT_RATIO_RANGE,
                       per_frame: bool = False) -> Iterator[tuple[ReMask, np.ndarray]]:
    """The ``k`` (second mask, second inpainting) pairs of Eq. 1 for one clip.

    ``first`` is the first inpainting uint8 [T, H, W, 3] (the composite), ``hole`` the original bool [T, H, W]
    hole. Re-masked pixels are zeroed before ``inpainter`` sees them, and its output is composited back into
    ``first`` on the re-masked pixels only.
    """
    if first.dtype != np.uint8 or first.ndim != 4 or first.shape[-1] != 3:
        raise ValueError(f"first inpainting must be uint8 [T, H, W, 3], got {first.dtype} {first.shape}")
    if hole.shape != first.shape[:3]:
        raise ValueError(f"hole must be bool {first.shape[:3]}, got {hole.shape}")
    hole = hole.astype(bool, copy=False)
    for second_mask in re_inpainting_masks(hole, rng, k=k, patch_size=patch_size, ratio_range=ratio_range,
                                           per_frame=per_frame):
        m2 = second_mask.mask
        masked_input = np.where(m2[..., None], np.uint8(0), first)
        filled = np.asarray(inpainter(masked_input, m2))
        if filled.shape != first.shape:
            raise ValueError(f"second inpainter returned {filled.shape}, expected {first.shape}")
        yield second_mask, np.where(m2[..., None], filled.astype(np.uint8, copy=False), first)


def self_consistency(first: np.ndarray, hole: np.ndarray, inpainter: Inpainter, submetric: SubMetric,
                     rng: np.random.Generator, *, k: int = 10, patch_size: int = DEFAULT_PATCH_SIZE,
                     ratio_range: tuple[float, float] = DEFAULT_RATIO_RANGE,
                     per_frame: bool = False) -> SelfConsistencyResult:
    """Eq. 1 for one clip: mean over ``k`` re-inpaintings of the frame-mean ``submetric(first, second_k)``.

    See :func:`second_inpaintings` for how each second inpainting is made.

    >>> f = np.full((1, 16, 16, 3), 7, np.uint8); h = np.zeros((1, 16, 16), bool)
    >>> ident = lambda frames, hole: np.where(hole[..., None], 7, frames).astype(np.uint8)
    >>> r = self_consistency(f, h, ident, psnr_frames, np.random.default_rng(0), k=3, patch_size=4)
    >>> r.value, len(r.per_k)
    (inf, 3)
    """
    per_k, ratios, fractions = [], [], []
    for second_mask, second in second_inpaintings(first, hole, inpainter, rng, k=k, patch_size=patch_size,
                                                  ratio_range=ratio_range, per_frame=per_frame):
        per_k.append(float(np.mean(np.asarray(submetric(first, second), np.float64))))
        ratios.append(second_mask.ratio)
        fractions.append(float(second_mask.mask.mean()))
    value = float(np.mean(per_k)) if per_k else float("nan")
    return SelfConsistencyResult(value, tuple(per_k), tuple(ratios), float(np.mean(fractions)) if fractions else 0.0)


class SelfConsistencyMetric:
    """``self_consistency``: re-inpainting self-consistency of the composite (see module docstring).

    ``options``: ``second_inpainter`` (a :mod:`devil_dataset.inpaint` name, default ``telea``),
    ``self_consistency_submetric`` (``lpips`` default, ``psnr``, ``ssim``), ``self_consistency_k`` (K = 10),
    ``seed``. Keyword overrides (tests, experiments): ``inpainter``, ``submetric`` (a per-frame callable, e.g. an
    LPIPS with random weights), ``patch_size``, ``ratio_range``, ``per_frame``, ``frame_stride``.
    Each clip's generator is seeded from ``options.seed`` and a BLAKE2b hash of the clip id.
    """

    keys = ("self_consistency",)

    def __init__(self, options: EvalOptions | None = None, *, inpainter: Inpainter | None = None,
                 submetric: SubMetric | None = None, patch_size: int = DEFAULT_PATCH_SIZE,
                 ratio_range: tuple[float, float] = DEFAULT_RATIO_RANGE, per_frame: bool = False,
                 frame_stride: int = DEFAULT_FRAME_STRIDE) -> None:
        self.options = options or EvalOptions()
        name = self.options.self_consistency_submetric
        self.higher_is_better = submetric_direction(name)
        if submetric is None:
            self._submetric, self._submetric_prov = make_submetric(name, self.options)
        else:
            injected = getattr(submetric, "__name__", type(submetric).__name__)
            self._submetric, self._submetric_prov = submetric, {"name": name, "injected": injected}
        if inpainter is None:

            inpainter = get_inpainter(self.options.second_inpainter)
            self._inpainter_name = self.options.second_inpainter
        else:
            self._inpainter_name = getattr(inpainter, "__name__", type(inpainter).__name__)
        if self.options.self_consistency_k < 1:
            raise ValueError(f"self_consistency_k must be >= 1, got {self.options.self_consistency_k}")
        if frame_stride < 1:
            raise ValueError(f"frame_stride must be >= 1, got {frame_stride}")
        self._inpainter = inpainter
        self.patch_size = patch_size
        self.ratio_range = (*ratio_range,)  # a tuple (a list works too)
        self.per_frame = per_frame
        self.frame_stride = frame_stride
        # PSNR-type per-video values are clipped to [0, max finite] by the evaluator (the release's metrics).
        self.clip_keys: tuple[str, ...] = ("self_consistency",) if name == "psnr" else ()
        self.values: list[float] = []
        self._remasked: list[float] = []

    def score(self, video: VideoSample) -> SelfConsistencyResult:
        """The full :class:`SelfConsistencyResult` of one video (``update`` keeps only its value)."""
        s = slice(None, None, self.frame_stride)
        return self_consistency(
            video.composite[s], video.hole[s], self._inpainter, self._submetric,
            clip_rng(self.options.seed, video.clip_id), k=self.options.self_consistency_k,
            patch_size=self.patch_size, ratio_range=self.ratio_range, per_frame=self.per_frame,
        )

    def update(self, video: VideoSample) -> dict[str, float]:
        result = self.score(video)
        self.values.append(result.value)
        self._remasked.append(result.remasked_fraction)
        return {"self_consistency": result.value}

    def compute(self) -> dict[str, float]:
        vals = np.asarray(self.values, np.float64)
        if self.clip_keys:
            vals, _ = clip_psnr_values(vals)  # the release's rule for PSNR-type per-video values
        return {"self_consistency": mean_of(vals)}

    def provenance(self) -> dict:
        return {
            # the stable name recorded since the metric was added (the class moved since; results stay comparable)
            "implementation": "devil_dataset.eval.self_consistency.SelfConsistencyMetric",
            "paper": "Chen et al. 2024, re-inpainting self-consistency, Eq. 1, Algorithm 2",
            "first_inpainting": "composite",
            "submetric": self._submetric_prov,
            "higher_is_better": self.higher_is_better,
            "k": self.options.self_consistency_k,
            "second_inpainter": self._inpainter_name,
            "patch_size": self.patch_size,
            "ratio_range": list(self.ratio_range),
            "pattern": "per_frame" if self.per_frame else "per_clip",
            "frame_stride": self.frame_stride,
            "seed": self.options.seed,
            "seeding": "numpy SeedSequence([seed, blake2b-128(clip_id) as 4 x uint32])",
            "mean_remasked_fraction": mean_of(np.asarray(self._remasked)) if self._remasked else None,
        }

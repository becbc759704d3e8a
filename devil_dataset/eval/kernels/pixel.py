"""The pixel metrics' numpy kernels (the release's metrics): PSNR, SSIM and PCons (PSNR, mask), on the composite.

All three read frames as the release does: uint8 RGB converted to float32 in [0, 1] (``x / 255``), composite
C = M*GT + (1-M)*Pred. Functional forms work on one video and take ``(test, gt, ...)`` (the frames under test
first, as every metric function of the package: ``devil_dataset.eval.psnr(pred, gt, hole)``); the metric classes
that keep their state are in :mod:`devil_dataset.eval.metrics.pixel`.

    >>> import numpy as np
    >>> gt = np.zeros((3, 60, 60, 3), np.uint8); pred = gt.copy(); pred[:, 20:30, 20:30] = 255
    >>> hole = np.zeros((3, 60, 60), bool); hole[:, 20:30, 20:30] = True
    >>> round(psnr(np.where(hole[..., None], pred, gt), gt), 2)
    15.56
    >>> float(ssim(gt, gt))
    1.0

PSNR-type values (PSNR, PCons) are infinite where two frames (patches) are identical. The release clips
PSNR-type per-video values to [0, max finite] before averaging over videos; :func:`clip_psnr_values` implements
our reading of that rule (see ``docs/evaluation.md``).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from skimage import metrics as skimage_metrics  # a lazy module: its functions load on first use (~1-2 s)

from ...core.errors import UnknownNameError
from ...core.hole_box import hole_window
from .ssim_window import WINDOW, map_mean, ssim_map, window_means

# The release's metrics: PSNR data range for float frames in [0, 1].
PSNR_DATA_RANGE = 1.0
# The release's metrics: SSIM's window side (its constants K1, K2 live in :mod:`.ssim_window`).
SSIM_WIN_SIZE = WINDOW
# The release's implicit float data range (skimage's (-1, 1) for floats) vs the standard range 1.
SSIM_DATA_RANGE = {"release": 2.0, "standard": 1.0}
# docs/release-metrics.md: the release's scikit-image 0.17.2 converts frames to float64 first.
SSIM_ARITHMETIC = "float64"
# The paper's supplementary material: PCons patch size and search offsets (top-left -20..+19 in both axes).
PCONS_PATCH = 50
PCONS_SEARCH = 20
# PCons: windows within this relative distance of the best exact SSD are re-scored in float32 (see below).
PCONS_RESCORE_REL = 2e-4
# A float64 sum of float32 squared differences of values k/255 is exact, whatever the order of the terms, while it
# stays below this: every nonzero term is >= 2**-17 with a 24-bit mantissa (a multiple of 2**-40), the terms are
# >= 0 so every partial sum is at most the total, and float64 holds multiples of 2**-40 exactly up to 2**13.
_EXACT_SUM_LIMIT = 2.0**13
# Frames per chunk when converting a video to float32 (bounded memory: one chunk of float frames at a time).
_CHUNK = 16


def _as_float(frames: np.ndarray) -> np.ndarray:
    """uint8 -> float32 in [0, 1] exactly as the release reads PNGs (``np.float32`` array divided by 255)."""
    return frames.astype(np.float32) / np.float32(255)


def psnr_frames(test: np.ndarray, gt: np.ndarray, changed: np.ndarray | None = None) -> np.ndarray:
    """Per-frame PSNR (data range 1) of uint8 [T, H, W, 3] videos ``test`` against ``gt``, as scikit-image computes
    it on float32 frames.

    ``changed`` (bool [T, H, W], optional) holds every pixel where the frames may differ (for a composite: the
    hole): the squared differences are then summed over its bounding box only, which gives the same float bit
    for bit while that sum is below :data:`_EXACT_SUM_LIMIT` (see below); a frame above it is summed whole.

    >>> a = np.zeros((2, 4, 4, 3), np.uint8); b = a.copy(); b[1] = 255
    >>> psnr_frames(a, b).tolist()
    [inf, 0.0]
    >>> psnr_frames(a, b, changed=np.ones((2, 4, 4), bool)).tolist()
    [inf, 0.0]
    """
    if gt.shape != test.shape:
        raise ValueError(f"shape mismatch: test {test.shape} vs gt {gt.shape}")
    out = np.empty(len(gt), np.float64)
    if changed is not None:
        count = math.prod(gt.shape[1:])
        for t in range(len(gt)):
            window = hole_window(changed[t])
            total = np.float64(0.0)  # no changed pixel: an identical frame (PSNR inf)
            if window is not None:
                d = _as_float(gt[t][window]) - _as_float(test[t][window])
                total = np.sum(np.square(d), dtype=np.float64)
            if not total < _EXACT_SUM_LIMIT:
                out[t] = psnr_frames(test[t : t + 1], gt[t : t + 1])[0]
                continue
            with np.errstate(divide="ignore"):
                out[t] = 10 * np.log10(PSNR_DATA_RANGE**2 / (total / count))
        return out
    for s in range(0, len(gt), _CHUNK):
        d = _as_float(gt[s : s + _CHUNK]) - _as_float(test[s : s + _CHUNK])
        # skimage: mean of float32 squares accumulated in float64 (exact here, see pcons_psnr_mask)
        mse = np.mean(np.square(d).reshape(len(d), -1), axis=1, dtype=np.float64)
        with np.errstate(divide="ignore"):
            out[s : s + _CHUNK] = 10 * np.log10(PSNR_DATA_RANGE**2 / mse)
    return out


def psnr(test: np.ndarray, gt: np.ndarray, changed: np.ndarray | None = None) -> float:
    """Per-video PSNR: mean over frames of :func:`psnr_frames` (``inf`` if some frame is identical)."""
    return float(np.mean(psnr_frames(test, gt, changed)))


def _ssim_data_range(mode: str) -> float:
    try:
        return SSIM_DATA_RANGE[mode]
    except KeyError:
        raise UnknownNameError(f"unknown ssim mode {mode!r}; valid: {', '.join(SSIM_DATA_RANGE)}") from None


def ssim_frames(test: np.ndarray, gt: np.ndarray, mode: str = "release",
                changed: np.ndarray | None = None) -> np.ndarray:
    """Per-frame SSIM of uint8 [T, H, W, 3] videos ``test`` against ``gt``, with ``gt`` as its first image: the
    release's scikit-image on float frames, in float64 as its version 0.17.2 computes.

    ``mode``: ``"release"`` (data range 2, the release's implicit float range) or ``"standard"`` (data range 1).
    The local statistics come from exact window sums (:mod:`~devil_dataset.eval.kernels.ssim_window`), so the map is
    computed only where the frames differ (elsewhere it is exactly 1); the values are within 1e-13 (2.3e-15
    measured) of ``skimage.metrics.structural_similarity`` on float64 frames (tested). ``changed`` (bool
    [T, H, W], optional) holds every pixel where the frames may differ (for a composite: the hole), so only that
    part is compared; the values are the same floats with or without it.

    >>> a = np.random.default_rng(0).integers(0, 256, (1, 16, 16, 3), dtype=np.uint8)
    >>> ssim_frames(a, a).tolist()
    [1.0]
    """
    if gt.shape != test.shape:
        raise ValueError(f"shape mismatch: test {test.shape} vs gt {gt.shape}")
    data_range = _ssim_data_range(mode)
    if min(gt.shape[1:3]) < SSIM_WIN_SIZE:  # scikit-image's own error for frames smaller than the window
        skimage_metrics.structural_similarity(_as_float(gt[0]), _as_float(test[0]), win_size=SSIM_WIN_SIZE,
                                              data_range=data_range, channel_axis=-1)
    return np.array([_ssim_frame(test[t], gt[t], data_range, None if changed is None else changed[t])
                     for t in range(len(gt))], np.float64)


def _ssim_frame(test: np.ndarray, gt: np.ndarray, data_range: float, changed: np.ndarray | None = None) -> float:
    """SSIM of one uint8 [H, W, C] frame pair: the map on the part whose windows meet a differing pixel (inside
    ``changed`` when given), 1 elsewhere (:func:`~devil_dataset.eval.kernels.ssim_window.map_mean`)."""
    height, width = gt.shape[:2]
    window = (slice(0, height), slice(0, width)) if changed is None else hole_window(changed)
    box = None if window is None else hole_window((gt[window] != test[window]).any(axis=-1))
    if window is None or box is None:
        return 1.0
    pad = SSIM_WIN_SIZE // 2
    # the scored map pixels (pad or more from every border) whose window meets the differing box
    r0 = max(pad, window[0].start + box[0].start - pad)
    r1 = min(height - pad, window[0].start + box[0].stop + pad)
    c0 = max(pad, window[1].start + box[1].start - pad)
    c1 = min(width - pad, window[1].start + box[1].stop + pad)
    crop = (slice(r0 - pad, r1 + pad), slice(c0 - pad, c1 + pad))
    part = ssim_map(*window_means(gt[crop], test[crop]), data_range=data_range)
    return map_mean(part, (height - 2 * pad) * (width - 2 * pad))


def ssim(test: np.ndarray, gt: np.ndarray, mode: str = "release", changed: np.ndarray | None = None) -> float:
    """Per-video SSIM: mean over frames of :func:`ssim_frames`."""
    return float(np.mean(ssim_frames(test, gt, mode, changed)))


def hole_centroid_topleft(hole: np.ndarray, size: tuple[int, int], patch: int = PCONS_PATCH) -> np.ndarray:
    """Top-left (y, x) of the PCons patch per frame: ``floor(centroid - patch/2)`` clipped into the frame.

    ``hole`` is bool [T, H, W]; ``size`` is (H, W). Rows with no hole get ``-1`` (no patch). The centroid is
    computed from exact integer sums, so it equals ``np.where(hole)[i].mean()`` bit for bit.

    >>> h = np.zeros((1, 100, 100), bool); h[0, 40:50, 60:70] = True
    >>> hole_centroid_topleft(h, (100, 100)).tolist()
    [[19, 39]]
    """
    height, width = size
    count = hole.sum(axis=(1, 2), dtype=np.int64)
    ys = hole.sum(axis=2, dtype=np.int64) @ np.arange(height, dtype=np.int64)
    xs = hole.sum(axis=1, dtype=np.int64) @ np.arange(width, dtype=np.int64)
    out = np.full((len(hole), 2), -1, np.int64)
    for t in np.flatnonzero(count):
        cy = ys[t] / count[t]
        cx = xs[t] / count[t]
        sy = min(max(math.floor(cy - patch / 2), 0), height - patch)
        sx = min(max(math.floor(cx - patch / 2), 0), width - patch)
        out[t] = (sy, sx)
    return out


def _window_sums(a: np.ndarray, k: int) -> np.ndarray:
    """Sums of every k x k window of a [N, H, W] integer array (exact, via integral images)."""
    c = np.zeros((a.shape[0], a.shape[1] + 1, a.shape[2] + 1), np.int64)
    np.cumsum(np.cumsum(a, axis=1, dtype=np.int64), axis=2, out=c[:, 1:, 1:])
    return c[:, k:, k:] - c[:, :-k, k:] - c[:, k:, :-k] + c[:, :-k, :-k]


def _cross_correlation(regions: np.ndarray, patches: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Exact integer sum(patch * window) for every window: float64 FFT rounded to the nearest integer.

    ``regions`` [N, C, R, R] and ``patches`` [N, C, P, P] hold uint8 values, so every true value is an integer
    below 2**30 and the FFT's rounding error (~1e-6) is far below 0.5; an assertion guards it.
    """
    from scipy import fft as sfft

    n, c, rh, rw = regions.shape
    p = patches.shape[-1]
    shape = (sfft.next_fast_len(rh, real=True), sfft.next_fast_len(rw, real=True))
    fr = sfft.rfft2(regions.astype(np.float64), s=shape, axes=(-2, -1))
    fp = sfft.rfft2(patches[..., ::-1, ::-1].astype(np.float64), s=shape, axes=(-2, -1))
    full = sfft.irfft2((fr * fp).sum(axis=1), s=shape, axes=(-2, -1))
    oh, ow = out_hw
    corr = full[:, p - 1 : p - 1 + oh, p - 1 : p - 1 + ow]
    rounded = np.rint(corr)
    if np.abs(corr - rounded).max(initial=0.0) > 0.25:  # pragma: no cover - cannot happen for uint8 inputs
        raise ArithmeticError("FFT cross-correlation lost integer exactness")
    return rounded.astype(np.int64)


def _patch_mse_release(a: np.ndarray, b: np.ndarray) -> float:
    """MSE of two uint8 patches as scikit-image computes it on float32 copies (float64 accumulation).

    Every nonzero float32 square of a difference of two values ``k/255`` is >= 2**-17 and has a 24-bit mantissa,
    and a patch sums at most 7500 of them (< 2**13): all partial sums are exact in float64, so the result does
    not depend on summation order and equals the release's value bit for bit.
    """
    d = _as_float(a) - _as_float(b)
    return float(np.mean(np.square(d), dtype=np.float64))


def pcons_psnr_mask_pairs(
    frames: np.ndarray, hole: np.ndarray, patch: int = PCONS_PATCH, search: int = PCONS_SEARCH
) -> np.ndarray:
    """PCons best-patch PSNR for every consecutive pair (t-1, t) of a uint8 [T, H, W, 3] video (vectorised).

    The 50x50 patch of frame t-1 at its hole centroid is compared with every 50x50 window of frame t whose
    top-left is offset by -20..+19 in both axes (windows leaving the frame are skipped); the best PSNR
    (data range 1) is kept. Pairs whose frame t-1 has no hole are NaN (the release would fail there).
    Exact integer sums of squared differences for all windows (integral images + FFT cross-correlation)
    pick the few candidates within 2e-4 of the best, which are re-scored with the release's float32 arithmetic.

    >>> f = np.random.default_rng(0).integers(0, 256, (2, 80, 90, 3), dtype=np.uint8)
    >>> f[1, 5:, 3:] = f[0, :-5, :-3]  # frame 1 = frame 0 moved by (5, 3)
    >>> h = np.zeros((2, 80, 90), bool); h[:, 30:40, 30:40] = True
    >>> pcons_psnr_mask_pairs(f, h).tolist()
    [inf]
    """
    t_len, height, width = frames.shape[:3]
    if height < patch or width < patch:
        raise ValueError(f"frames of {width}x{height} are smaller than the {patch}x{patch} PCons patch")
    out = np.full(max(t_len - 1, 0), np.nan)
    if t_len < 2:
        return out
    tl = hole_centroid_topleft(hole[:-1], (height, width), patch)
    pairs = np.flatnonzero(tl[:, 0] >= 0)
    if len(pairs) == 0:
        return out
    span = 2 * search  # candidate offsets -search .. search-1
    reg = span + patch - 1
    channels = frames.shape[3]
    # Gather patch of frame t-1 and search region of frame t (zero-padded outside the frame).
    patches = np.empty((len(pairs), channels, patch, patch), np.uint8)
    regions = np.zeros((len(pairs), channels, reg, reg), np.uint8)
    valid = np.zeros((len(pairs), span, span), bool)
    offs = np.arange(-search, search)
    for i, t in enumerate(pairs):
        sy, sx = tl[t]
        patches[i] = frames[t, sy : sy + patch, sx : sx + patch].transpose(2, 0, 1)
        y0, x0 = sy - search, sx - search
        ry0, rx0 = max(y0, 0), max(x0, 0)
        ry1, rx1 = min(y0 + reg, height), min(x0 + reg, width)
        regions[i, :, ry0 - y0 : ry1 - y0, rx0 - x0 : rx1 - x0] = frames[t + 1, ry0:ry1, rx0:rx1].transpose(2, 0, 1)
        vy = (sy + offs >= 0) & (sy + offs <= height - patch)
        vx = (sx + offs >= 0) & (sx + offs <= width - patch)
        valid[i] = vy[:, None] & vx[None, :]
    pa = patches.astype(np.int64)
    sum_a2 = (pa * pa).sum(axis=(1, 2, 3))
    r64 = regions.astype(np.int64)
    sum_b2 = _window_sums((r64 * r64).sum(axis=1), patch)
    cross = _cross_correlation(regions, patches, (span, span))
    ssd = sum_a2[:, None, None] + sum_b2 - 2 * cross  # exact integer SSD in 0..255 units
    ssd = np.where(valid, ssd, np.iinfo(np.int64).max)
    best = ssd.reshape(len(pairs), -1).min(axis=1)
    for i, t in enumerate(pairs):
        sy, sx = tl[t]
        # The release's float32 MSE differs from the exact one by < 3.1e-5 relative (a difference of k/255 is off
        # by <= 2**-24 absolute, i.e. 1.5e-5/k relative, squared: 3e-5): every window within 2e-4 of the best
        # exact SSD is re-scored, so the release's minimum is always among them.
        near = np.argwhere(ssd[i] <= best[i] * (1 + PCONS_RESCORE_REL))
        a = frames[t, sy : sy + patch, sx : sx + patch]
        mse = min(
            _patch_mse_release(a, frames[t + 1, sy + oy - search : sy + oy - search + patch,
                                         sx + ox - search : sx + ox - search + patch])
            for oy, ox in near
        )
        with np.errstate(divide="ignore"):
            out[t] = 10 * np.log10(PSNR_DATA_RANGE**2 / np.float64(mse))
    return out


def pcons_psnr_mask(frames: np.ndarray, hole: np.ndarray) -> float:
    """Per-video PCons (PSNR, mask) of the composite ``frames``: mean over pairs with a hole in frame t-1.

    NaN when no pair qualifies (a single frame, or no hole at all).
    """
    values = pcons_psnr_mask_pairs(frames, hole)
    values = values[~np.isnan(values)]
    return float(np.mean(values)) if len(values) else float("nan")


def clip_psnr_values(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, float]:
    """Clip PSNR-type per-video values to [0, max finite] (the release's metrics); return (clipped, cap).

    Our reading of the release's rule: ``+inf`` (a video with an identical frame or patch) becomes the largest
    finite value among the slice's videos. If no video is finite there is nothing to clip to: the values stay
    ``inf`` (and so does their mean; never a sentinel such as the largest float64, which would be printed and
    stored as a score). NaN stays NaN (excluded from means).

    >>> clip_psnr_values([30.0, float("inf"), 40.0])[0].tolist()
    [30.0, 40.0, 40.0]
    >>> clip_psnr_values([float("inf")])
    (array([inf]), inf)
    """
    arr = np.asarray(values, np.float64)
    finite = arr[np.isfinite(arr)]
    cap = max(float(finite.max()), 0.0) if len(finite) else math.inf
    return np.where(np.isnan(arr), np.nan, np.clip(arr, 0.0, cap)), cap


# The largest value one 8-bit sample can change by is one grey level: 1/255 in the [0, 1] data range.
GREY_LEVEL = 1.0 / 255.0
# ``psnr_cap`` (EvalOptions): what an infinite PSNR-type value becomes. ``slice_max``: the release's rule, the
# largest finite per-video value of the slice (the release's metrics); ``one_grey_level``: each frame (PCons: each pair)
# is capped at the PSNR of a one-grey-level error in a single one of its samples (:func:`one_grey_level_psnr`).
PSNR_CAPS: tuple[str, ...] = ("slice_max", "one_grey_level")


def one_grey_level_psnr(samples: int) -> float:
    """The PSNR (data range 1) of the smallest error 8-bit frames can show: one grey level in one of ``samples``
    values (MSE = (1/255)^2 / samples), i.e. ``10 log10(samples * 255^2)``. Every finite PSNR of ``samples`` 8-bit
    values is at most this, so capping an identical frame (patch) here never reorders measured ones, and the cap
    depends on the frame size alone, never on the other videos (the corrected parity's rule).

    >>> round(one_grey_level_psnr(50 * 50 * 3), 2), round(one_grey_level_psnr(832 * 480 * 3), 2)
    (86.88, 108.92)
    """
    return 10.0 * math.log10(PSNR_DATA_RANGE**2 * samples / GREY_LEVEL**2)


def cap_frames(values: np.ndarray, samples: int) -> np.ndarray:
    """Per-frame PSNR-type values capped at :func:`one_grey_level_psnr` (NaN stays NaN).

    >>> cap_frames(np.array([30.0, np.inf, np.nan]), 3).round(2).tolist()
    [30.0, 52.9, nan]
    """
    return np.minimum(np.asarray(values, np.float64), one_grey_level_psnr(samples))


def mean_of(values: np.ndarray) -> float:
    """Mean ignoring NaN, without overflow when values sit near the float64 maximum; NaN when empty (``inf``
    when a value is ``inf``)."""
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return float(np.sum(v / len(v))) if len(v) else float("nan")


def pcons_release_loop(
    frames: np.ndarray, hole: np.ndarray, ps: int = PCONS_PATCH, sw: int = PCONS_SEARCH
) -> list[float]:
    """PCons (PSNR, mask) per consecutive pair by the release's direct double loop (slow; the reference).

    float32 frames in [0, 1], scikit-image PSNR over every search offset; NaN where frame t-1 has no hole (the
    release fails there). :func:`pcons_psnr_mask_pairs` gives the same values 185-1865x faster
    (``benchmarks/eval.py``); tests compare the two.

    >>> f = np.zeros((2, 60, 60, 3), np.uint8); h = np.zeros((2, 60, 60), bool); h[0, 20:30, 20:30] = True
    >>> pcons_release_loop(f, h)
    [inf]
    """

    f = frames.astype(np.float32) / 255
    out: list[float] = []
    for t in range(1, len(f)):
        rows, cols = np.where(hole[t - 1])
        if len(rows) == 0:
            out.append(float("nan"))
            continue
        a_sy = int(np.clip(math.floor(rows.mean() - ps / 2), 0, f.shape[1] - ps))
        a_sx = int(np.clip(math.floor(cols.mean() - ps / 2), 0, f.shape[2] - ps))
        a = f[t - 1, a_sy : a_sy + ps, a_sx : a_sx + ps]
        best = 0.0
        for b_sy in range(a_sy - sw, a_sy + sw):
            for b_sx in range(a_sx - sw, a_sx + sw):
                b = f[t, b_sy : b_sy + ps, b_sx : b_sx + ps]
                if b.shape != a.shape:
                    continue
                with np.errstate(divide="ignore"):
                    value = skimage_metrics.peak_signal_noise_ratio(a, b, data_range=PSNR_DATA_RANGE)
                if value > best:
                    best = value
        out.append(float(best))
    return out

"""The ProPainter / E2FGVI evaluation protocol's per-frame math (``docs/propainter-protocol.md``).

Restated from what their evaluation code does (sczhou/ProPainter ``core/dataset.py``, ``core/metrics.py``,
``scripts/evaluate_propainter.py``; MCG-NKU/E2FGVI ``evaluate.py`` computes the same), not copied:

- the hole is dilated with a 3x3 cross, 4 iterations (:func:`dilate_hole`, OpenCV ``dilate`` as theirs; equal to
  ``scipy.ndimage.binary_dilation`` with the same cross and a zero border, checked in the tests);
- the prediction is composited with the ground truth outside the dilated hole
  (:func:`~devil_dataset.eval.kernels.composite.composite`);
- PSNR per frame in float64, peak 255, over the whole frame (H x W x 3), ``inf`` for identical frames
  (:func:`psnr_frames`);
- SSIM per frame as scikit-image's ``structural_similarity(gt, comp, data_range=255, channel_axis=-1,
  win_size=65)`` on float64: a 65x65 **uniform** window, sample covariance (N / (N - 1), N = 4225), K1 0.01,
  K2 0.03, the map cropped by 32 px on every side and averaged, then the channels averaged (:func:`ssim_frames`).

:func:`ssim_frames` computes the same value about 10-40x faster than scikit-image (``benchmarks/propainter_ssim.py``):
the 65x65 window sums come from OpenCV's box filter (exact for the integer-valued uint8 frames: every sum is an
integer below 2**53), only the windows the protocol keeps are formed, and only the windows that overlap a pixel
where the two frames differ: elsewhere both frames have identical window statistics, so the SSIM map is exactly 1
(the same floats enter numerator and denominator). The value equals scikit-image's to 1e-12 (tests).

Also here, beyond their script: hole-only PSNR and SSIM (:func:`hole_psnr_frames`, :func:`hole_ssim_frames`), the
crop of hole-only LPIPS (:func:`hole_crop`; definitions in the docs page) and E_warp (:func:`ewarp_video`).

    >>> import numpy as np
    >>> hole = np.zeros((1, 9, 9), bool); hole[0, 4, 4] = True
    >>> int(dilate_hole(hole)[0].sum())  # a pixel grows into a diamond of radius 4
    41
"""
from __future__ import annotations

import cv2
import numpy as np

from ....core.errors import InvalidInputError
from ...kernels.warp import occlusion_mask, warp_backward

#: ProPainter ``core/dataset.py`` TestDataset: ``cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))``, ``iterations=4``.
DILATION_KERNEL = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
DILATION_ITERATIONS = 4
#: ProPainter / E2FGVI ``core/metrics.py`` ``calc_psnr_and_ssim``: PSNR peak and SSIM ``data_range`` (uint8 scale).
PEAK = 255.0
#: Their SSIM call: ``win_size=65`` with scikit-image's defaults (uniform window, sample covariance, K1, K2).
SSIM_WINDOW = 65
SSIM_PAD = (SSIM_WINDOW - 1) // 2
SSIM_K1 = 0.01
SSIM_K2 = 0.03


def dilate_hole(hole: np.ndarray) -> np.ndarray:
    """The protocol's dilated hole: each frame of bool ``hole`` [T, H, W] (or [H, W]) dilated with a 3x3 cross, 4
    times (OpenCV, zero border). bool, same shape.

    >>> h = np.zeros((7, 7), bool); h[3, 3] = True
    >>> dilate_hole(h).astype(int)[3].tolist()
    [1, 1, 1, 1, 1, 1, 1]
    """
    hole = np.asarray(hole)
    if hole.dtype != bool or hole.ndim not in (2, 3):
        raise InvalidInputError(f"dilate_hole: expected a bool [T, H, W] or [H, W] hole, got {hole.dtype} "
                                f"{hole.shape}")
    frames = hole[None] if hole.ndim == 2 else hole
    out = np.stack([cv2.dilate(f.view(np.uint8), DILATION_KERNEL, iterations=DILATION_ITERATIONS) > 0
                    for f in frames]) if len(frames) else frames.copy()
    return out[0] if hole.ndim == 2 else out


def _check_pair(gt: np.ndarray, test: np.ndarray, name: str) -> None:
    if gt.shape != test.shape or gt.ndim != 4 or gt.shape[-1] != 3:
        raise InvalidInputError(f"{name}: expected two [T, H, W, 3] arrays of one shape, got {gt.shape} and "
                                f"{test.shape}")


def squared_error_sums(gt: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Each frame's sum of squared differences over H x W x 3: float64 [T], exact (integers below 2**53; OpenCV's
    ``NORM_L2SQR`` of uint8 frames sums integers). Frames of another dtype are summed in float64.

    >>> a = np.zeros((1, 2, 2, 3), np.uint8); b = a + 3
    >>> squared_error_sums(a, b).tolist()
    [108.0]
    """
    if gt.dtype == np.uint8 and test.dtype == np.uint8:
        return np.array([cv2.norm(np.ascontiguousarray(g), np.ascontiguousarray(t), cv2.NORM_L2SQR)
                         for g, t in zip(gt, test)], np.float64)
    d = gt.astype(np.float64) - test.astype(np.float64)
    return np.sum(d * d, axis=(1, 2, 3))


def psnr_frames(test: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """PSNR of each frame (``test`` against ``gt``: the package's one argument order, as
    :func:`devil_dataset.eval.kernels.pixel.psnr_frames`): ``20 log10(255 / sqrt(mse))`` with mse the float64 mean
    over H x W x 3, ``inf`` where the frames are identical. float64 [T]. For uint8 frames the mean is the exact sum
    divided once: the same float as ``np.mean`` of the float64 squared differences (whose partial sums are exact
    integers too).

    >>> a = np.zeros((2, 2, 2, 3), np.uint8); b = a.copy(); b[1] = 255
    >>> psnr_frames(a, b).tolist()
    [inf, 0.0]
    """
    _check_pair(gt, test, "psnr_frames")
    mse = squared_error_sums(gt, test) / float(np.prod(gt.shape[1:]))
    with np.errstate(divide="ignore"):
        return np.where(mse == 0, np.inf, 20 * np.log10(PEAK / np.sqrt(mse)))


def _window_sums(planes: np.ndarray) -> np.ndarray:
    """Sums over every 65x65 window wholly inside uint8 or int32 [h, w, C]: int32 [h - 64, w - 64, C], exact (a sum
    of 4225 products of uint8 values is below 2**31)."""
    sums = cv2.boxFilter(planes, cv2.CV_32S, (SSIM_WINDOW, SSIM_WINDOW), normalize=False,
                         borderType=cv2.BORDER_REFLECT)
    if sums.ndim == 2:
        sums = sums[:, :, None]
    return sums[SSIM_PAD:sums.shape[0] - SSIM_PAD, SSIM_PAD:sums.shape[1] - SSIM_PAD]


WindowSums = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: Map rows formed at a time: the work arrays of a block stay in the CPU cache (2-3x faster than whole maps).
BLOCK_ROWS = 8


def window_sums(x: np.ndarray, y: np.ndarray) -> WindowSums:
    """The exact int32 sums of x, y, (x - y)**2 and x*y over every 65x65 window wholly inside uint8 [h, w, C] crops
    ``x`` and ``y``: four [h - 64, w - 64, C] arrays (each product below 2**16, each sum below 2**31)."""
    if x.dtype != np.uint8 or y.dtype != np.uint8 or x.shape != y.shape or x.ndim != 3:
        raise InvalidInputError(f"ssim: expected two uint8 [h, w, C] crops of one shape, got {x.dtype} {x.shape} "
                                f"and {y.dtype} {y.shape}")
    d = cv2.absdiff(x, y)
    return (_window_sums(x), _window_sums(y), _window_sums(np.multiply(d, d, dtype=np.uint16)),
            _window_sums(np.multiply(x, y, dtype=np.uint16)))


def _map_block(sums: WindowSums, rows: slice) -> np.ndarray:
    """The SSIM map at ``rows`` of the window sums (see :func:`ssim_map`): float64 [r, w, C]."""
    n = float(SSIM_WINDOW * SSIM_WINDOW)
    c1 = (SSIM_K1 * PEAK) ** 2 * n * n  # C1 and C2 in the cleared units
    c2 = (SSIM_K2 * PEAK) ** 2 * n * (n - 1)
    sx, sy = sums[0][rows].astype(np.float64), sums[1][rows].astype(np.float64)  # integers < 2**53: exact below
    cross = sums[3][rows].astype(np.float64)
    pxy = sx * sy
    q = np.add(np.multiply(sx, sx, out=sx), np.multiply(sy, sy, out=sy), out=sx)  # sx**2 + sy**2
    # sum(x*x + y*y) = sum((x - y)**2) + 2 sum(x*y); times N, less sx**2 + sy**2: N (N - 1) (vx + vy)
    var = np.subtract(np.multiply(np.add(sums[2][rows], 2.0 * cross), n), q)
    cov = np.subtract(np.multiply(cross, n, out=cross), pxy, out=cross)  # N (N - 1) vxy
    num = np.multiply(np.add(np.multiply(pxy, 2.0, out=pxy), c1, out=pxy),
                      np.add(np.multiply(cov, 2.0, out=cov), c2, out=cov), out=pxy)
    den = np.multiply(np.add(q, c1, out=q), np.add(var, c2, out=var), out=q)
    return np.divide(num, den, out=num)


def ssim_map(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """scikit-image's SSIM map (65x65 uniform window, sample covariance, data_range 255) at every window wholly
    inside uint8 [h, w, C] crops ``x`` (ground truth) and ``y``: float64 [h - 64, w - 64, C].

    The same quantities as scikit-image's statements, from the exact integer window sums s of x, y, x*x + y*y and
    x*y (:func:`window_sums`) with the common factors cleared: ``ux uy = sx sy / N**2``, ``vx + vy = (N (sxx + syy)
    - sx**2 - sy**2) / (N (N - 1))`` and so on (N = 4225), so every numerator is an exact integer (below 2**53) and
    only the last products and the division round. Where x and y agree on a whole window the map is exactly 1.

    >>> x = (np.arange(70 * 70 * 3).reshape(70, 70, 3) % 251).astype(np.uint8)
    >>> ssim_map(x, x).shape, bool((ssim_map(x, x) == 1).all())
    ((6, 6, 3), True)
    """
    sums = window_sums(x, y)
    return _map_block(sums, slice(None))


def map_sums(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The sum of each channel's :func:`ssim_map` entries, formed :data:`BLOCK_ROWS` rows at a time: float64 [C].

    >>> x = (np.arange(70 * 70 * 3).reshape(70, 70, 3) % 251).astype(np.uint8)
    >>> map_sums(x, x).tolist()
    [36.0, 36.0, 36.0]
    """
    sums = window_sums(x, y)
    h = sums[0].shape[0]
    total = _map_block(sums, slice(0, BLOCK_ROWS))
    for r in range(BLOCK_ROWS, h - BLOCK_ROWS + 1, BLOCK_ROWS):
        total += _map_block(sums, slice(r, r + BLOCK_ROWS))
    tail = h % BLOCK_ROWS if h > BLOCK_ROWS else 0
    out = total.reshape(-1, total.shape[-1]).sum(axis=0)
    if tail:
        out += _map_block(sums, slice(h - tail, h)).reshape(-1, total.shape[-1]).sum(axis=0)
    return out


def _box_of(rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> tuple[slice, slice] | None:
    """The crop holding every window that overlaps the ``rows`` x ``cols`` bounding box (indices, sorted): the box
    grown by the window, clipped to the frame; None when empty."""
    if not len(rows) or not len(cols):
        return None
    reach = SSIM_WINDOW - 1
    return (slice(max(0, rows[0] - reach), min(h, rows[-1] + reach + 1)),
            slice(max(0, cols[0] - reach), min(w, cols[-1] + reach + 1)))


def _differing_box(gt: np.ndarray, test: np.ndarray, changed: np.ndarray | None) -> tuple[slice, slice] | None:
    """:func:`_box_of` the pixels where ``gt`` and ``test`` ([H, W, C]) differ, or of the ``changed`` ones (bool
    [H, W]) when given."""
    h, w = gt.shape[:2]
    if changed is not None:
        return _box_of(np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0)), h, w)
    d = cv2.absdiff(np.ascontiguousarray(gt), np.ascontiguousarray(test)).reshape(h, -1)  # uint8 maxima: fast
    return _box_of(np.flatnonzero(d.max(axis=1)), np.flatnonzero(d.max(axis=0).reshape(w, -1).max(axis=1)), h, w)


def ssim_frame(test: np.ndarray, gt: np.ndarray, changed: np.ndarray | None = None) -> float:
    """SSIM of one uint8 [H, W, 3] frame pair (``test`` against ``gt``) as ``structural_similarity(gt, test,
    data_range=255, channel_axis=-1, win_size=65)`` on float64 computes it (see the module docstring for how it is
    faster).

    ``changed`` (bool [H, W], optional): pixels outside it are promised equal in both frames (the protocol's
    composite equals the ground truth outside the dilated hole), which saves finding where they differ.

    >>> a = np.zeros((70, 70, 3), np.uint8)
    >>> ssim_frame(a, a)
    1.0
    """
    h, w = gt.shape[:2]
    if min(h, w) < SSIM_WINDOW:
        raise InvalidInputError(f"ssim_frame: frames of {w}x{h} are smaller than the {SSIM_WINDOW}x{SSIM_WINDOW} "
                                "window")
    count = (h - 2 * SSIM_PAD) * (w - 2 * SSIM_PAD)  # scored map entries per channel (the crop skimage averages)
    box = _differing_box(gt, test, changed)
    if box is None:
        return 1.0
    x, y = gt[box], test[box]
    offsets = map_sums(x, y) - (x.shape[0] - 2 * SSIM_PAD) * (x.shape[1] - 2 * SSIM_PAD)  # the rest is exactly 1
    return float(np.mean(1.0 + offsets / count))


def ssim_frames(test: np.ndarray, gt: np.ndarray, changed: np.ndarray | None = None) -> np.ndarray:
    """:func:`ssim_frame` of each frame of two uint8 [T, H, W, 3] videos (``changed``: bool [T, H, W] or None):
    float64 [T].

    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 256, (1, 80, 90, 3), dtype=np.uint8)
    >>> float(ssim_frames(a, a)[0])
    1.0
    """
    _check_pair(gt, test, "ssim_frames")
    if gt.dtype != np.uint8 or test.dtype != np.uint8:
        raise InvalidInputError(f"ssim_frames: expected uint8 frames, got {gt.dtype} and {test.dtype}")
    if changed is not None and changed.shape != gt.shape[:3]:
        raise InvalidInputError(f"ssim_frames: changed {changed.shape} does not match the frames {gt.shape[:3]}")
    return np.array([ssim_frame(t, g, None if changed is None else changed[i])
                     for i, (g, t) in enumerate(zip(gt, test))], np.float64)


def hole_psnr_frames(test: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Hole-only PSNR of each frame: mse over the pixels of ``hole`` (bool [T, H, W]) and their 3 channels, peak
    255; ``inf`` where they are identical, NaN for a frame without hole pixels. float64 [T].

    >>> a = np.zeros((1, 2, 2, 3), np.uint8); b = a.copy(); b[0, 0, 0] = 255; h = np.zeros((1, 2, 2), bool)
    >>> h[0, 0, :] = True
    >>> round(float(hole_psnr_frames(a, b, h)[0]), 4)  # mse over 2 pixels, not 4: 10 log10(2)
    3.0103
    """
    _check_pair(gt, test, "hole_psnr_frames")
    if hole.shape != gt.shape[:3] or hole.dtype != bool:
        raise InvalidInputError(f"hole_psnr_frames: expected a bool hole {gt.shape[:3]}, got {hole.dtype} "
                                f"{hole.shape}")
    d = gt.astype(np.float64) - test.astype(np.float64)
    sq = (d * d).sum(axis=-1)
    n = hole.sum(axis=(1, 2)) * 3
    total = np.where(hole, sq, 0.0).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        mse = total / n
        return np.where(n == 0, np.nan, np.where(mse == 0, np.inf, 20 * np.log10(PEAK / np.sqrt(mse))))


def hole_ssim_frames(test: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Hole-only SSIM of each frame: the protocol's SSIM map (65x65 window) averaged over the scored map entries
    (the 32-px crop) whose window centre lies in ``hole``, per channel, then over channels; NaN where none does.

    >>> a = np.zeros((1, 70, 70, 3), np.uint8); h = np.zeros((1, 70, 70), bool); h[0, 35, 35] = True
    >>> hole_ssim_frames(a, a, h).tolist()
    [1.0]
    """
    _check_pair(gt, test, "hole_ssim_frames")
    out = np.full(len(gt), np.nan)
    for t, (g, p, m) in enumerate(zip(gt, test, hole)):
        centres = m[SSIM_PAD:m.shape[0] - SSIM_PAD, SSIM_PAD:m.shape[1] - SSIM_PAD]
        rows, cols = np.flatnonzero(centres.any(axis=1)), np.flatnonzero(centres.any(axis=0))
        if len(rows):  # the map only at the centres' bounding box: the crop holding their windows
            r, c = slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)
            crop = (slice(r.start, r.stop + 2 * SSIM_PAD), slice(c.start, c.stop + 2 * SSIM_PAD))
            s = ssim_map(np.ascontiguousarray(g[crop]), np.ascontiguousarray(p[crop]))
            out[t] = float(np.mean(s[centres[r, c]].mean(axis=0)))
    return out


#: Smallest side of a hole-only LPIPS crop (AlexNet's five stages need about this much; a smaller hole's box grows
#: around its centre, clipped to the frame).
HOLE_CROP_MIN = 64


def hole_crop(hole: np.ndarray, min_side: int = HOLE_CROP_MIN) -> tuple[slice, slice] | None:
    """The crop of hole-only LPIPS for one frame: the bounding box of ``hole`` (bool [H, W]), each side grown
    around its centre to at least ``min_side`` (within the frame); None without hole pixels.

    >>> h = np.zeros((100, 200), bool); h[10:20, 190:195] = True
    >>> hole_crop(h)
    (slice(0, 64, None), slice(136, 200, None))
    """
    rows, cols = np.flatnonzero(hole.any(axis=1)), np.flatnonzero(hole.any(axis=0))
    if not len(rows):
        return None

    def grown(lo: int, hi: int, size: int) -> slice:
        need = max(0, min(min_side, size) - (hi - lo))
        lo = max(0, lo - need // 2)
        hi = min(size, max(hi, lo + min(min_side, size)))
        return slice(min(lo, hi - min(min_side, size)), hi)

    return grown(int(rows[0]), int(rows[-1]) + 1, hole.shape[0]), grown(int(cols[0]), int(cols[-1]) + 1, hole.shape[1])


def ewarp_pair(comp0: np.ndarray, comp1: np.ndarray, fw: np.ndarray, bw: np.ndarray) -> float:
    """E_warp of one pair (Lai et al., ECCV 2018; fast_blind_video_consistency ``evaluate_WarpError.py``): frame
    t + 1 warped back to t with the forward flow ``fw`` (t -> t + 1; bilinear, border clamped), squared error on the
    [0, 1] scale summed over the pixels the forward-backward check keeps (``bw``: t + 1 -> t), divided by 3 x their
    number (the per-channel mean); 0 when no pixel is kept (their fallback divides a zero sum by H x W x 3).

    >>> f = np.zeros((4, 4, 2), np.float32); a = np.zeros((4, 4, 3), np.uint8)
    >>> round(ewarp_pair(a, a + 51, f, f), 6)  # (51 / 255)**2 in float32
    0.04
    """
    c0 = comp0.astype(np.float32) / np.float32(255.0)
    c1 = comp1.astype(np.float32) / np.float32(255.0)
    kept = ~occlusion_mask(fw, bw)
    count = int(kept.sum())
    if count == 0:
        return 0.0
    diff = (warp_backward(c1, fw) - c0)[kept].astype(np.float64)
    return float(np.sum(diff * diff) / (3 * count))


def ewarp_video(comp: np.ndarray, forward: np.ndarray, backward: np.ndarray) -> float:
    """E_warp of a video: the mean of :func:`ewarp_pair` over its T - 1 consecutive pairs (``forward[t]``: flow
    t -> t + 1, ``backward[t]``: t + 1 -> t); NaN for a single frame.

    >>> f = np.zeros((2, 4, 4, 2), np.float32)
    >>> ewarp_video(np.zeros((3, 4, 4, 3), np.uint8), f, f)
    0.0
    """
    if len(comp) < 2:
        return float("nan")
    return float(np.mean([ewarp_pair(comp[t], comp[t + 1], forward[t], backward[t]) for t in range(len(comp) - 1)]))


__all__ = ["BLOCK_ROWS", "DILATION_ITERATIONS", "DILATION_KERNEL", "HOLE_CROP_MIN", "PEAK", "SSIM_K1", "SSIM_K2",
           "SSIM_PAD", "SSIM_WINDOW", "dilate_hole", "ewarp_pair", "ewarp_video", "hole_crop", "hole_psnr_frames",
           "hole_ssim_frames", "map_sums", "psnr_frames", "squared_error_sums", "ssim_frame", "ssim_frames", "ssim_map",
           "window_sums"]

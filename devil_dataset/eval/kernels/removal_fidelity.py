"""The other numbers object-removal papers print, by name (``docs/removal.md``):

- **background PSNR / SSIM** (MiniMax-Remover's): the result against a reference (the input video, for a removal)
  *outside* the mask only — how much of what should stay was changed. PSNR: the mean squared error over the
  pixels outside the mask and their 3 channels, peak 255. SSIM: scikit-image's map (7x7 uniform window, data range
  255, per channel) averaged over the pixels outside the mask. A fill that composites the background back is
  identical there: PSNR infinite, **capped** at the one-grey-level PSNR of those samples (10 log10(N 255^2), N the
  samples compared: a bound of every finite value, depending on the frame alone); its SSIM stays below 1, as the
  7x7 windows of background pixels next to the hole see the fill (the example: 0.65 on a 16x16 frame).
- **masked PSNR / SSIM** (VideoPainter's): both images multiplied by the mask (zero outside it), then the usual
  full-frame PSNR / SSIM — the pixels outside count as agreeing, so the value grows as the mask shrinks; with a
  ground truth it measures the fill; against a removal's input it measures closeness to the removed object.

    >>> import numpy as np
    >>> ref = np.zeros((1, 16, 16, 3), np.uint8); out = ref.copy(); hole = np.zeros((1, 16, 16), bool)
    >>> hole[0, 4:8, 4:8] = True; out[0, 4:8, 4:8] = 200  # only the hole changed: PSNR at the cap 10 log10(720 255^2)
    >>> background_psnr_frames(ref, out, hole).round(2).tolist(), background_ssim_frames(ref, out, hole).tolist()
    ([[76.7], [1.0]], [0.650499627757591])
"""
from __future__ import annotations

import numpy as np
from skimage import metrics as skimage_metrics  # a lazy module: its functions load on first use (~1-2 s)

from ...core.thread_map import default_threads, thread_map
from .pixel import one_grey_level_psnr

PEAK = 255.0
#: SSIM's window (scikit-image's default ``win_size=7``, uniform), data range 255.
SSIM_WINDOW = 7


def _psnr(sq_sum: np.ndarray, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(PSNR per frame capped at the one-grey-level PSNR of its samples, 1 where capped) from squared-error sums."""
    out = np.full(len(sq_sum), np.nan)
    capped = np.zeros(len(sq_sum), np.int64)
    for t, (s, n) in enumerate(zip(sq_sum, samples)):
        if n == 0:
            continue
        cap = one_grey_level_psnr(int(n))
        value = float("inf") if s == 0 else 10.0 * np.log10(PEAK ** 2 * n / s)
        out[t], capped[t] = min(value, cap), int(value > cap)
    return out, capped


def _squared_error_sums(reference: np.ndarray, result: np.ndarray, where: np.ndarray) -> np.ndarray:
    """Per frame, the sum of squared differences of two uint8 videos over the pixels ``where`` is True (all 3
    channels). float64 [T], computed in integers: every term is an integer of at most 255^2, and a frame's sum stays
    far below 2^53 (2^53 / 255^2 samples is 1.4e11, beyond any frame), so float64 arithmetic over the same terms
    gives the same exact integers, with half the memory traffic of float64."""
    d = np.subtract(reference, result, dtype=np.int32)  # uint8 operands cast first: signed differences
    d *= where[..., None]
    d = d.reshape(len(reference), -1)
    np.multiply(d, d, out=d)  # at most 255^2 each
    return d.sum(axis=1, dtype=np.int64).astype(np.float64)


def background_psnr_frames(reference: np.ndarray, result: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Background PSNR per frame (module docstring): float64 [2, T] — row 0 the values (capped; NaN for a frame
    that is all hole), row 1 1.0 where a frame was identical outside the hole (capped)."""
    keep = ~hole
    sq = _squared_error_sums(reference, result, keep)
    values, capped = _psnr(sq, keep.sum(axis=(1, 2)) * 3)
    return np.stack([values, capped.astype(np.float64)])


def background_ssim_frames(reference: np.ndarray, result: np.ndarray, hole: np.ndarray,
                           threads: int | None = None) -> np.ndarray:
    """Background SSIM per frame: scikit-image's SSIM map averaged over the pixels outside the hole (and over
    channels); NaN for a frame that is all hole. float64 [T]. The frames spread over ``threads`` threads (default:
    the CPUs this process may use; scikit-image's filters release the GIL); each frame's value is its own, so the
    result is the same with any count."""

    def frame(t: int) -> float:
        if not (~hole[t]).any():
            return float("nan")
        _, smap = skimage_metrics.structural_similarity(reference[t], result[t], win_size=SSIM_WINDOW,
                                                        data_range=PEAK, channel_axis=-1, full=True)
        return float(smap[~hole[t]].mean())

    return np.array(thread_map(frame, range(len(reference)), threads=threads or default_threads()), np.float64)


def masked_psnr_frames(reference: np.ndarray, result: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """VideoPainter's masked PSNR per frame: both frames times the mask, full-frame mean squared error (all
    H x W x 3 samples), capped as :func:`background_psnr_frames`. float64 [2, T] (values, capped)."""
    sq = _squared_error_sums(reference, result, hole)  # both times the mask: the difference is zero outside it
    values, capped = _psnr(sq, np.full(len(reference), int(np.prod(reference.shape[1:]))))
    return np.stack([values, capped.astype(np.float64)])


def masked_ssim_frames(reference: np.ndarray, result: np.ndarray, hole: np.ndarray,
                       threads: int | None = None) -> np.ndarray:
    """VideoPainter's masked SSIM per frame: both frames times the mask, scikit-image's full-frame SSIM
    (7x7 window, data range 255, per channel). float64 [T]; ``threads`` as :func:`background_ssim_frames`.

    >>> a = np.full((1, 16, 16, 3), 90, np.uint8); h = np.zeros((1, 16, 16), bool)
    >>> masked_ssim_frames(a, a // 2, h).tolist()  # no hole: both all zero, identical
    [1.0]
    """

    def frame(t: int) -> float:
        k = hole[t][..., None].astype(np.uint8)
        return float(skimage_metrics.structural_similarity(reference[t] * k, result[t] * k, win_size=SSIM_WINDOW,
                                                           data_range=PEAK, channel_axis=-1))

    return np.array(thread_map(frame, range(len(reference)), threads=threads or default_threads()), np.float64)


__all__ = ["SSIM_WINDOW", "background_psnr_frames", "background_ssim_frames", "masked_psnr_frames",
           "masked_ssim_frames"]

"""PSNR, SSIM and PCons of :mod:`devil_dataset.eval.kernels.pixel` in torch on any device (the GPU path).

The same values as the numpy path (within 1e-9, in practice bit for bit) from the same arithmetic, on a CPU or a GPU:

* **float32 where the reference is float32**: the release reads frames as ``uint8 / 255`` in float32, and
  scikit-image computes PSNR's squared differences in float32. Those elementwise steps run here as the same IEEE
  float32 operations in the same order (constants are 0-dim tensors of the operand's dtype, so no device rewrites a
  division as a multiplication by a reciprocal), which round the same on every device.
* **float64 wherever the reference accumulates**: SSIM computes in float64 as the release's scikit-image does, from
  exact window sums (:mod:`~devil_dataset.eval.kernels.ssim_window`: exact in any order, so the additions here give the
  numpy path's floats), every per-frame sum is a fixed pairwise tree of elementwise float64 additions
  (:func:`tree_sum`: the same order on any device and for any thread count), and the PCons search correlates in
  float64 and rounds to the exact integers.
* **the last scalar steps on the host**: the per-frame sums (for SSIM, the map's entries that are not 1) come back
  to numpy, which takes the logarithm and the means exactly as :mod:`~devil_dataset.eval.kernels.pixel` does.

Frames are uint8 numpy arrays [T, H, W, 3] (moved to the device once per call; a metric moves a video once for all
four pixel metrics,
:func:`devil_dataset.eval.metrics.pixel.video_tensors`) or tensors; the work runs in batches of ``batch_size`` frames.

    >>> import numpy as np
    >>> gt = np.zeros((2, 16, 16, 3), np.uint8); test = gt.copy(); test[1, 4:8, 4:8] = 255
    >>> psnr_frames(test, gt).tolist()
    [inf, 12.041199826559248]
    >>> ssim_frames(gt, gt).tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

import numpy as np

from .batches import frame_batches
from .pixel import (
    _EXACT_SUM_LIMIT,
    PCONS_PATCH,
    PCONS_RESCORE_REL,
    PCONS_SEARCH,
    PSNR_DATA_RANGE,
    SSIM_WIN_SIZE,
    _ssim_data_range,
)
from .ssim_window import HIGH_VALUES, SSIM_K1, SSIM_K2, UNIT_VALUES, mean_from_offsets

if TYPE_CHECKING:
    import torch

    Frames = Union[np.ndarray, torch.Tensor]

# uint8 -> [0, 1]: the release divides by 255, in float32.
_UINT8_MAX = 255.0
# PCons: the FFT correlation of uint8 values is rounded to the exact integer; a residue above this would mean lost
# exactness (the float64 rounding error is ~1e-6 here), as the numpy path's assertion checks.
_FFT_ROUNDING_GUARD = 0.25


def to_device(array: "Frames", device: str) -> "torch.Tensor":
    """``array`` (numpy or torch) as a tensor on ``device``; no copy when it is already there."""
    import torch

    if isinstance(array, torch.Tensor):
        return array.to(device)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def _const(value: float, like: "torch.Tensor") -> "torch.Tensor":
    """``value`` as a 0-dim tensor of ``like``'s dtype and device (an operand, never a host scalar: CUDA turns a
    division by a host scalar into a multiplication by its reciprocal, which rounds differently)."""
    import torch

    return torch.tensor(value, dtype=like.dtype, device=like.device)


def _unit_float(frames: "torch.Tensor") -> "torch.Tensor":
    """uint8 -> float32 in [0, 1], ``x / 255`` as the release reads frames (:func:`~.pixel._as_float`)."""
    import torch

    x = frames.to(torch.float32)
    return x / _const(_UINT8_MAX, x)


def tree_sum(x: "torch.Tensor") -> "torch.Tensor":
    """Sum over the last dimension in a fixed pairwise order: halves added elementwise until one value is left.

    The order depends on the length only, so the sum is the same float on every device and for every thread
    count (a library reduction's order differs between CPU and CUDA kernels, and may follow the thread count).

    >>> import torch
    >>> tree_sum(torch.arange(7, dtype=torch.float64).reshape(1, 7)).tolist()
    [21.0]
    """
    n = x.shape[-1]
    if n == 0:
        return x.new_zeros(x.shape[:-1])
    while n > 1:
        half = n // 2
        head = x[..., :half] + x[..., half : 2 * half]
        if n % 2:
            head[..., :1] += x[..., 2 * half :]
        x, n = head, half
    return x[..., 0]


def channel_sum(x: "torch.Tensor") -> "torch.Tensor":
    """Sum over the last (channel) dimension as elementwise additions in channel order (a fixed order, like
    :func:`tree_sum`): [..., C] -> [...]."""
    out = x[..., 0]
    for c in range(1, x.shape[-1]):
        out = out + x[..., c]
    return out


# ------------------------------------------------------------------------------------------------------ PSNR
def _box_mask(changed: "torch.Tensor") -> "torch.Tensor":
    """Per frame, the bounding box of ``changed`` (bool [B, H, W]) as a bool mask (all False without a pixel)."""
    import torch

    def span(any_along: "torch.Tensor") -> "torch.Tensor":
        hits = any_along.to(torch.int32)
        return (hits.cumsum(1) > 0) & (hits.flip(1).cumsum(1).flip(1) > 0)

    return span(changed.any(dim=2))[:, :, None] & span(changed.any(dim=1))[:, None, :]


def psnr_sums(test: "torch.Tensor", gt: "torch.Tensor", changed: "torch.Tensor | None" = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per frame of one batch, the float64 sum of the float32 squared differences (and, with ``changed``, the sum
    over its bounding box): uint8 [B, H, W, C] tensors on one device -> host arrays."""
    import torch

    d = _unit_float(gt) - _unit_float(test)
    # np.square of the float32 difference, then float64 as numpy accumulates; per pixel, then per frame
    sq = channel_sum((d * d).to(torch.float64))
    full = tree_sum(sq.reshape(len(sq), -1)).cpu().numpy()
    if changed is None:
        return full, None
    # below the exact limit any order of the box's terms gives the exact sum, and a sum reaching it (kept only to
    # be compared with it) cannot round below it: so the box sum decides as the numpy path's does
    boxed = tree_sum(torch.where(_box_mask(changed), sq, _const(0.0, sq)).reshape(len(sq), -1)).cpu().numpy()
    return full, boxed


def psnr_frames(test: "Frames", gt: "Frames", changed: "Frames | None" = None, *, device: str = "cpu",
                batch_size: int = 8) -> np.ndarray:
    """Per-frame PSNR of :func:`devil_dataset.eval.kernels.pixel.psnr_frames` (same arguments and rules), on ``device``.

    With ``changed`` the squared differences are summed over its bounding box while that sum is below
    :data:`~devil_dataset.eval.kernels.pixel._EXACT_SUM_LIMIT` (exact, so the reference's float), else over the frame.

    >>> a = np.zeros((2, 4, 4, 3), np.uint8); b = a.copy(); b[1] = 255
    >>> psnr_frames(a, b).tolist(), psnr_frames(a, b, np.ones((2, 4, 4), bool)).tolist()
    ([inf, 0.0], [inf, 0.0])
    """
    if tuple(gt.shape) != tuple(test.shape):
        raise ValueError(f"shape mismatch: test {tuple(test.shape)} vs gt {tuple(gt.shape)}")
    t_test, t_gt = to_device(test, device), to_device(gt, device)
    t_changed = None if changed is None else to_device(changed, device)
    count = int(np.prod(gt.shape[1:]))
    out = np.empty(len(gt), np.float64)
    for s in frame_batches(len(gt), batch_size):
        full, boxed = psnr_sums(t_test[s], t_gt[s], None if t_changed is None else t_changed[s])
        total = full if boxed is None else np.where(boxed < _EXACT_SUM_LIMIT, boxed, full)
        with np.errstate(divide="ignore"):
            out[s] = 10 * np.log10(PSNR_DATA_RANGE**2 / (total / count))
    return out


def psnr(test: "Frames", gt: "Frames", changed: "Frames | None" = None, *, device: str = "cpu",
         batch_size: int = 8) -> float:
    """Per-video PSNR: mean over frames of :func:`psnr_frames` (``inf`` if some frame is identical)."""
    return float(np.mean(psnr_frames(test, gt, changed, device=device, batch_size=batch_size)))


# ------------------------------------------------------------------------------------------------------ SSIM
def ssim_window_sums(planes: "torch.Tensor") -> "torch.Tensor":
    """Sums over every 7x7 window wholly inside float64 [B, H, W, C] planes: [B, H - 6, W - 6, C], as elementwise
    additions along H, then along W. For the planes :func:`ssim_window_means` makes every sum is exact (see
    :mod:`~devil_dataset.eval.kernels.ssim_window`), so these are the numpy path's floats whatever the order."""
    height, width = planes.shape[1], planes.shape[2]
    rows = planes[:, : height - SSIM_WIN_SIZE + 1]
    for k in range(1, SSIM_WIN_SIZE):
        rows = rows + planes[:, k : height - SSIM_WIN_SIZE + 1 + k]
    out = rows[:, :, : width - SSIM_WIN_SIZE + 1]
    for k in range(1, SSIM_WIN_SIZE):
        out = out + rows[:, :, k : width - SSIM_WIN_SIZE + 1 + k]
    return out


def ssim_window_means(gt: "torch.Tensor", test: "torch.Tensor"
                 ) -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor"]:
    """:func:`~devil_dataset.eval.kernels.ssim_window.window_means` of uint8 [B, H, W, C] tensors on their device:
    (ux, uy, uxx, uyy, uxy), float64 [B, H - 6, W - 6, C], the same floats (exact window sums, the same products, one
    division)."""
    import torch

    unit = torch.as_tensor(UNIT_VALUES, device=gt.device)
    high = torch.as_tensor(HIGH_VALUES, device=gt.device)
    gi, ti = gt.long(), test.long()
    x, y, x_hi, y_hi = unit[gi], unit[ti], high[gi], high[ti]

    def product_sums(a: "torch.Tensor", b: "torch.Tensor", a_hi: "torch.Tensor", b_hi: "torch.Tensor"
                     ) -> "torch.Tensor":
        top = a_hi * b_hi
        return ssim_window_sums(top) + ssim_window_sums(a * b - top)

    n = _const(float(SSIM_WIN_SIZE**2), x)
    return (ssim_window_sums(x) / n, ssim_window_sums(y) / n, product_sums(x, x, x_hi, x_hi) / n,
            product_sums(y, y, y_hi, y_hi) / n, product_sums(x, y, x_hi, y_hi) / n)


def ssim_map(ux: "torch.Tensor", uy: "torch.Tensor", uxx: "torch.Tensor", uyy: "torch.Tensor",
             uxy: "torch.Tensor", data_range: float) -> "torch.Tensor":
    """:func:`~devil_dataset.eval.kernels.ssim_window.ssim_map` in torch: the same float64 statements in the same
    order."""
    n = SSIM_WIN_SIZE**2
    cov_norm, two = _const(n / (n - 1), ux), _const(2.0, ux)
    c1, c2 = _const((SSIM_K1 * data_range) ** 2, ux), _const((SSIM_K2 * data_range) ** 2, ux)
    ux2, uy2 = ux * ux, uy * uy
    vx = (uxx - ux2) * cov_norm
    vy = (uyy - uy2) * cov_norm
    vxy = (uxy - ux * uy) * cov_norm
    a1 = ux * two * uy + c1
    a2 = vxy * two + c2
    b1 = ux2 + uy2 + c1
    b2 = vx + vy + c2
    return (a1 * a2) / (b1 * b2)


def ssim_frames(test: "Frames", gt: "Frames", mode: str = "release", *, device: str = "cpu",
                batch_size: int = 8) -> np.ndarray:
    """Per-frame SSIM of :func:`devil_dataset.eval.kernels.pixel.ssim_frames` (float64, uniform 7x7 window, ``mode``
    ``"release"``: data range 2, ``"standard"``: 1), on ``device``: the map of whole frames on the device, and its
    entries that are not 1 summed on the host (:func:`~devil_dataset.eval.kernels.ssim_window.mean_from_offsets`), so
    the values are the numpy path's floats.

    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 256, (2, 16, 16, 3), dtype=np.uint8); b = rng.integers(0, 256, a.shape, dtype=np.uint8)
    >>> from devil_dataset.eval.kernels import pixel
    >>> ssim_frames(b, a).tolist() == pixel.ssim_frames(b, a).tolist()
    True
    """
    if tuple(gt.shape) != tuple(test.shape):
        raise ValueError(f"shape mismatch: test {tuple(test.shape)} vs gt {tuple(gt.shape)}")
    data_range = _ssim_data_range(mode)
    height, width = int(gt.shape[1]), int(gt.shape[2])
    if min(height, width) < SSIM_WIN_SIZE:
        raise ValueError(f"ssim: frames of {width}x{height} are smaller than the {SSIM_WIN_SIZE}x{SSIM_WIN_SIZE} "
                         "window")
    t_test, t_gt = to_device(test, device), to_device(gt, device)
    count = (height - SSIM_WIN_SIZE + 1) * (width - SSIM_WIN_SIZE + 1)
    out = np.empty(len(gt), np.float64)
    for s in frame_batches(len(gt), batch_size):
        offsets = (ssim_map(*ssim_window_means(t_gt[s], t_test[s]), data_range) - 1.0).permute(0, 3, 1, 2)
        nonzero = offsets != 0
        # the entries that are not 0, row-major per (frame, channel): one transfer per batch, split on the host
        values = offsets[nonzero].cpu().numpy()
        ends = np.cumsum(nonzero.sum(dim=(2, 3)).cpu().numpy().reshape(-1))
        planes = np.split(values, ends[:-1])
        channels = offsets.shape[1]
        for i in range(offsets.shape[0]):
            out[s.start + i] = mean_from_offsets(planes[i * channels : (i + 1) * channels], count)
    return out


def ssim(test: "Frames", gt: "Frames", mode: str = "release", *, device: str = "cpu", batch_size: int = 8) -> float:
    """Per-video SSIM: mean over frames of :func:`ssim_frames`."""
    return float(np.mean(ssim_frames(test, gt, mode, device=device, batch_size=batch_size)))


# ----------------------------------------------------------------------------------------------------- PCons
def hole_centroid_topleft(hole: "Frames", patch: int = PCONS_PATCH, device: str = "cpu") -> np.ndarray:
    """:func:`devil_dataset.eval.kernels.pixel.hole_centroid_topleft` of a bool [T, H, W] hole on ``device`` (exact
    integer sums, one float64 division per axis: the same values); rows without a hole are ``-1``.

    >>> h = np.zeros((2, 100, 100), bool); h[0, 40:50, 60:70] = True
    >>> hole_centroid_topleft(h).tolist()
    [[19, 39], [-1, -1]]
    """
    import torch

    m = to_device(hole, device)
    height, width = int(m.shape[1]), int(m.shape[2])
    count = m.sum(dim=(1, 2), dtype=torch.int64)
    rows = (m.sum(dim=2, dtype=torch.int64) * torch.arange(height, device=m.device)).sum(dim=1)
    cols = (m.sum(dim=1, dtype=torch.int64) * torch.arange(width, device=m.device)).sum(dim=1)

    def corner(total: "torch.Tensor", size: int) -> "torch.Tensor":
        centre = total.to(torch.float64) / count.to(torch.float64)
        return torch.floor(centre - patch / 2).clamp(0, size - patch)

    tl = torch.stack([corner(rows, height), corner(cols, width)], dim=1)
    out = torch.where((count > 0)[:, None], tl, torch.full_like(tl, -1.0))
    return out.to(torch.int64).cpu().numpy()


def _crops(frames: "torch.Tensor", index: "torch.Tensor", top: "torch.Tensor", left: "torch.Tensor",
           size: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """``frames[index[i], top[i]:top[i]+size, left[i]:left[i]+size]`` for every i ([N, size, size, C]), zero where
    the crop leaves the frame; and the bool [N, size, size] mask of its pixels inside the frame."""
    import torch

    height, width = frames.shape[1:3]
    offsets = torch.arange(size, device=frames.device)
    rows, cols = top[:, None] + offsets, left[:, None] + offsets
    inside = (((rows >= 0) & (rows < height))[:, :, None] & ((cols >= 0) & (cols < width))[:, None, :])
    crop = frames[index[:, None, None], rows.clamp(0, height - 1)[:, :, None], cols.clamp(0, width - 1)[:, None, :]]
    return crop * inside[..., None].to(crop.dtype), inside


def _window_sums(a: "torch.Tensor", k: int) -> "torch.Tensor":
    """Exact sums of every k x k window of an int64 [N, R, R] tensor (integral image)."""
    import torch.nn.functional as F

    c = F.pad(a.cumsum(1).cumsum(2), (1, 0, 1, 0))
    return c[:, k:, k:] - c[:, :-k, k:] - c[:, k:, :-k] + c[:, :-k, :-k]


def _cross_correlation(regions: "torch.Tensor", patches: "torch.Tensor", span: int) -> "torch.Tensor":
    """Exact integer sum(patch * window) for every window offset: float64 FFT rounded to the nearest integer.

    ``regions`` [N, R, R, C] and ``patches`` [N, P, P, C] hold uint8 values, so every true value is an integer below
    2**30 and the rounding error is far below 0.5 (:data:`_FFT_ROUNDING_GUARD` checks it).
    """
    import torch

    size = regions.shape[1]
    p = patches.shape[1]
    r = regions.permute(0, 3, 1, 2).to(torch.float64)
    k = patches.permute(0, 3, 1, 2).flip(-2, -1).to(torch.float64)
    spectrum = (torch.fft.rfft2(r, s=(size, size)) * torch.fft.rfft2(k, s=(size, size))).sum(dim=1)
    corr = torch.fft.irfft2(spectrum, s=(size, size))[:, p - 1 : p - 1 + span, p - 1 : p - 1 + span]
    rounded = torch.round(corr)
    if float((corr - rounded).abs().max()) > _FFT_ROUNDING_GUARD:  # pragma: no cover - cannot happen for uint8
        raise ArithmeticError("FFT cross-correlation lost integer exactness")
    return rounded.to(torch.int64)


def pcons_psnr_mask_pairs(frames: "Frames", hole: "Frames", patch: int = PCONS_PATCH, search: int = PCONS_SEARCH,
                          *, device: str = "cpu", batch_size: int = 8) -> np.ndarray:
    """PCons best-patch PSNR per consecutive pair: :func:`devil_dataset.eval.kernels.pixel.pcons_psnr_mask_pairs` on
    ``device`` (NaN where frame t-1 has no hole).

    The exact integer SSD of every window of the search (integral images and a float64 FFT correlation rounded to
    integers) picks the windows within 2e-4 of the best; those are re-scored with the release's float32 arithmetic
    (a sum of at most 7500 float32 squares, exact in float64) and the smallest MSE gives the PSNR.

    >>> f = np.random.default_rng(0).integers(0, 256, (3, 80, 90, 3), dtype=np.uint8)
    >>> f[1, 5:, 3:] = f[0, :-5, :-3]
    >>> h = np.zeros((3, 80, 90), bool); h[:2, 30:40, 30:40] = True
    >>> from devil_dataset.eval.kernels import pixel
    >>> pcons_psnr_mask_pairs(f, h).tolist() == pixel.pcons_psnr_mask_pairs(f, h).tolist()
    True
    """
    import torch

    t_len, height, width = int(frames.shape[0]), int(frames.shape[1]), int(frames.shape[2])
    if height < patch or width < patch:
        raise ValueError(f"frames of {width}x{height} are smaller than the {patch}x{patch} PCons patch")
    out = np.full(max(t_len - 1, 0), np.nan)
    if t_len < 2:
        return out
    f = to_device(frames, device)
    tl = hole_centroid_topleft(to_device(hole, device)[:-1], patch, device)
    pairs = np.flatnonzero(tl[:, 0] >= 0)
    span = 2 * search  # candidate offsets -search .. search-1
    for s in frame_batches(len(pairs), batch_size):
        chunk = pairs[s]
        index = torch.as_tensor(chunk, device=f.device)
        sy = torch.as_tensor(tl[chunk, 0], device=f.device)
        sx = torch.as_tensor(tl[chunk, 1], device=f.device)
        patches, _ = _crops(f, index, sy, sx, patch)
        regions, _ = _crops(f, index + 1, sy - search, sx - search, span + patch - 1)
        sum_a2 = (patches.to(torch.int64) ** 2).sum(dim=(1, 2, 3))
        sum_b2 = _window_sums((regions.to(torch.int64) ** 2).sum(dim=3), patch)
        ssd = sum_a2[:, None, None] + sum_b2 - 2 * _cross_correlation(regions, patches, span)
        offsets = torch.arange(-search, search, device=f.device)
        oky = ((sy[:, None] + offsets) >= 0) & ((sy[:, None] + offsets) <= height - patch)
        okx = ((sx[:, None] + offsets) >= 0) & ((sx[:, None] + offsets) <= width - patch)
        ssd = torch.where(oky[:, :, None] & okx[:, None, :], ssd, torch.iinfo(torch.int64).max)
        best = ssd.reshape(len(chunk), -1).min(dim=1).values
        # The release's float32 MSE is within 3.1e-5 relative of the exact one (see the numpy path): every window
        # within 2e-4 of the best exact SSD is re-scored, so the release's minimum is among them
        near = ssd.to(torch.float64) <= (best.to(torch.float64) * (1 + PCONS_RESCORE_REL))[:, None, None]
        cand, oy, ox = near.nonzero(as_tuple=True)
        windows, _ = _crops(f, index[cand] + 1, sy[cand] + oy - search, sx[cand] + ox - search, patch)
        d = _unit_float(patches[cand]) - _unit_float(windows)
        sums = tree_sum((d * d).to(torch.float64).reshape(len(cand), -1)).cpu().numpy()
        mse = sums / (patch * patch * int(frames.shape[3]))
        owner = cand.cpu().numpy()
        for i, t in enumerate(chunk):
            with np.errstate(divide="ignore"):
                out[t] = 10 * np.log10(PSNR_DATA_RANGE**2 / np.float64(mse[owner == i].min()))
    return out


def pcons_psnr_mask(frames: "Frames", hole: "Frames", *, device: str = "cpu", batch_size: int = 8) -> float:
    """Per-video PCons (PSNR, mask): mean of :func:`pcons_psnr_mask_pairs` over pairs with a hole in frame t-1
    (NaN when none qualifies)."""
    values = pcons_psnr_mask_pairs(frames, hole, device=device, batch_size=batch_size)
    values = values[~np.isnan(values)]
    return float(np.mean(values)) if len(values) else float("nan")


__all__ = [
    "channel_sum", "hole_centroid_topleft", "pcons_psnr_mask", "pcons_psnr_mask_pairs", "psnr", "psnr_frames",
    "psnr_sums", "ssim", "ssim_frames", "ssim_map", "ssim_window_means", "ssim_window_sums",
    "to_device", "tree_sum", ]

"""The warp error's warping and occlusion (:mod:`devil_dataset.eval.kernels.warp`) in torch on any device.

The numpy path evaluates the occlusion mask and the warp only near the hole, with the same floats as whole-frame
evaluation cropped; here every pair of a batch is computed over the whole frame, which on a GPU costs less than
finding the window. The arithmetic is the numpy path's operation for operation: the bilinear backward warp in
float32 (weights from the unclamped position, the four neighbours clamped into the frame, FlowNet2's
``Resample2d``), the occlusion tests in float64 (forward-backward: ``|fw + bw_w|^2 > 0.01 (|bw_w|^2 + |fw|^2) +
0.5``; motion boundary: ``|grad fw|^2 > 0.01 |fw|^2 + 0.002``, forward differences, 0 on the last row and column).
What the metric takes from here is the pixels entering the mean (:func:`hole_points_for`, through
:meth:`~devil_dataset.eval.kernels.warp.GroundTruthFlow.for_hole`); the value itself is computed at those pixels in
numpy (:func:`~devil_dataset.eval.kernels.warp.warp_error_at`), the same floats on every backend.

    >>> import numpy as np
    >>> img = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    >>> warp_backward(to_device(img, "cpu"), to_device(np.full((1, 3, 4, 2), 0.5, np.float32), "cpu"))[0, 0].tolist()
    [2.5, 3.5, 4.5, 5.0]
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .batches import frame_batches
from .pixel_torch import to_device
from .warp import OCC_FB_ABS, OCC_FB_REL, OCC_GRAD_ABS, OCC_GRAD_REL, GroundTruthFlow, HoleFlow

if TYPE_CHECKING:
    import torch

    from .pixel_torch import Frames


def warp_backward(image: "torch.Tensor", flow: "torch.Tensor") -> "torch.Tensor":
    """Batched :func:`~devil_dataset.eval.kernels.warp.warp_backward`: ``image`` float32 [B, H, W, C] or [B, H, W]
    sampled at p + ``flow``(p) (float32 [B, H, W, 2]), bilinear, neighbours clamped to the border; float32
    throughout."""
    import torch

    b, h, w = flow.shape[:3]
    xf = torch.arange(w, dtype=torch.float32, device=flow.device) + flow[..., 0].to(torch.float32)
    yf = torch.arange(h, dtype=torch.float32, device=flow.device)[:, None] + flow[..., 1].to(torch.float32)
    x0, y0 = torch.floor(xf), torch.floor(yf)
    a, bb = xf - x0, yf - y0
    xl = x0.clamp(0, w - 1).to(torch.int64)
    xr = (x0 + 1).clamp(0, w - 1).to(torch.int64)
    yt = y0.clamp(0, h - 1).to(torch.int64) * w  # row offsets into the flattened image
    yb = (y0 + 1).clamp(0, h - 1).to(torch.int64) * w
    img = image.to(torch.float32)
    planar = img.dim() == 3
    flat = img.reshape(b, h * w, 1 if planar else img.shape[-1])
    if not planar:
        a, bb = a[..., None], bb[..., None]

    def px(index: "torch.Tensor") -> "torch.Tensor":  # img[y, x] gathered through flat indices
        got = torch.gather(flat, 1, index.reshape(b, h * w, 1).expand(-1, -1, flat.shape[-1]))
        return got.reshape(b, h, w) if planar else got.reshape(b, h, w, -1)

    return ((1 - a) * (1 - bb) * px(yt + xl) + a * (1 - bb) * px(yt + xr)
            + (1 - a) * bb * px(yb + xl) + a * bb * px(yb + xr))


def occlusion_mask(fw: "torch.Tensor", bw: "torch.Tensor") -> "torch.Tensor":
    """Batched :func:`~devil_dataset.eval.kernels.warp.occlusion_mask` (bool [B, H, W]) of forward flows ``fw``
    (t-1 -> t) and backward flows ``bw`` (float32 [B, H, W, 2]); float64 tests, each sum in the numpy path's order."""
    import torch

    bw_w = warp_backward(bw, fw)
    c0, c1 = fw[..., 0].to(torch.float64), fw[..., 1].to(torch.float64)
    b0, b1 = bw_w[..., 0].to(torch.float64), bw_w[..., 1].to(torch.float64)
    fmag = c0 * c0 + c1 * c1  # |fw|^2
    s0, s1 = c0 + b0, c1 + b1
    lhs = s0 * s0 + s1 * s1  # |fw + bw_w|^2
    rhs = (b0 * b0 + b1 * b1 + fmag) * OCC_FB_REL + OCC_FB_ABS
    mask = lhs > rhs

    def squared_gradient(c: "torch.Tensor") -> "torch.Tensor":  # du^2 + dv^2 of one flow channel
        du = torch.zeros_like(c)
        du[:, :, :-1] = c[:, :, :-1] - c[:, :, 1:]
        dv = torch.zeros_like(c)
        dv[:, :-1, :] = c[:, :-1, :] - c[:, 1:, :]
        return du * du + dv * dv

    grad = squared_gradient(c0) + squared_gradient(c1)
    return mask | (grad > fmag * OCC_GRAD_REL + OCC_GRAD_ABS)


def valid_mask(hole0: "torch.Tensor", hole1: "torch.Tensor", fw: "torch.Tensor", bw: "torch.Tensor"
               ) -> "torch.Tensor":
    """The pixels of frame t-1 entering the warp error (bool [B, H, W]): not occluded, and a flow vector starts in
    the hole of t-1 (``hole0``) or ends in the hole of t (``hole1`` warped back), as
    :func:`devil_dataset.eval.kernels.warp.hole_points_for` selects them."""
    import torch

    touched = (hole0.to(torch.float32) + warp_backward(hole1.to(torch.float32), fw)) > 0
    return touched & ~occlusion_mask(fw, bw)


def device_flows(flow: GroundTruthFlow, device: str) -> tuple["torch.Tensor", "torch.Tensor"]:
    """The flows of ``flow`` as [pairs, H, W, 2] tensors on ``device``, moved once and kept in
    ``flow.device_cache`` (shared by every hole and method of the clip; never stored by the ground-truth cache)."""
    import torch

    found = flow.device_cache.get(device)
    if found is None:
        def stack(flows: list) -> "torch.Tensor":
            # the flows' own dtype: the warp reads them as float32, the occlusion tests as float64 (numpy's casts)
            return to_device(np.stack(flows), device) if flows else \
                torch.zeros((0, 0, 0, 2), dtype=torch.float32, device=device)

        found = flow.device_cache[device] = (stack(flow.fw), stack(flow.bw))
    return found


def valid_masks(hole: "Frames", flow: GroundTruthFlow, *, device: str = "cpu", batch_size: int = 8
                ) -> "torch.Tensor":
    """:func:`valid_mask` of every pair (t-1, t) of a bool [T, H, W] hole: bool [T-1, H, W] on ``device``."""
    import torch

    m = to_device(hole, device)
    fw, bw = device_flows(flow, device)
    out = torch.zeros((max(len(m) - 1, 0), *m.shape[1:]), dtype=torch.bool, device=m.device)
    for s in frame_batches(len(out), batch_size):
        out[s] = valid_mask(m[s.start : s.stop], m[s.start + 1 : s.stop + 1], fw[s], bw[s])
    return out


def hole_points_for(hole: "Frames", flow: GroundTruthFlow, *, device: str = "cpu", batch_size: int = 8,
                    valid: "torch.Tensor | None" = None) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """:func:`~devil_dataset.eval.kernels.warp.hole_points_for` computed on ``device``: per pair the (ys, xs) of the
    pixels entering the mean in row-major order (int64 numpy arrays), or None when there is none. ``valid``: the
    :func:`valid_masks` already computed."""
    import torch

    valid = valid if valid is not None else valid_masks(hole, flow, device=device, batch_size=batch_size)
    pair, ys, xs = (a.cpu().numpy() for a in torch.nonzero(valid, as_tuple=True))
    bounds = np.searchsorted(pair, np.arange(len(valid) + 1))
    return [(ys[a:b], xs[a:b]) if b > a else None for a, b in zip(bounds[:-1], bounds[1:])]


class DeviceGroundTruthFlow(GroundTruthFlow):
    """A :class:`~devil_dataset.eval.kernels.warp.GroundTruthFlow` whose :meth:`for_hole` evaluates the occlusion on
    its ``device`` (the torch pixel backend); the same points, so the same :class:`HoleFlow`.

    >>> fw = [np.full((4, 6, 2), 0.5, np.float32)]
    >>> hole = np.zeros((2, 4, 6), bool); hole[:, 1:3, 2:4] = True
    >>> flow = DeviceGroundTruthFlow(fw, [-f for f in fw], device="cpu")
    >>> on_device = flow.for_hole(hole).points[0][0].tolist()
    >>> on_device == GroundTruthFlow(fw, [-f for f in fw]).for_hole(hole).points[0][0].tolist()
    True
    """

    def for_hole(self, hole: np.ndarray) -> HoleFlow:
        points = hole_points_for(hole, self, device=self.device or "cpu", batch_size=self.batch_size)
        return HoleFlow.of(points, self.fw, hole)


__all__ = ["DeviceGroundTruthFlow", "device_flows", "hole_points_for", "occlusion_mask", "valid_mask", "valid_masks",
           "warp_backward"]

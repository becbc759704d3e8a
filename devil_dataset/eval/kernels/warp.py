"""Warp error (mask) kernels (the release's metrics): flow on the GT frames, composite warped back, error where holes
are.

The metric (:class:`~devil_dataset.eval.metrics.warp.WarpErrorMetric`) computes the ground-truth-only part once per
clip (forward and backward flow:
:class:`GroundTruthFlow`); the hole-dependent part once per hole (which pixels enter the mean, occlusion evaluated
only around the hole, and the flow at those pixels: :class:`HoleFlow`, all a method's update needs); every method
scored on that clip and hole reuses it through ``update(video, prepared)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...core.content_hash import clip_content_hash
from ...core.hole_box import hole_window

# The release's forward-backward check: |fw + bw_w|^2 > 0.01 (|bw_w|^2 + |fw|^2) + 0.5
OCC_FB_REL, OCC_FB_ABS = 0.01, 0.5
OCC_GRAD_REL, OCC_GRAD_ABS = 0.01, 0.002  # the release's motion-boundary check: |grad fw|^2 > 0.01 |fw|^2 + 0.002


def warp_backward(image: np.ndarray, flow: np.ndarray, window: tuple[slice, slice] | None = None) -> np.ndarray:
    """Sample ``image`` [H, W, C] (or [H, W]) at p + flow(p), bilinear, coordinates clamped to the border.

    The FlowNet2 ``Resample2d`` semantics the release uses: weights from the unclamped position, the four
    neighbours clamped into the frame. Float32 arithmetic. ``window`` (rows, columns slices) computes only those
    pixels of the result: the same floats as cropping the whole result.

    >>> img = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> warp_backward(img, np.full((3, 4, 2), 0.5, np.float32))[0].tolist()
    [2.5, 3.5, 4.5, 5.0]
    >>> warp_backward(img, np.full((3, 4, 2), 0.5, np.float32), (slice(0, 1), slice(1, 3))).tolist()
    [[3.5, 4.5]]
    """
    h, w = flow.shape[:2]
    rows, cols = window if window is not None else (slice(0, h), slice(0, w))
    part = flow[rows, cols]
    xf = np.arange(w, dtype=np.float32)[cols][None, :] + part[..., 0].astype(np.float32)
    yf = np.arange(h, dtype=np.float32)[rows][:, None] + part[..., 1].astype(np.float32)
    x0, y0 = np.floor(xf), np.floor(yf)
    a, b = xf - x0, yf - y0
    xl = np.clip(x0, 0, w - 1).astype(np.intp)
    xr = np.clip(x0 + 1, 0, w - 1).astype(np.intp)
    yt = np.clip(y0, 0, h - 1).astype(np.intp) * w  # row offsets into the flattened image
    yb = np.clip(y0 + 1, 0, h - 1).astype(np.intp) * w
    img = image.astype(np.float32, copy=False)
    flat = img.reshape(h * w, *img.shape[2:])
    if img.ndim == 3:
        a, b = a[..., None], b[..., None]

    def px(index: np.ndarray) -> np.ndarray:  # img[y, x] gathered through flat indices (2x faster, same values)
        return np.take(flat, index, axis=0)

    return ((1 - a) * (1 - b) * px(yt + xl) + a * (1 - b) * px(yt + xr)
            + (1 - a) * b * px(yb + xl) + a * b * px(yb + xr)).astype(np.float32)


def occlusion_mask(fw: np.ndarray, bw: np.ndarray, window: tuple[slice, slice] | None = None) -> np.ndarray:
    """Occluded pixels of frame t-1 (bool [H, W]) from forward flow ``fw`` (t-1 -> t) and backward ``bw``.

    the release's metrics: with bw_w = bw warped by fw, occluded where |fw + bw_w|^2 > 0.01 (|bw_w|^2 + |fw|^2) + 0.5
    or where the squared forward-flow gradient > 0.01 |fw|^2 + 0.002 (forward differences, 0 on the last
    row/column), as ``detect_occlusion`` of fast_blind_video_consistency that the release calls. Float64
    arithmetic, each sum in the order of those formulas. ``window`` (rows, columns slices) computes only that part
    of the mask: every pixel depends on the flows at itself, its right and lower neighbours and where ``fw``
    points, so the values are those of the whole mask cropped.

    >>> z = np.zeros((4, 4, 2), np.float32)
    >>> bool(occlusion_mask(z, z).any())
    False
    >>> f = np.random.default_rng(0).normal(0, 3, (2, 6, 8, 2)).astype(np.float32)
    >>> w = (slice(1, 4), slice(2, 8))
    >>> bool((occlusion_mask(f[0], f[1], w) == occlusion_mask(f[0], f[1])[w]).all())
    True
    """
    h, w = fw.shape[:2]
    rows, cols = window if window is not None else (slice(0, h), slice(0, w))
    bw_w = warp_backward(bw, fw, (rows, cols))
    # the window grown by one row and column (where the frame has them) for the forward differences
    grown = fw[rows.start:min(rows.stop + 1, h), cols.start:min(cols.stop + 1, w)]
    f0, f1 = (np.ascontiguousarray(grown[..., c], dtype=np.float64) for c in (0, 1))
    wh, ww = rows.stop - rows.start, cols.stop - cols.start
    c0, c1 = f0[:wh, :ww], f1[:wh, :ww]
    b0, b1 = (bw_w[..., c].astype(np.float64) for c in (0, 1))
    fmag = c0 * c0
    fmag += c1 * c1  # |fw|^2
    s = c0 + b0
    lhs = s * s
    np.add(c1, b1, out=s)
    s *= s
    lhs += s  # |fw + bw_w|^2
    rhs = b0 * b0
    b1 *= b1
    rhs += b1  # |bw_w|^2
    rhs += fmag
    rhs *= OCC_FB_REL
    rhs += OCC_FB_ABS
    mask = lhs > rhs
    nr, nc = min(wh, f0.shape[0] - 1), min(ww, f0.shape[1] - 1)  # rows / columns with a next one in the frame

    def squared_gradient(c: np.ndarray) -> np.ndarray:  # du^2 + dv^2 of one flow channel
        du = np.zeros((wh, ww))
        np.subtract(c[:wh, :nc], c[:wh, 1:nc + 1], out=du[:, :nc])
        dv = np.zeros((wh, ww))
        np.subtract(c[:nr, :ww], c[1:nr + 1, :ww], out=dv[:nr, :])
        du *= du
        dv *= dv
        du += dv
        return du

    grad = squared_gradient(f0)
    grad += squared_gradient(f1)
    fmag *= OCC_GRAD_REL
    fmag += OCC_GRAD_ABS
    mask |= grad > fmag
    return mask


def warp_error_pair(comp0: np.ndarray, comp1: np.ndarray, hole0: np.ndarray, hole1: np.ndarray,
                    fw: np.ndarray, bw: np.ndarray) -> float:
    """Warp error (mask) of one pair: C_t warped back to t-1, squared error over non-occluded pixels where a
    flow vector starts or ends in a hole; mean over those pixels and the 3 channels (NaN if there are none).
    """
    c0 = comp0.astype(np.float32) / 255.0
    c1 = comp1.astype(np.float32) / 255.0
    warped = warp_backward(c1, fw)
    touched = (hole0.astype(np.float32) + warp_backward(hole1.astype(np.float32), fw)) > 0
    valid = touched & ~occlusion_mask(fw, bw)
    if not valid.any():
        return float("nan")
    diff = (warped - c0)[valid]
    return float(np.mean(np.square(diff.astype(np.float64))))


def warp_backward_at(frame: np.ndarray, flow: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``warp_backward(frame.astype(float32) / 255, flow)[ys, xs]`` computed at those pixels only ([N, 3] float32).

    The arithmetic per pixel is that of :func:`warp_backward` (float32, bilinear,
    weights from the unclamped position, neighbours clamped), so the values are identical.
    """
    return warp_backward_points(frame, flow[ys, xs], ys, xs)


def warp_backward_points(frame: np.ndarray, flow_at: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """:func:`warp_backward_at` from the flow at the pixels (``flow_at`` [N, 2], what a :class:`HoleFlow` keeps)."""
    h, w = frame.shape[:2]
    xf = xs.astype(np.float32) + flow_at[:, 0].astype(np.float32)
    yf = ys.astype(np.float32) + flow_at[:, 1].astype(np.float32)
    x0, y0 = np.floor(xf), np.floor(yf)
    a, b = (xf - x0)[:, None], (yf - y0)[:, None]
    xl = np.clip(x0, 0, w - 1).astype(np.intp)
    xr = np.clip(x0 + 1, 0, w - 1).astype(np.intp)
    yt = np.clip(y0, 0, h - 1).astype(np.intp)
    yb = np.clip(y0 + 1, 0, h - 1).astype(np.intp)

    flat = frame.reshape(h * w, *frame.shape[2:])

    def px(yy, xx):  # frame[yy, xx] through flat row indices (np.take: about 5x faster, the same values)
        return np.take(flat, yy * w + xx, axis=0).astype(np.float32) / 255.0

    return ((1 - a) * (1 - b) * px(yt, xl) + a * (1 - b) * px(yt, xr)
            + (1 - a) * b * px(yb, xl) + a * b * px(yb, xr)).astype(np.float32)


@dataclass
class GroundTruthFlow:
    """The ground truth's flows of one clip (:meth:`WarpErrorMetric.prepare` without a hole).

    Per pair (t-1, t): the forward flow ``fw`` (GT t-1 -> t) and the backward flow ``bw`` (t -> t-1), from which
    :meth:`for_hole` finds, for one hole, the pixels that enter the warp error's mean (a :class:`HoleFlow`).

    The torch pixel backend uses :class:`~devil_dataset.eval.kernels.warp_torch.DeviceGroundTruthFlow`, which
    evaluates the occlusion on ``device`` (``batch_size`` pairs at a time, the flows' device copies kept in
    ``device_cache``, never stored or pickled); the points are the same.
    """

    fw: list
    bw: list
    device: str | None = None
    batch_size: int = 8
    device_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "device_cache": {}}  # device tensors stay in their process

    def for_hole(self, hole: np.ndarray) -> "HoleFlow":
        """What the warp error needs of this flow under ``hole`` (bool [T, H, W]): :class:`HoleFlow`."""
        return HoleFlow.of(hole_points_for(hole, self), self.fw, hole)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The flows as arrays ``fw``, ``bw`` [pairs, H, W, 2] (the ground-truth cache,
        :mod:`devil_dataset.eval.scoring.gt_cache`); :meth:`from_arrays` gives back the same floats."""
        empty = np.zeros((0, 0, 0, 2), np.float32)
        return {"fw": np.stack(self.fw) if self.fw else empty, "bw": np.stack(self.bw) if self.bw else empty}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "GroundTruthFlow":
        """The flow of :meth:`to_arrays`."""
        return cls(list(arrays["fw"]), list(arrays["bw"]))


#: One pair's part of a :class:`HoleFlow`: (ys, xs, flow at those pixels float32 [N, 2]), or None (no pixel).
PairPoints = tuple[np.ndarray, np.ndarray, np.ndarray] | None


@dataclass
class HoleFlow:
    """What the warp error needs of one clip's ground truth under one hole, and nothing more.

    Per pair (t-1, t): the pixels (``ys``, ``xs``, row-major) of frame t-1 that enter the mean (not occluded, and a
    flow vector starts or ends in the hole: :func:`hole_points_for`) and the forward flow at those pixels (float32
    [N, 2], all that :func:`warp_backward_at` reads), or ``None`` when no pixel enters. It is the hole's share of the
    flows (a few percent of their 16 bytes per pixel): the ground-truth cache stores it per (clip, hole).
    ``hole_sha``: the sha256 of the hole it was made for (:func:`~devil_dataset.core.content_hash.clip_content_hash`);
    ``hole``: that hole itself while in memory (a fast identity check, never stored).

    >>> fw = [np.full((4, 6, 2), 0.5, np.float32)]
    >>> hole = np.zeros((2, 4, 6), bool); hole[:, 1:3, 2:4] = True
    >>> state = GroundTruthFlow(fw, [-f for f in fw]).for_hole(hole)
    >>> [len(p[0]) for p in state.points], state.fits(hole), state.fits(~hole)
    ([9], True, False)
    """

    points: list[PairPoints]
    hole_sha: str
    hole: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, points: list[tuple[np.ndarray, np.ndarray] | None], fw: list, hole: np.ndarray) -> "HoleFlow":
        """The state of ``points`` (:func:`hole_points_for`) with the forward flows ``fw`` read there."""
        pairs: list[PairPoints] = [
            None if p is None else (p[0], p[1], np.asarray(fw[k][p[0], p[1]], dtype=np.float32))
            for k, p in enumerate(points)]
        return cls(pairs, clip_content_hash(hole), hole)

    def fits(self, hole: np.ndarray) -> bool:
        """Whether this state was made for ``hole``."""
        return self.hole is hole or self.hole_sha == clip_content_hash(hole)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """``counts`` (pixels per pair, -1 for None), ``ys``, ``xs`` (int32) and ``flow`` (float32 [N, 2]) of
        every pair end to end, and ``hole_sha`` (its ASCII bytes)."""
        some = [p for p in self.points if p is not None]
        return {
            "counts": np.array([-1 if p is None else len(p[0]) for p in self.points], np.int64),
            "ys": np.concatenate([p[0] for p in some]).astype(np.int32) if some else np.zeros(0, np.int32),
            "xs": np.concatenate([p[1] for p in some]).astype(np.int32) if some else np.zeros(0, np.int32),
            "flow": np.concatenate([p[2] for p in some]) if some else np.zeros((0, 2), np.float32),
            "hole_sha": np.frombuffer(self.hole_sha.encode(), np.uint8),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "HoleFlow":
        """The state of :meth:`to_arrays` (the same points and floats)."""
        points: list[PairPoints] = []
        at = 0
        for n in arrays["counts"].tolist():
            if n < 0:
                points.append(None)
                continue
            points.append((arrays["ys"][at: at + n].astype(np.intp), arrays["xs"][at: at + n].astype(np.intp),
                           arrays["flow"][at: at + n]))
            at += n
        return cls(points, arrays["hole_sha"].tobytes().decode())


def hole_warps_for(hole: np.ndarray, flow: GroundTruthFlow) -> list[np.ndarray]:
    """The hole of frame t warped back to t-1 by the GT flow, per pair (what :func:`hole_points_for` reads)."""
    return [warp_hole_backward(hole[t], flow.fw[t - 1]) for t in range(1, len(hole))]


def warp_hole_backward(hole: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """``warp_backward(hole.astype(float32), flow)`` of a bool [H, W] hole, computed near the hole only.

    A pixel p samples four neighbours within ``max|flow| + 1`` of p in each axis (clamping into the frame only
    brings them closer, as p is inside it), so outside the hole's bounding box grown by that much every neighbour
    is 0 and the result is exactly 0; inside, :func:`warp_backward` runs on that window (the same floats).

    >>> m = np.zeros((6, 8), bool); m[2:4, 3:5] = True
    >>> f = np.random.default_rng(0).uniform(-1.5, 1.5, (6, 8, 2)).astype(np.float32)
    >>> bool((warp_hole_backward(m, f) == warp_backward(m.astype(np.float32), f)).all())
    True
    """
    h, w = hole.shape
    out = np.zeros((h, w), np.float32)
    box = hole_window(hole)
    if box is None:
        return out
    reach = float(np.abs(flow).max(initial=0.0)) if flow.size else 0.0
    if not np.isfinite(reach):
        return warp_backward(hole.astype(np.float32), flow)
    grow = int(np.ceil(reach)) + 2
    rows, cols = box
    window = (slice(max(0, rows.start - grow), min(h, rows.stop + grow)),
              slice(max(0, cols.start - grow), min(w, cols.stop + grow)))
    out[window] = warp_backward(hole.astype(np.float32), flow, window)
    return out


def hole_points_for(hole: np.ndarray, flow: GroundTruthFlow,
                    hole_warps: list[np.ndarray] | None = None) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per pair (t-1, t) the pixels (ys, xs) of frame t-1 that enter the warp error's mean, in row-major order:
    not occluded, and a flow vector starts or ends in a hole (None: no such pixel, the pair is NaN).

    The occlusion mask is evaluated only in the bounding box of those "touched" pixels (:func:`occlusion_mask`
    with a window: the same values as the whole mask there)."""
    hole_warps = hole_warps if hole_warps is not None else hole_warps_for(hole, flow)
    points: list[tuple[np.ndarray, np.ndarray] | None] = []
    for k, t in enumerate(range(1, len(hole))):
        touched = (hole[t - 1].astype(np.float32) + hole_warps[k]) > 0
        window = hole_window(touched)
        if window is None:
            points.append(None)
            continue
        valid = touched[window] & ~occlusion_mask(flow.fw[k], flow.bw[k], window)
        if not valid.any():
            points.append(None)
            continue
        ys, xs = np.nonzero(valid)
        points.append((ys + window[0].start, xs + window[1].start))
    return points


def warp_error_shared(comp: np.ndarray, hole: np.ndarray, flow: GroundTruthFlow,
                      hole_warps: list[np.ndarray] | None = None,
                      points: list[tuple[np.ndarray, np.ndarray] | None] | None = None) -> float:
    """Warp error (mask) of one video from prepared GT flow; equals :func:`warp_error_pair` per pair bit for bit.

    ``hole_warps`` / ``points`` (:func:`hole_warps_for`, :func:`hole_points_for` of this ``hole``) skip the
    hole-dependent work when it was prepared.

    >>> rng = np.random.default_rng(0)
    >>> gt = rng.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8); hole = np.zeros((3, 32, 32), bool)
    >>> hole[:, 8:16, 8:16] = True
    >>> from devil_dataset.core.flow import dis_flow
    >>> comp = np.where(hole[..., None], 255 - gt, gt)
    >>> ref = [warp_error_pair(comp[t - 1], comp[t], hole[t - 1], hole[t], dis_flow(gt[t - 1], gt[t]),
    ...                        dis_flow(gt[t], gt[t - 1])) for t in (1, 2)]
    >>> flow = GroundTruthFlow([dis_flow(gt[t - 1], gt[t]) for t in (1, 2)],
    ...                        [dis_flow(gt[t], gt[t - 1]) for t in (1, 2)])
    >>> warp_error_shared(comp, hole, flow) == float(np.nanmean(ref))
    True
    """
    if points is None:
        points = hole_points_for(hole, flow, hole_warps)
    return warp_error_at(comp, HoleFlow.of(points, flow.fw, hole))


def warp_error_at(comp: np.ndarray, state: HoleFlow) -> float:
    """Warp error (mask) of the composite ``comp`` (uint8 [T, H, W, 3]) from a :class:`HoleFlow`: per pair the
    steps of :func:`warp_error_pair` at the pixels that enter the mean (same float32 operations per pixel, same
    order of the pixels), then the mean over the pairs that have any (NaN when none has)."""
    values = []
    for k, t in enumerate(range(1, len(comp))):
        pair = state.points[k]
        if pair is None:
            values.append(float("nan"))
            continue
        ys, xs, flow_at = pair
        warped = warp_backward_points(comp[t], flow_at, ys, xs)
        c0 = comp[t - 1][ys, xs].astype(np.float32) / 255.0
        diff = warped - c0
        values.append(float(np.mean(np.square(diff.astype(np.float64)))))
    arr = np.asarray(values, dtype=np.float64)
    return float(np.mean(arr[~np.isnan(arr)])) if (~np.isnan(arr)).any() else float("nan")


__all__ = [
    "GroundTruthFlow", "HoleFlow", "hole_points_for", "hole_warps_for", "occlusion_mask",
    "warp_backward", "warp_backward_at", "warp_backward_points", "warp_error_at", "warp_error_pair",
    "warp_error_shared", "warp_hole_backward",
]

"""Temporal baseline "flow-propagation": carry known pixels into the hole along OpenCV DIS optical flow.

1. Flow between consecutive frames (forward t -> t+1 and backward t -> t-1) is computed with DIS
   (:func:`devil_dataset.core.flow.dis_flow`) at half resolution, after the hole has been pre-filled smoothly.
2. The flow is *completed*: inside the hole of either frame (grown by a margin) it is unreliable, so it is
   replaced by a smooth interpolation of the flow around it (push-pull diffusion from the hole boundary).
3. Two passes follow each hole pixel along the completed flow, one towards later frames and one towards earlier
   frames, until it lands on a known pixel. Only the source position (frame, x, y) travels along the chain;
   colours are sampled once at the end, so long chains do not blur.
4. Each hole pixel takes its colour from the temporally nearest source (both directions averaged on a tie);
   pixels that no chain reaches (always hidden, or moved out of the frame) are filled per frame with Telea.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> frames = np.repeat((rng.random((1, 48, 64, 3)) * 255).astype(np.uint8), 4, axis=0)
    >>> hole = np.zeros((4, 48, 64), bool)
    >>> for t in range(4): hole[t, 10:30, 5 + 12 * t: 20 + 12 * t] = True
    >>> out = flow_propagation(frames, hole)
    >>> out.shape, bool((out[~hole] == frames[~hole]).all())
    ((4, 48, 64, 3), True)
"""
from __future__ import annotations

import cv2
import numpy as np

from ..core.flow import dis_flow
from ..core.hole_box import hole_window
from .spatial import blank_hole, check_inputs, inpaint_frame

# Flow is computed (and kept in memory) on frames resized by this factor (DIS MEDIUM: ~7 ms per 416x240 pair instead
# of ~35 ms at 832x480).
FLOW_SCALE = 0.5
# The flow inside the hole of either frame, grown by this many pixels (at flow scale), is replaced by completion.
FLOW_MARGIN = 5
# Frames are shrunk by FLOW_SCALE for flow only while both shrunk sides stay >= this many pixels (smaller frames
# keep their size). Chosen as OpenCV 5.0 DIS's crash limit (16 px) before dis_flow had its own guard; now only this
# baseline's choice (kept: its outputs stay the same), while devil_dataset.core.flow.DIS_MIN_SIDE pads for DIS.
MIN_SHRUNK_FLOW_SIDE = 16
# A landing point counts as known when its bilinear weight on known pixels is at least this.
KNOWN_WEIGHT = 0.999


def fill_from_boundary(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Smoothly fill the invalid pixels of a float map [H, W] or [H, W, C] from the valid ones (push-pull).

    Valid pixels keep their values exactly; the fill is a coarse-to-fine blend of normalised averages, close to
    membrane (Laplace) interpolation from the boundary. With no valid pixel the result is all zeros.

    >>> import numpy as np
    >>> v = np.zeros((4, 4), np.float32); v[:, 0] = 1; v[:, 3] = 3
    >>> ok = np.zeros((4, 4), bool); ok[:, [0, 3]] = True
    >>> out = fill_from_boundary(v, ok)
    >>> bool(1 < out[0, 1] < out[0, 2] < 3)
    True
    """
    values = np.asarray(values, np.float32)
    squeeze = values.ndim == 2
    if squeeze:
        values = values[..., None]
    weight = valid.astype(np.float32)
    invalid = np.asarray(valid) == 0
    if weight.all() or not weight.any():
        out = values * weight[..., None]
        return out[..., 0] if squeeze else out
    levels: list[tuple[np.ndarray, np.ndarray]] = [(values * weight[..., None], weight)]  # (premultiplied, weight)
    while min(levels[-1][1].shape) > 1:
        premult, wgt = levels[-1]
        size = ((wgt.shape[1] + 1) // 2, (wgt.shape[0] + 1) // 2)
        down_p = cv2.resize(premult, size, interpolation=cv2.INTER_AREA).reshape(size[1], size[0], -1)
        down_w = cv2.resize(wgt, size, interpolation=cv2.INTER_AREA)
        levels.append((down_p, down_w))
    premult, wgt = levels[-1]
    filled = premult / np.maximum(wgt, 1e-12)[..., None]
    box: tuple[slice, slice] = (slice(None), slice(None))
    for level, (premult, wgt) in reversed(list(enumerate(levels[:-1]))):
        up = cv2.resize(filled, (wgt.shape[1], wgt.shape[0]), interpolation=cv2.INTER_LINEAR)
        up = up.reshape(wgt.shape[0], wgt.shape[1], -1)
        # The full-size level is only read where invalid (valid pixels keep their values): blend its invalid box.
        if level == 0:
            box = hole_window(invalid) or box
        filled = _blend(premult[box], wgt[box], up[box])
    out = values.copy()
    np.copyto(out[box], filled, where=invalid[box][..., None])
    return out[..., 0] if squeeze else out


def _blend(premult: np.ndarray, wgt: np.ndarray, up: np.ndarray) -> np.ndarray:
    """One level of the push-pull fill: where the level has data its normalised average, blended by how much of
    the block was valid, with the coarser fill ``up``: premult / max(wgt, 1e-12) * alpha + up * (1 - alpha),
    alpha = clip(wgt, 0, 1) (float32, in that order of operations)."""
    alpha = np.clip(wgt, 0, 1)[..., None]
    blended = np.divide(premult, np.maximum(wgt, 1e-12)[..., None])
    blended *= alpha
    blended += np.multiply(up, np.subtract(1, alpha))
    return blended


def completed_flows(frames: np.ndarray, hole: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward flows [T-1, h, w, 2] (t -> t+1) and backward flows (t+1 -> t) at :data:`FLOW_SCALE` (h, w).

    Frames must already have their hole blanked. The holes are pre-filled smoothly, DIS flow is estimated, and the
    flow inside the grown union of the two frames' holes is replaced with :func:`fill_from_boundary`. Values are
    in small-frame pixels; :func:`upsample_flow` brings one to full resolution.
    """
    num_frames, h, w = hole.shape
    size = _flow_size(h, w)
    small_hole = np.stack([cv2.resize(m.astype(np.uint8), size, interpolation=cv2.INTER_AREA) > 0 for m in hole])
    small = []
    for f, m in zip(frames, small_hole):
        f = cv2.resize(f, size, interpolation=cv2.INTER_AREA).astype(np.float32)
        small.append(np.clip(fill_from_boundary(f, ~m) + 0.5, 0, 255).astype(np.uint8))
    kernel = np.ones((2 * FLOW_MARGIN + 1,) * 2, np.uint8)
    grown = [cv2.dilate(m.astype(np.uint8), kernel).astype(bool) for m in small_hole]
    forward = np.empty((max(num_frames - 1, 0), size[1], size[0], 2), np.float32)
    backward = np.empty_like(forward)
    for t in range(num_frames - 1):
        reliable = ~(grown[t] | grown[t + 1])
        forward[t] = fill_from_boundary(dis_flow(small[t], small[t + 1]), reliable)
        backward[t] = fill_from_boundary(dis_flow(small[t + 1], small[t]), reliable)
    return forward, backward


def _flow_size(h: int, w: int) -> tuple[int, int]:
    if min(h, w) * FLOW_SCALE < MIN_SHRUNK_FLOW_SIDE:  # too small to shrink
        return w, h
    return max(1, round(w * FLOW_SCALE)), max(1, round(h * FLOW_SCALE))


def upsample_flow(flow: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A small flow field [h, w, 2] resized to ``size`` (W, H), its vectors scaled by the size ratio."""
    ratio = np.array([size[0] / flow.shape[1], size[1] / flow.shape[0]], np.float32)
    return cv2.resize(flow, size, interpolation=cv2.INTER_LINEAR) * ratio


def _known_weight(known: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear sample of a float map [H, W] at points (x, y); 0 outside the frame.

    The map is read through a copy with a border of zeros, so a neighbour outside the frame adds ``weight * 0``
    (+0.0: the weights are >= 0), which leaves the float32 total as skipping it did."""
    h, w = known.shape
    padded = np.zeros((h + 2, w + 2), np.float32)
    padded[1:-1, 1:-1] = known
    flat = padded.reshape(-1)
    x0 = np.floor(x).astype(np.int64)
    y0 = np.floor(y).astype(np.int64)
    fx, fy = x - x0, y - y0
    total = np.zeros(x.shape, np.float32)
    for dy, dx, wt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
        yy, xx = np.clip(y0 + (dy + 1), 0, h + 1), np.clip(x0 + (dx + 1), 0, w + 1)
        total += wt * np.take(flat, yy * (w + 2) + xx)  # float64 sum rounded to float32, as before
    return total


def _sample(frames: np.ndarray, hole: np.ndarray, f: np.ndarray, x: np.ndarray, y: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Bilinear colours of ``frames[f]`` at (x, y) using known pixels only (normalised), and their total weight.

    ``frames`` [T, H, W, C], ``hole`` bool [T, H, W], both C-contiguous; point i is sampled in frame ``f[i]``. The
    arithmetic is per point, so sampling many frames at once gives the values of sampling each frame on its own.
    """
    h, w = hole.shape[1:]
    flat_frames, flat_hole = frames.reshape(-1, frames.shape[-1]), hole.reshape(-1)
    first = f.astype(np.int64) * (h * w)  # index of each point's frame's first pixel
    x0 = np.floor(x).astype(np.int64)
    y0 = np.floor(y).astype(np.int64)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    colour = np.zeros((len(x), frames.shape[-1]), np.float32)
    total = np.zeros((len(x), 1), np.float32)
    for dy, dx, wt in ((0, 0, (1 - fx) * (1 - fy)), (0, 1, fx * (1 - fy)), (1, 0, (1 - fx) * fy), (1, 1, fx * fy)):
        index = first + np.clip(y0 + dy, 0, h - 1) * w + np.clip(x0 + dx, 0, w - 1)
        known = (~np.take(flat_hole, index)).astype(np.float32)  # 1 on known pixels, 0 in the hole
        wk = wt * known[:, None]
        colour += wk * np.take(flat_frames, index, axis=0)
        total += wk
    return colour / np.maximum(total, 1e-12), total[:, 0]


def _flow_at(flow: np.ndarray, size: tuple[int, int], ys: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, ...]:
    """``upsample_flow(flow, size)`` at the pixels (ys, xs): its (dx, dy) there, the same float32 values."""
    ratio = np.array([size[0] / flow.shape[1], size[1] / flow.shape[0]], np.float32)
    full = cv2.resize(flow, size, interpolation=cv2.INTER_LINEAR)
    return full[ys, xs, 0] * ratio[0], full[ys, xs, 1] * ratio[1]


Sources = tuple[np.ndarray, np.ndarray, np.ndarray]  # per hole pixel of a frame: source frame (-1: none), x, y


def _propagate(hole: np.ndarray, flows: np.ndarray, order: range, step: int,
               points: list[tuple[np.ndarray, ...]]) -> list[Sources]:
    """One pass: for each frame, per hole pixel (``points[t]``, row-major) the source (frame, x, y), frame -1
    where none was reached.

    ``flows[i]`` (small, see :func:`completed_flows`) maps frame ``t`` to ``t + step``, with i = min(t, t + step);
    ``order`` visits frames so that ``t + step`` comes first. A frame's source map is itself (t, x, y) outside its
    hole, so only its hole pixels are kept, found through an index map (-1 outside the hole).
    """
    num_frames, h, w = hole.shape
    result: list[Sources] = [(np.zeros(0, np.int32),) * 3] * num_frames
    index_maps = np.full((2, h, w), -1, np.int32)  # this frame's and the previous one's, in turn
    prev: int | None = None  # frame t + step, whose sources are known
    for i, t in enumerate(order):
        ys, xs = points[t]
        sf = np.full(len(ys), -1, np.int32)
        sx = np.zeros(len(ys), np.float32)
        sy = np.zeros(len(ys), np.float32)
        n = t + step
        if prev is not None and len(ys):
            fx, fy = _flow_at(flows[min(t, n)], (w, h), ys, xs)
            qx, qy = xs + fx, ys + fy
            inside = (qx > -0.5) & (qx < w - 0.5) & (qy > -0.5) & (qy < h - 0.5)
            direct = inside & (_known_weight(~hole[n], qx, qy) >= KNOWN_WEIGHT)
            sf[direct], sx[direct], sy[direct] = n, qx[direct], qy[direct]
            # Otherwise continue along the neighbour's own chain (nearest pixel, plus the sub-pixel offset).
            chain = inside & ~direct
            rx = np.clip(np.rint(qx[chain]), 0, w - 1).astype(np.int64)
            ry = np.clip(np.rint(qy[chain]), 0, h - 1).astype(np.int64)
            pf, px, py = np.full(len(rx), n, np.int32), rx.astype(np.float32), ry.astype(np.float32)
            k = index_maps[(i - 1) % 2][ry, rx]
            at = k >= 0  # landed in the neighbour's hole: its source; elsewhere the pixel itself
            pf[at], px[at], py[at] = (v[k[at]] for v in result[n])
            sf[chain] = pf
            sx[chain] = px + (qx[chain] - rx)
            sy[chain] = py + (qy[chain] - ry)
        if prev is not None:
            index_maps[(i - 1) % 2][points[prev]] = -1  # reused for the next frame
        index_maps[i % 2][ys, xs] = np.arange(len(ys), dtype=np.int32)
        result[t] = (sf, sx, sy)
        prev = t
    return result


def flow_propagation(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Inpaint uint8 frames [T, H, W, 3] under the bool hole [T, H, W] (True = hole) along DIS flow.

    Known pixels are returned unchanged; hole pixels are never read.
    """
    check_inputs(frames, hole)
    frames = blank_hole(frames, hole)
    num_frames = len(frames)
    if num_frames == 0 or not hole.any():
        return frames
    forward, backward = completed_flows(frames, hole)
    hole = np.ascontiguousarray(hole)
    points = [np.nonzero(m) for m in hole]
    # "from_later": sources reached by following forward flow to later frames; "from_earlier" likewise backward.
    from_later = _propagate(hole, forward, range(num_frames - 1, -1, -1), +1, points)
    from_earlier = _propagate(hole, backward, range(num_frames), -1, points)
    out = frames.copy()
    for t in range(num_frames):
        ys, xs = points[t]
        if len(ys) == 0:
            continue
        colour = np.zeros((len(ys), 3), np.float32)
        weight = np.zeros(len(ys), np.float32)
        (lf, lx, ly), (ef, ex, ey) = from_later[t], from_earlier[t]
        dist_l = np.where(lf >= 0, np.abs(lf - t), np.iinfo(np.int32).max)
        dist_e = np.where(ef >= 0, np.abs(ef - t), np.iinfo(np.int32).max)
        for sf, sx, sy, use in (
            (lf, lx, ly, (lf >= 0) & (dist_l <= dist_e)), (ef, ex, ey, (ef >= 0) & (dist_e <= dist_l))
        ):
            pick = np.flatnonzero(use)  # each pixel once per direction: its source in that direction
            c, wt = _sample(frames, hole, sf[pick], sx[pick], sy[pick])
            good = wt > 0
            colour[pick[good]] += c[good]
            weight[pick[good]] += 1
        done = weight > 0
        values = np.clip(colour[done] / weight[done, None] + 0.5, 0, 255).astype(np.uint8)
        out[t, ys[done], xs[done]] = values
        remaining = np.zeros_like(hole[t])
        remaining[ys[~done], xs[~done]] = True
        if remaining.any():
            out[t] = inpaint_frame(out[t], remaining, "telea")
    return out

"""Temporal baseline "aligned-copy": fill the hole by copying from affinely aligned neighbour frames.

For every frame, the neighbours are visited nearest first in both directions (t-1, t+1, t-2, t+2, ...) up to
:data:`MAX_OFFSET` frames away. Each neighbour is warped onto the frame with a 4-DOF similarity (the builder's
alignment: features on background pixels only, RANSAC at 5 px, the release's alignment) and gives the hole pixels that
it knows (its own known pixels, inside its warped frame) and that no nearer neighbour gave. What no neighbour
covers is filled per frame with Telea (:mod:`.spatial`).

Speed: features are detected once per frame, on a copy at most 416 pixels wide, and matched only between consecutive
frames; the similarity between two distant frames is the product of the consecutive ones (matched on one BLAS thread:
the small products cost more CPU on several). Warps are limited to the bounding box of the pixels still missing, and a
neighbour's colours and known map are warped together, as one 4-channel image.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> frames = np.repeat((rng.random((1, 48, 64, 3)) * 255).astype(np.uint8), 4, axis=0)
    >>> hole = np.zeros((4, 48, 64), bool)
    >>> for t in range(4): hole[t, 10:30, 5 + 12 * t: 20 + 12 * t] = True
    >>> out = aligned_copy(frames, hole)
    >>> out.shape, bool((out[~hole] == frames[~hole]).all())
    ((4, 48, 64, 3), True)
"""
from __future__ import annotations

from typing import Iterator

import cv2
import numpy as np

from ..core.alignment import (
    Features,
    compose_affine,
    detect_features,
    estimate_similarity,
    invert_affine,
    single_threaded_blas,
    warp_frame,
)
from .spatial import blank_hole, check_inputs, inpaint_frame

# Farthest neighbour (in frames, each direction) that may give pixels; bounds the work per frame.
MAX_OFFSET = 20
# Features are detected on frames shrunk so that their longer side is at most this (SIFT at 832x480 costs ~0.25 s
# per frame, at 416x240 ~0.04 s); positions are scaled back to full resolution. Smaller frames are used as they are.
FEATURE_MAX_SIDE = 416
# Detector for the alignment: SIFT is in every OpenCV wheel, so results do not depend on the build (SURF does).
DETECTOR = "sift"
# At most this many features per frame are matched (brute-force matching cost grows with the square).
MAX_FEATURES = 800
# Hole pixels are grown by this many pixels (at feature scale) before detection, so no descriptor sees the hole.
FEATURE_MARGIN = 4
# Known maps are uint8 (255 = known); a warped neighbour pixel counts as known when all its bilinear weight is.
KNOWN = 255


def frame_features(frame: np.ndarray, hole: np.ndarray, detector: str = DETECTOR) -> Features:
    """Features of one frame from its known pixels only, detected at most :data:`FEATURE_MAX_SIDE` wide/high,
    in full-resolution coordinates."""
    h, w = hole.shape
    factor = min(1.0, FEATURE_MAX_SIDE / max(h, w))
    size = (max(1, round(w * factor)), max(1, round(h * factor)))
    small = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
    small_hole = cv2.resize(hole.astype(np.uint8), size, interpolation=cv2.INTER_AREA) > 0
    kernel = np.ones((2 * FEATURE_MARGIN + 1,) * 2, np.uint8)
    known = ~cv2.dilate(small_hole.astype(np.uint8), kernel).astype(bool)
    feats = detect_features(small, detector, mask=known)
    if feats.descriptors is not None and len(feats) > MAX_FEATURES:  # an even, deterministic subset: cheap matching
        keep = np.linspace(0, len(feats) - 1, MAX_FEATURES).round().astype(int)
        feats = Features(feats.points[keep], feats.descriptors[keep], feats.detector)
    scale = np.array([w / size[0], h / size[1]], np.float32)
    # Pixel centres: x_full + 0.5 = (x_small + 0.5) * scale.
    points = (feats.points + 0.5) * scale - 0.5
    return Features(points.astype(np.float32), feats.descriptors, feats.detector)


def chained_alignments(features: list[Features]) -> np.ndarray:
    """Per frame t a 3x3 matrix P_t mapping frame t's pixel coordinates into frame 0's.

    P_t = P_{t-1} @ A_t where A_t aligns frame t onto frame t-1; a failed alignment counts as no motion.
    Frame s is aligned onto frame t by ``inv(P_t) @ P_s``.
    """
    to_first = np.tile(np.eye(3), (len(features), 1, 1))
    for t in range(1, len(features)):
        step = np.eye(3)
        matrix = estimate_similarity(features[t], features[t - 1])
        if matrix is not None and np.isfinite(matrix).all():
            step[:2] = matrix
        to_first[t] = compose_affine(to_first[t - 1], step)  # fixed-order sums: the same on every CPU
    return to_first


def neighbour_order(t: int, num_frames: int, max_offset: int = MAX_OFFSET) -> list[int]:
    """Neighbours of frame ``t`` nearest first, the earlier one first at equal distance.

    >>> neighbour_order(1, 5, 3)
    [0, 2, 3, 4]
    """
    order = []
    for d in range(1, max_offset + 1):
        order += [s for s in (t - d, t + d) if 0 <= s < num_frames]
    return order


def aligned_copy(
    frames: np.ndarray, hole: np.ndarray, *, max_offset: int = MAX_OFFSET, detector: str = DETECTOR
) -> np.ndarray:
    """Inpaint uint8 frames [T, H, W, 3] under the bool hole [T, H, W] (True = hole) from aligned neighbours.

    Known pixels are returned unchanged; hole pixels are never read.
    """
    check_inputs(frames, hole)
    frames = blank_hole(frames, hole)
    num_frames, h, w = hole.shape
    if num_frames == 0 or not hole.any():
        return frames
    with single_threaded_blas():  # the matcher's small products: threads cost more CPU than they save
        to_first = chained_alignments([frame_features(f, m, detector) for f, m in zip(frames, hole)])
    from_first = invert_affine(to_first)  # closed form: LAPACK's result depends on the CPU's BLAS kernel
    # Colours and known map (255 = known) of each frame in one 4-channel image: a single warp gives both (bilinear
    # interpolation is computed per channel with the same coordinates and weights, so each channel's values are
    # those of warping it alone; checked on the sample's clips).
    sources = np.empty((num_frames, h, w, 4), np.uint8)
    sources[..., :3] = frames
    np.multiply(~hole, np.uint8(KNOWN), out=sources[..., 3], casting="unsafe")
    out = frames.copy()
    for t in range(num_frames):
        remaining = hole[t].copy()
        neighbours = ((sources[s], to_first[s]) for s in neighbour_order(t, num_frames, max_offset))
        _copy_from_neighbours(out[t], remaining, neighbours, from_first[t])
        if remaining.any():
            out[t] = inpaint_frame(out[t], remaining, "telea")
    return out


def _copy_from_neighbours(out: np.ndarray, remaining: np.ndarray, neighbours: Iterator[tuple[np.ndarray, np.ndarray]],
                          from_first: np.ndarray) -> None:
    """Fill one frame ``out`` [H, W, 3] where ``remaining`` (bool [H, W], updated in place) from each neighbour in
    turn, nearest first: (colours and known map [H, W, 4], its matrix to frame 0's coordinates) of
    ``neighbours``; ``from_first``: frame 0's coordinates to this frame's. A neighbour gives the pixels it knows
    that no nearer one gave; stops when nothing remains.

    Warps are limited to the bounding box of the pixels still missing."""
    x0, y0, bw, bh = cv2.boundingRect(remaining.view(np.uint8))
    for source, to_first in neighbours:
        if bw == 0:
            break
        shift = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64)
        matrix = compose_affine(compose_affine(shift, from_first), to_first)[:2]
        warped = warp_frame(source, matrix, (bw, bh))
        # The known map is warped with border 0, so this also requires landing inside the neighbour's frame
        # (what core.alignment.warp_valid_mask gives for full frames; it cannot take a sub-window).
        missing = remaining[y0 : y0 + bh, x0 : x0 + bw]
        gives = warped[..., 3] == KNOWN
        gives &= missing
        ys, xs = np.nonzero(gives)
        if len(ys):
            out[ys + y0, xs + x0] = warped[ys, xs, :3]
            missing[ys, xs] = False
            # the pixels still missing lie in this box: their bounding box is found there
            bx, by, bw, bh = cv2.boundingRect(np.ascontiguousarray(missing).view(np.uint8))
            x0, y0 = x0 + bx, y0 + by

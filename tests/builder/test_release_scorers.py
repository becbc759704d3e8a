"""Camera-motion and scene-motion scores equal the release's algorithm to 1e-12.

The ``release_*`` functions below are straightforward re-statements of the release's scorers, written without the
package's alignment/scorer code: per ordered pair OpenCV's cross-checked brute-force matcher (query = target,
train = input), ``estimateAffinePartial2D`` (RANSAC, 5 px, refinement solved exactly: :func:`ransac_similarity`),
and an all-ones **float64** mask (the release's ``np.float``) warped bilinearly with border 0, valid where >= 1.
Features come from the same OpenCV detector (SIFT/ORB: pip OpenCV has no SURF), deterministic per frame on one
OpenCV thread (``serial_opencv``: pinned SIFT races across threads).
"""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from devil_dataset.builder import camera_motion as cm
from devil_dataset.builder import scene_motion as sm
from devil_dataset.builder.samples import render_scene, scene
from devil_dataset.core.cv_determinism import serial_opencv
from devil_dataset.core.flow import dis_flow

SIZE = (256, 144)
CLIPS = {"still": "still_static", "pan": "pan_static", "zoom": "zoom_static", "shaky": "handheld_static"}


def _detect(frame, detector):
    # ORB is our stand-in detector (not the release's); the package keeps 2000 ORB features
    det = cv2.SIFT_create() if detector == "sift" else cv2.ORB_create(nfeatures=2000)
    with serial_opencv():
        kps, desc = det.detectAndCompute(frame, None)
    return np.array([k.pt for k in kps], np.float32).reshape(-1, 2), desc


def release_align(source, target, detector):
    """Matrix mapping frame ``source`` onto ``target``, or None (the release's alignment)."""
    (sp, sd), (tp, td) = _detect(source, detector), _detect(target, detector)
    if sd is None or td is None or len(sp) == 0 or len(tp) == 0:
        return None
    norm = cv2.NORM_HAMMING if detector == "orb" else cv2.NORM_L2
    matches = cv2.BFMatcher(norm, crossCheck=True).match(td, sd)
    if len(matches) < 2:
        return None
    src = sp[[m.trainIdx for m in matches]]
    dst = tp[[m.queryIdx for m in matches]]
    return ransac_similarity(src, dst)


def ransac_similarity(src, dst):
    """``estimateAffinePartial2D`` (RANSAC, 5 px), its final refinement solved to convergence.

    OpenCV refines the RANSAC model on the inliers with Levenberg-Marquardt on its bundled OpenBLAS (CPU-dependent
    kernels), stopping at a FLT_EPSILON-relative step; the package solves that least-squares problem (linear in
    a, b, tx, ty) exactly instead. Restated here with numpy's ``lstsq`` on the inliers of OpenCV's RANSAC.
    """
    matrix, inliers = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=5.0,
                                                  refineIters=0)
    if matrix is None:
        return None
    p = src[inliers.ravel() != 0].astype(np.float64)
    q = dst[inliers.ravel() != 0].astype(np.float64)
    one, zero = np.ones(len(p)), np.zeros(len(p))
    design = np.concatenate([np.stack([p[:, 0], -p[:, 1], one, zero], 1), np.stack([p[:, 1], p[:, 0], zero, one], 1)])
    (a, b, tx, ty), *_ = np.linalg.lstsq(design, np.concatenate([q[:, 0], q[:, 1]]), rcond=None)
    return np.array([[a, -b, tx], [b, a, ty]])


def release_valid(matrix, w, h):
    ones = np.ones((h, w), dtype=np.float64)  # the release's np.float
    return cv2.warpAffine(ones, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                          borderValue=0) >= 1


def release_camera_motion(frames, detector):
    n = len(frames)
    spacing = (n - 1) // 9
    idx = [k * spacing for k in range(10)]
    h, w = frames.shape[1:3]
    scores = np.zeros((10, 10))
    for a in range(10):
        for b in range(10):
            if a != b:
                m = release_align(frames[idx[a]], frames[idx[b]], detector)
                scores[a, b] = math.inf if m is None else 1.0 - release_valid(m, w, h).mean()
    return float(np.percentile(scores, 96, method="higher")), scores


def release_scene_motion(frames, detector, threshold=375.0, min_frames=12):
    h, w = frames.shape[1:3]

    def affine_score(i, k):
        m = release_align(frames[i], frames[k], detector)
        if m is None:
            return math.inf
        valid = release_valid(m, w, h)
        if not valid.any():
            return math.inf
        warped = cv2.warpAffine(frames[i], m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                                borderValue=0)
        diff = (frames[k] - warped).astype(np.float64)  # uint8 subtraction wraps (the release's scorer)
        return float(diff.sum(axis=2)[valid].mean())

    segments, start = [], 0
    for k in range(1, len(frames)):
        if affine_score(start, k) < threshold:
            continue
        if k - start >= min_frames:
            segments.append((start, k))
        start = k
    if len(frames) - start >= min_frames:
        segments.append((start, len(frames)))
    if not segments:
        return math.nan
    seg_scores, weights = [], []
    for s, e in segments:
        total, count = 0.0, 0
        for k in range(s, e - 1):
            m = release_align(frames[k], frames[k + 1], detector)
            if m is None:
                continue
            aligned = cv2.warpAffine(frames[k], m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                                     borderValue=0)
            flow = dis_flow(aligned, frames[k + 1])
            start_ok = release_valid(m, w, h)
            xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
            end_mask = cv2.remap(np.ones((h, w), np.float64), xs + flow[..., 0], ys + flow[..., 1], cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_CONSTANT, borderValue=0)
            keep = start_ok & (end_mask >= 0.999)
            mag = np.sqrt((flow.astype(np.float64) ** 2).sum(axis=2))
            total += float(mag[keep].sum())
            count += int(keep.sum())
        seg_scores.append(total / count if count else math.nan)
        weights.append(e - s)
    return float(np.average(seg_scores, weights=weights))


@pytest.fixture(scope="module")
def clips():
    return {k: render_scene(scene(v), size=SIZE, num_frames=45, seed=0) for k, v in CLIPS.items()}


@pytest.mark.parametrize("kind", list(CLIPS))
def test_camera_motion_equals_release_algorithm(clips, kind):
    expected, matrix = release_camera_motion(clips[kind], "sift")
    got = cm.camera_motion(clips[kind], detector="sift", scoring_size=None)
    assert np.allclose(got.matrix, matrix, rtol=0, atol=1e-12)
    assert abs(got.score - expected) <= 1e-12
    if kind == "still":
        assert expected == 0.0  # the float64 warp: sub-pixel residuals do not eat the border
    else:
        assert expected > 0.05


@pytest.mark.parametrize("kind", ["still", "pan"])
def test_camera_motion_orb_equals_release_algorithm(clips, kind):
    expected, _ = release_camera_motion(clips[kind], "orb")
    assert abs(cm.camera_motion_score(clips[kind], detector="orb", scoring_size=None) - expected) <= 1e-12


@pytest.fixture(scope="module")
def short_clips():
    return {k: render_scene(scene(v), size=(192, 112), num_frames=14, seed=0)
            for k, v in {"still": "still_water", "pan": "pan_static", "shaky": "jitter_water"}.items()}


@pytest.mark.parametrize("kind", ["still", "pan", "shaky"])
def test_scene_motion_equals_release_algorithm(short_clips, kind):
    frames = short_clips[kind]
    expected = release_scene_motion(frames, "sift")
    got = sm.scene_motion(frames, mode="release", detector="sift", scoring_size=None)
    if math.isnan(expected):
        assert math.isnan(got.score)
    else:
        assert abs(got.score - expected) <= 1e-12 * max(1.0, abs(expected))
    if kind != "pan":
        assert not math.isnan(expected)  # a real segment was scored

"""Camera-motion score (the release's scorer)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from devil_dataset.builder import camera_motion as cm
from devil_dataset.builder.samples import render_scene, scene
from devil_dataset.core.alignment import detect_features, warp_valid_mask

SMALL = (320, 180)


@pytest.fixture(scope="module")
def cm_still_clip():
    return render_scene(scene("still_water"), size=SMALL, num_frames=45, seed=0)


@pytest.fixture(scope="module")
def cm_pan_clip():
    return render_scene(scene("pan_static"), size=SMALL, num_frames=45, seed=0)


def test_sample_indices():
    assert cm.sample_indices(45) == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36]
    assert cm.sample_indices(90) == [0, 9, 18, 27, 36, 45, 54, 63, 72, 81]
    assert cm.sample_indices(10) == list(range(10))
    assert cm.sample_indices(18) == list(range(10))  # spacing floor(17 / 9) = 1
    with pytest.raises(ValueError, match="at least 10 frames"):
        cm.sample_indices(9)


def test_percentile_higher_matches_numpy_and_inf_rule():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.random(100)
        assert cm.percentile_higher(v) == np.percentile(v, 96, method="higher")
    v = np.zeros(100)
    v[:3] = np.inf
    v[3:10] = 0.5
    assert cm.percentile_higher(v) == 0.5 == np.percentile(v, 96, method="higher")  # 3 failed pairs: finite
    v[3] = np.inf
    assert cm.percentile_higher(v) == np.inf  # 4 failed pairs: +inf
    # "higher", not interpolation: entry at sorted index ceil(0.96 * 99) = 96
    v = np.arange(100.0) / 100
    assert cm.percentile_higher(v) == 0.96


def test_still_scene_scores_near_zero(cm_still_clip):
    r = cm.camera_motion(cm_still_clip, detector="sift", scoring_size=None)
    # a sub-pixel RANSAC residual invalidates the outer pixel row/column: 1/180 + 1/320 = 0.009 per border pixel
    assert r.score < 0.03
    assert r.detector == "sift" and r.matrix.shape == (10, 10) and r.indices == tuple(cm.sample_indices(45))
    assert np.all(np.diag(r.matrix) == 0)


def test_pan_scores_high(cm_pan_clip):
    # pan = 0.45 frame widths over 90 frames; frames 0 and 36 of 45 are 0.45 * 36 / 44 = 0.37 widths apart
    score = cm.camera_motion_score(cm_pan_clip, detector="sift", scoring_size=None)
    assert 0.3 < score < 0.45


def test_featureless_frames_score_inf():
    flat = np.full((12, 64, 96, 3), 90, np.uint8)
    assert cm.camera_motion_score(flat, detector="sift", scoring_size=None) == np.inf


def test_same_scores_as_release_per_pair_loop(cm_pan_clip):
    """The fast path (each unordered pair matched once) equals the release's loop over ordered pairs.

    Detection is deterministic, so the reference reuses each frame's features (benchmarks/camera_motion.py runs the
    loop that re-detects them for every pair); matching and RANSAC run per ordered pair with OpenCV's matcher.
    """
    frames = cm_pan_clip
    idx = cm.sample_indices(len(frames))
    size = (frames.shape[2], frames.shape[1])
    for detector in ("sift", "orb"):
        feats = [detect_features(frames[i], detector) for i in idx]
        assert all(np.array_equal(detect_features(frames[idx[0]], detector).descriptors, feats[0].descriptors)
                   for _ in range(2))
        expected = np.zeros((10, 10))
        for a in range(10):
            for b in range(10):
                if a == b:
                    continue
                s, t = feats[a], feats[b]
                norm = cv2.NORM_HAMMING if detector == "orb" else cv2.NORM_L2
                ms = cv2.BFMatcher(norm, crossCheck=True).match(t.descriptors, s.descriptors)
                src = s.points[[m.trainIdx for m in ms]]
                dst = t.points[[m.queryIdx for m in ms]]
                m, _ = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=5.0)
                expected[a, b] = np.inf if m is None else 1.0 - warp_valid_mask(m, size).mean()
        got = cm.camera_motion(frames, detector=detector, scoring_size=None)
        assert np.array_equal(got.matrix, expected)
        assert got.score == np.percentile(expected, 96, method="higher")


def test_resize_for_scoring():
    frames = np.zeros((2, 480, 854, 3), np.uint8)
    assert cm.resize_for_scoring(frames) is frames  # already at the scoring size: untouched
    rng = np.random.default_rng(0)
    big = (rng.random((1, 960, 1708, 3)) * 255).astype(np.uint8)
    out = cm.resize_for_scoring(big)
    assert out.shape == (1, 480, 854, 3)
    # area interpolation of an exact 2x downscale = mean of 2x2 blocks (rounded)
    block = big[0, :2, :2].astype(np.float64).mean(axis=(0, 1))
    assert np.abs(out[0, 0, 0].astype(np.float64) - block).max() <= 1.0
    with pytest.raises(ValueError, match="uint8 RGB"):
        cm.resize_for_scoring(np.zeros((2, 10, 10), np.uint8))


def test_deterministic():
    clip = render_scene(scene("handheld_water"), size=(160, 96), num_frames=12, seed=3)
    a = cm.camera_motion(clip, detector="orb", scoring_size=None)
    b = cm.camera_motion(clip, detector="orb", scoring_size=None)
    assert a.score == b.score and np.array_equal(a.matrix, b.matrix)


def test_scene_scorer_takes_the_camera_scorers_features(cm_pan_clip, monkeypatch):
    """The camera scorer hands its features to the scene scorer as an argument: every frame is detected
    once, and the scores are those of the two scorers alone."""
    from devil_dataset.builder import clip_features as cf
    from devil_dataset.builder import scene_motion as sm
    from devil_dataset.builder.motion_scores import motion_scores

    alone = (cm.camera_motion_score(cm_pan_clip, detector="sift", scoring_size=None),
             sm.scene_motion_score(cm_pan_clip, detector="sift", scoring_size=None))
    calls = []
    detect = cf.detect_features
    monkeypatch.setattr(cf, "detect_features", lambda f, d: calls.append(1) or detect(f, d))
    camera, scene = motion_scores(cm_pan_clip, detector="sift", scoring_size=None)
    np.testing.assert_array_equal((camera.score, scene.score), alone)  # the same floats (NaN where alone is NaN)
    assert len(calls) == len(cm_pan_clip)  # 10 sampled frames + the 35 others, each once
    assert camera.features is not None and camera.features.detections == len(cm_pan_clip)
    assert not hasattr(cm, "_feature_memo")  # nothing kept between clips
    with pytest.raises(ValueError, match="do not fit"):
        sm.scene_motion(cm_pan_clip, detector="orb", scoring_size=None, features=camera.features)


def test_scores_do_not_depend_on_the_thread_count(cm_pan_clip):
    """Frames and pairs spread over threads in a fixed order: one thread and three give the same matrices, scores
    and segments."""
    from devil_dataset.builder import scene_motion as sm

    one = cm.camera_motion(cm_pan_clip, detector="sift", scoring_size=None, threads=1)
    three = cm.camera_motion(cm_pan_clip, detector="sift", scoring_size=None, threads=3)
    assert one.score == three.score and np.array_equal(one.matrix, three.matrix)
    a = sm.scene_motion(cm_pan_clip, detector="sift", scoring_size=None, threads=1)
    b = sm.scene_motion(cm_pan_clip, detector="sift", scoring_size=None, threads=3)
    assert (a.segments, a.segment_scores) == (b.segments, b.segment_scores)
    np.testing.assert_array_equal(a.score, b.score)


def test_identical_frames_are_described_once():
    """A still shot whose frames have the same bytes: one detection, one match, the scores of a fresh scorer."""
    from devil_dataset.builder.clip_features import ClipFeatures

    rng = np.random.default_rng(5)
    frames = np.repeat((rng.random((1, 96, 128, 3)) * 255).astype(np.uint8), 12, axis=0)
    frames[6] = frames[6] // 2  # one other frame
    features = ClipFeatures(frames, "orb", threads=2)
    sims = features.similarities([(0, 1), (1, 0), (0, 6), (6, 0), (2, 11)])
    assert features.detections == 2 and len(features._matches) == 2  # (0, 0) and (0, 6)
    np.testing.assert_allclose(sims[0], [[1, 0, 0], [0, 1, 0]], atol=1e-9)
    assert cm.camera_motion(frames, detector="orb", scoring_size=None).score == \
        cm.camera_motion(frames.copy(), detector="orb", scoring_size=None, threads=1).score

"""Background-scene-motion score (the release's scorer): AffineScore parity, segments, flow validity, clip score."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.builder import scene_motion as sm
from devil_dataset.builder.samples import render_scene, scene


def test_affine_score_wraps_in_release_mode_only():
    target = np.array([[[10, 200, 0], [50, 50, 50]]], np.uint8)
    warped = np.array([[[11, 190, 255], [50, 49, 51]]], np.uint8)
    valid = np.ones((1, 2), bool)
    # release: uint8 subtraction wraps: 10-11 -> 255, 200-190 -> 10, 0-255 -> 1 ; 0, 1, 50-51 -> 255
    assert sm.affine_score(target, warped, valid, "release") == ((255 + 10 + 1) + (0 + 1 + 255)) / 2
    # corrected: |difference|: 1 + 10 + 255 ; 0 + 1 + 1
    assert sm.affine_score(target, warped, valid, "corrected") == ((1 + 10 + 255) + (0 + 1 + 1)) / 2
    # a brighter target never wraps: both modes agree
    assert sm.affine_score(warped.clip(0, 200), warped.clip(0, 200) // 2, valid, "release") == \
        sm.affine_score(warped.clip(0, 200), warped.clip(0, 200) // 2, valid, "corrected")


def test_affine_score_only_counts_valid_pixels_and_inf_without_overlap():
    t = np.zeros((2, 2, 3), np.uint8)
    w = np.zeros((2, 2, 3), np.uint8)
    w[0, 0] = 9  # only on an invalid pixel
    valid = np.array([[False, True], [True, True]])
    assert sm.affine_score(t, w, valid, "corrected") == 0.0
    assert sm.affine_score(t, w, np.zeros((2, 2), bool), "release") == math.inf
    assert sm.pair_affine_score(t, t, None) == math.inf
    with pytest.raises(ValueError, match="unknown mode"):
        sm.affine_score(t, w, valid, "fixed")


@pytest.mark.parametrize("mode", ["release", "corrected"])
def test_affine_score_equals_the_plain_numpy_mean(mode):
    # the OpenCV integer sums against the definition: float64 mean over valid pixels of the L1 over RGB
    rng = np.random.default_rng(7)
    for h, w in [(48, 64), (37, 53)]:
        t = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        wp = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        valid = rng.random((h, w)) > 0.3
        diff = (t - wp) if mode == "release" else np.abs(t.astype(np.int64) - wp.astype(np.int64))
        expected = float(np.mean(diff.astype(np.int64).sum(axis=2)[valid]))
        assert sm.affine_score(t, wp, valid, mode) == expected
        strided = np.asfortranarray(valid)  # a non-contiguous mask gives the same value
        assert sm.affine_score(t[:, ::1], wp, strided, mode) == expected


def test_pair_flow_stats_magnitude_is_the_euclidean_norm_summed_in_order():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)
    flow = (rng.standard_normal((40, 56, 2)) * 2).astype(np.float32)
    identity = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    total, count = sm.pair_flow_stats(a, a, identity, lambda x, y: flow)
    keep = sm.valid_flow_vectors(flow, np.ones((40, 56), bool))
    magnitude = np.sqrt((flow.astype(np.float64) ** 2).sum(axis=2))  # the release's form
    assert (total, count) == (float(magnitude[keep].sum()), int(keep.sum()))


def test_split_segments_walk():
    # scores: frames drift away from the segment start; a jump at k = 20 and at k = 26
    def score(i, k):
        return 0.0 if (k < 20 and i == 0) or (20 <= k < 26 and i == 20) or (k >= 26 and i == 26) else 999.0

    assert sm.split_segments(45, score, 375) == [(0, 20), (26, 45)]  # 20..25 has 6 frames < 12: dropped
    assert sm.split_segments(11, lambda i, k: 0.0, 375) == []  # 11 frames < 12
    assert sm.split_segments(12, lambda i, k: 0.0, 375) == [(0, 12)]
    assert sm.split_segments(30, lambda i, k: 375.0, 375) == []  # not below the threshold: every frame alone


def test_walk_window_counts_only_pairs_still_to_match():
    """The walk's look-ahead holds ``to_match`` pairs that still need matching: pairs the camera scorer aligned are
    taken along for free, the clip's end and ``4 x to_match`` pairs bound it."""
    from devil_dataset.builder.clip_features import ClipFeatures

    rng = np.random.default_rng(3)
    frames = (rng.random((14, 48, 64, 3)) * 255).astype(np.uint8)
    features = ClipFeatures(frames, "orb", threads=1)
    features.similarities([(0, 3), (0, 4)])  # as the camera scorer aligns (0, 3k)
    assert features.has_similarity(0, 3) and not features.has_similarity(3, 0)
    assert sm.walk_window(features, 0, 1, 3) == [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]
    assert sm.walk_window(features, 0, 12, 3) == [(0, 12), (0, 13)]  # the clip ends
    still = ClipFeatures(np.repeat(frames[:1], 14, axis=0), "orb", threads=1)
    still.similarities([(0, 1)])  # identical frames: every pair is this one
    assert sm.walk_window(still, 0, 1, 2) == [(0, m) for m in range(1, 9)]  # at most 4 x 2 pairs


def test_the_walk_starts_with_every_frame_described(monkeypatch):
    """Called alone (as ``devil diagnose`` calls it after the camera scorer), the scene scorer describes every frame in
    one map before the walk (measured: idle core time of 4 x 70 frames 6.4-7.8 -> 2.5-3.1 s), not a few per window;
    the score is that of a fresh scorer."""
    from devil_dataset.builder.camera_motion import camera_motion

    rng = np.random.default_rng(8)
    frames = (rng.random((14, 48, 64, 3)) * 255).astype(np.uint8)
    camera = camera_motion(frames, detector="orb", scoring_size=None, threads=2)
    assert camera.features.detections == 10  # the sampled frames only
    seen = []
    walk = sm.split_segments
    monkeypatch.setattr(sm, "split_segments",
                        lambda *a, **k: seen.append(camera.features.detections) or walk(*a, **k))
    shared = sm.scene_motion(frames, detector="orb", scoring_size=None, features=camera.features)
    assert seen == [14]
    fresh = sm.scene_motion(frames, detector="orb", scoring_size=None, threads=1)
    assert (shared.segments, repr(shared.score)) == (fresh.segments, repr(fresh.score))


def test_one_pairs_similarity_in_a_task_equals_the_batch_and_matches_once(monkeypatch):
    """``ClipFeatures.similarity`` (a pair's alignment inside the task that uses it) gives the similarities of the
    batch call, and the reversed pair reuses the unordered pair's matches instead of matching again."""
    import devil_dataset.builder.clip_features as cf

    rng = np.random.default_rng(4)
    import cv2

    base = cv2.GaussianBlur((rng.random((120, 160, 3)) * 255).astype(np.uint8), (0, 0), 1.5)
    frames = np.stack([np.roll(base, (k, 2 * k), axis=(0, 1)) for k in range(4)])
    batch = cf.ClipFeatures(frames, "sift", threads=1)
    want = batch.similarities([(0, 2), (2, 0), (1, 3)])
    assert want[0] is not None and want[1] is not None
    calls = []
    real = cf.match_features
    monkeypatch.setattr(cf, "match_features", lambda a, b: calls.append(1) or real(a, b))
    one = cf.ClipFeatures(frames, "sift", threads=1)
    one.detect(range(4))
    got = [one.similarity(0, 2), one.similarity(2, 0), one.similarity(1, 3)]
    for g, w in zip(got, want):
        assert (g is None and w is None) or np.array_equal(g, w)
    assert len(calls) == 2 and one.has_similarity(2, 0)


def test_valid_flow_vectors_drop_invalid_starts_and_outside_ends():
    flow = np.zeros((6, 8, 2), np.float32)
    flow[2, 2] = (-5.0, 0.0)  # ends outside the frame
    flow[3, 3] = (0.4, 0.0)  # ends inside
    start = np.ones((6, 8), bool)
    start[0, 0] = False
    keep = sm.valid_flow_vectors(flow, start)
    assert not keep[2, 2] and not keep[0, 0] and keep[3, 3]
    assert keep.sum() == 6 * 8 - 2
    # a target mask < 0.999 at the end point drops the vector
    tmask = np.ones((6, 8), np.float32)
    tmask[3, 4] = 0.0
    keep = sm.valid_flow_vectors(flow, start, tmask)
    assert not keep[3, 3] and not keep[3, 4]


@pytest.fixture(scope="module")
def sm_clips():
    size = (256, 144)
    return {name: render_scene(scene(name), size=size, num_frames=14, seed=0)
            for name in ("still_static", "still_water", "pan_static")}


@pytest.mark.parametrize("mode", ["release", "corrected"])
def test_water_scores_above_static(sm_clips, mode):
    still = sm.scene_motion(sm_clips["still_static"], mode=mode, detector="sift", scoring_size=None)
    water = sm.scene_motion(sm_clips["still_water"], mode=mode, detector="sift", scoring_size=None)
    assert still.segments == ((0, 14),) and water.segments == ((0, 14),)
    assert still.score < 0.05
    assert water.score > 5 * max(still.score, 0.05)
    assert water.mode == mode and water.flow == "dis" and water.detector == "sift"


def test_release_mode_splits_on_wrap_around_where_corrected_mode_does_not(sm_clips):
    """A scene that darkens by one level per frame: every target pixel is 1 below the aligned source, which the
    release's uint8 subtraction turns into 255 per channel (765 >= 375: a new segment at every frame), while the
    true difference is 3 per frame (one segment)."""
    base = sm_clips["still_static"][0].clip(20, 235)
    frames = np.stack([base - k for k in range(14)]).astype(np.uint8)
    release = sm.scene_motion(frames, mode="release", detector="sift", scoring_size=None)
    corrected = sm.scene_motion(frames, mode="corrected", detector="sift", scoring_size=None)
    assert release.segments == () and math.isnan(release.score)
    assert corrected.segments == ((0, 14),) and corrected.score < 0.05
    # the threshold argument overrides the mode's own
    assert sm.scene_motion(frames, mode="corrected", detector="sift", scoring_size=None, threshold=3.0).segments == ()


def test_no_segment_gives_nan_and_flow_choice_is_checked():
    frames = np.zeros((8, 32, 32, 3), np.uint8)
    assert math.isnan(sm.scene_motion_score(frames, detector="orb", scoring_size=None))
    with pytest.raises(ValueError, match="unknown flow"):
        sm.scene_motion_score(frames, flow="farneback")
    from devil_dataset.core.errors import WeightsMissingError
    from devil_dataset.core.flow import resolve_flow_backend

    if resolve_flow_backend("auto") != "raft":
        with pytest.raises(WeightsMissingError, match="RAFT weights"):
            sm.scene_motion_score(frames, flow="raft")


def test_dis_flow_does_not_depend_on_opencvs_thread_count():
    """The build runs the scene scorer's DIS pairs on its own threads with OpenCV on one thread each
    (core/cv_determinism.serial_opencv): the flow must be the one OpenCV's thread pool gives."""
    import cv2

    from devil_dataset.core.cv_determinism import serial_opencv
    from devil_dataset.core.flow import dis_flow

    rng = np.random.default_rng(7)
    base = cv2.resize((rng.random((30, 40, 3)) * 255).astype(np.uint8), (330, 240), interpolation=cv2.INTER_CUBIC)
    a, b = base[:, :320], base[:, 3:323]
    pooled = dis_flow(a, b)
    with serial_opencv():
        single = dis_flow(a, b)
    assert np.array_equal(pooled, single)

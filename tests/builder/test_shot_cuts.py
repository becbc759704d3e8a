"""Shot-cut detection: a synthetic hard cut is found at its frame; a smooth pan has none."""
from __future__ import annotations

import numpy as np

from devil_dataset.builder.shot_cuts import CUT_THRESHOLD, CutDetector, detect_cuts, detect_cuts_in_file


def test_hard_cut_found_at_its_frame(curate_cut_frames):
    result = detect_cuts(curate_cut_frames, fps=25)
    assert result.cuts == (100,)
    assert result.shots() == [(0, 100), (100, 230)]
    assert result.scores.shape == (230,) and result.scores[0] == 0.0
    assert result.scores[100] >= CUT_THRESHOLD
    # inside the shots the change between frames stays below the threshold
    assert result.max_score(0, 100) < CUT_THRESHOLD
    assert result.max_score(100, 230) < CUT_THRESHOLD


def test_smooth_pan_has_no_cut(curate_pan):
    result = detect_cuts(curate_pan(7, 120, speed=2.0))
    assert result.cuts == ()
    assert result.shots() == [(0, 120)]


def test_streaming_detector_matches_batch_and_file(curate_cut_frames, curate_make_video):
    det = CutDetector(fps=25)
    for f in curate_cut_frames:
        det.push(f)
    streamed = det.finish()
    batch = detect_cuts(curate_cut_frames, fps=25)
    assert streamed.cuts == batch.cuts
    assert np.array_equal(streamed.scores, batch.scores)
    from_file = detect_cuts_in_file(curate_make_video("cut.mp4", curate_cut_frames))
    assert from_file.cuts == (100,)


def test_threshold_controls_detection(curate_cut_frames):
    assert detect_cuts(curate_cut_frames, threshold=255.0).cuts == ()


def test_large_frames_are_downscaled_for_detection():
    a = np.zeros((20, 540, 960, 3), np.uint8)
    b = np.full((20, 540, 960, 3), 180, np.uint8)
    assert detect_cuts(np.concatenate([a, b])).cuts == (20,)

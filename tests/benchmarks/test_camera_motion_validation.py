"""benchmarks/camera_motion_validation.py: PR-AUC the release's way and the validation set."""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from .conftest import load_benchmark

va = load_benchmark("camera_motion_validation")

INF = math.inf


def test_docstring_examples():
    result = doctest.testmod(va, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


def test_pr_auc_perfect_and_inverted():
    assert va.pr_auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    # inverted ranking, 2 positives at the bottom of 4: curve (r 1, p 1/2), (r 1/2, p 1/3), (r 0, p 0) twice for
    # the two top negatives, then the (r 0, p 1) end point (zero width) -> trapezoids over recall:
    expected = 0.5 * (1 / 2 + 1 / 3) / 2 + 0.5 * (1 / 3 + 0) / 2
    assert va.pr_auc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == pytest.approx(expected)


def test_pr_auc_hand_computed_with_ties():
    # scores 0.9 (T), 0.5 (F), 0.5 (T), 0.1 (F): thresholds 0.9 -> (p 1, r .5); 0.5 -> (p 2/3, r 1)
    auc = va.pr_auc([0.9, 0.5, 0.5, 0.1], [True, False, True, False])
    assert auc == pytest.approx(0.5 * (1 + 2 / 3) / 2 + 0.5 * 1.0)
    p, r = va.precision_recall_curve([True, False, True, False], [0.9, 0.5, 0.5, 0.1])
    assert p.tolist() == pytest.approx([2 / 3, 1.0, 1.0]) and r.tolist() == [1.0, 0.5, 0.0]


def test_pr_auc_inf_becomes_max_plus_one_and_normalisation():
    assert va.release_normalise([0.2, INF, 0.7]).tolist() == pytest.approx([0.0, 1.0, 0.5 / 1.5])
    # +inf ties with nothing: it is max + 1, strictly above every finite score
    assert va.pr_auc([0.2, INF, 0.7], [False, True, False]) == 1.0
    # two +inf entries tie with each other
    assert va.pr_auc([INF, INF, 0.1], [True, False, False]) == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    # monotone transforms do not change PR-AUC
    s = np.array([0.3, 0.1, 0.5, 0.05, 0.7])
    y = [True, False, False, False, True]
    assert va.pr_auc(s, y) == pytest.approx(va.pr_auc(s * 10 + 3, y))
    assert va.release_normalise([0.4, 0.4]).tolist() == [0.0, 0.0]


def test_pr_auc_input_errors():
    with pytest.raises(ValueError, match="positive"):
        va.pr_auc([0.1, 0.2], [False, False])
    with pytest.raises(ValueError, match="NaN"):
        va.pr_auc([0.1, float("nan")], [True, False])
    with pytest.raises(ValueError, match="same length"):
        va.pr_auc([0.1, 0.2], [True])


def test_pr_auc_on_a_handful_of_rendered_clips():
    """Hard negatives (still camera, torrent / gale) vs positives incl. a slow pan, small renders: PR-AUC >= 0.95."""
    names = {"jitter_static", "hard_still_torrent", "hard_still_gale", "pan_static", "hard_slow_pan", "handheld_static"}
    scenes = [s for s in va.VALIDATION_SCENES if s["name"] in names]
    clips = list(va.rendered_validation_clips(size=(256, 144), num_frames=30, seeds=(0,), scenes=scenes))
    assert sorted(c.label for c in clips) == ["high"] * 3 + ["low"] * 3
    (result,) = va.run_validation(clips, ["sift"], scoring_size=None, progress=False)
    assert result.positives == 3 and result.negatives == 3
    assert result.pr_auc >= 0.95, result.scores
    table = va.format_table(clips, [result])
    assert "sift" in table and "render-hard_slow_pan-s0" in table


def test_surf_is_skipped_with_a_reason_when_missing():
    from devil_dataset.core.alignment import surf_available

    if surf_available():
        pytest.skip("this OpenCV has SURF")
    (result,) = va.run_validation([], ["surf"], progress=False)
    assert result.pr_auc is None and "SURF" in result.skipped


def test_real_footage_table_is_consistent():
    for _name, start, end, label, note in va.REAL_FOOTAGE:
        assert end - start >= 45 and label in (None, "low", "high") and note


def test_script_rejects_unknown_detector_and_bad_seeds(capsys):
    for argv in (["--detectors", "akaze", "--quick"], ["--seeds", "0,x", "--quick"]):
        with pytest.raises(SystemExit) as exc:
            va.main(argv)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown detector 'akaze'" in err and "--seeds" in err


@pytest.mark.slow
def test_full_validation_meets_goal(tmp_path):
    """Slow (tens of minutes on 2 cores): the whole validation set at 854x480, SIFT and ORB; SIFT PR-AUC >= 0.95."""
    import json

    table = va.run_and_report(quick=False, detectors=["sift", "orb"], json_path=str(tmp_path / "v.json"),
                              progress=False)
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["detectors"]["sift"]["pr_auc"] >= 0.95, table
    assert doc["detectors"]["sift"]["positives"] >= 20 and doc["detectors"]["sift"]["negatives"] >= 15


def test_scene_motion_validation_separates_water_from_static():
    scenes = [s for s in va.VALIDATION_SCENES if s["name"] in {"still_static", "jitter_static", "still_water"}]
    clips = list(va.rendered_validation_clips(size=(192, 112), num_frames=14, seeds=(0,), scenes=scenes))
    labels = {c.clip_id: s["scene_motion"] for c, s in zip(clips, scenes)}
    res = va.scene_motion_validation(clips, labels, modes=("corrected",))
    assert res["corrected"]["pr_auc"] == 1.0 and res["corrected"]["nan"] == 0
    scores = res["corrected"]["scores"]
    assert scores["render-still_water-s0"] > 3 * scores["render-jitter_static-s0"]

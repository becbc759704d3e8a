"""EditBoard fidelity metrics adapted to inpainting (devil_dataset/eval/metrics/fidelity.py): analytic cases."""
from __future__ import annotations

import numpy as np
import pytest

import devil_dataset.core.flow as flow_module
from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.eval.kernels.flow_fidelity import (
    backward_warp,
    ff_alpha,
    ff_alpha_pairs,
    ff_beta,
    ff_beta_frame,
    unchanged_region,
    video_flows,
)
from devil_dataset.eval.metrics import fidelity
from devil_dataset.eval.metrics.fidelity import FFAlphaMetric, FFBetaMetric, UnchangedRegionMetric, flow_function
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import METRICS

from ..conftest import panning_scene, textured_canvas

DIS = flow_function("dis")[0]


def _pan(velocity, size=(96, 64), frames=5, seed=0):
    return panning_scene(np.random.default_rng(seed), size, frames, velocity)


def _still(frames=4, size=(64, 48), seed=0):
    img = textured_canvas(np.random.default_rng(seed), size)
    img = (20 + img.astype(np.int32) * 160 // 255).astype(np.uint8)  # values in [20, 180]: no overflow below
    return np.repeat(img[None], frames, axis=0)


# ------------------------------------------------------------------------------------------- identical videos
def test_identical_videos_score_perfectly():
    gt = _pan((2.0, 0.0))
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 20:40, 30:60] = True
    video = VideoSample("a", gt, gt.copy(), hole)
    assert FFBetaMetric(EvalOptions(flow="dis")).update(video)["ff_beta"] < 1e-9
    assert UnchangedRegionMetric(EvalOptions()).update(video)["unchanged_region"] == 0.0
    # FF-alpha of the ground truth itself is its own warp residual on valid pixels: tiny and <= theta.
    a = FFAlphaMetric(EvalOptions(flow="dis")).update(video)["ff_alpha"]
    assert 0.0 <= a < 1e-3
    still = _still()
    assert ff_alpha(still, still) == (0.0, 1.0)  # zero flow, zero residual: exactly perfect


# --------------------------------------------------------------------------------------------------- FF-alpha
def test_ff_alpha_flicker_in_the_hole_gives_the_known_error():
    gt = _still(frames=5)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 10:30, 16:48] = True  # 20 x 32 of 48 x 64 pixels
    c = 30
    pred = gt.copy()
    pred[1::2] += c  # result flickers by c every other frame; composite keeps it only in the hole
    video = VideoSample("f", gt, pred, hole)
    value = FFAlphaMetric(EvalOptions(flow="dis")).update(video)["ff_alpha"]
    assert value == pytest.approx(c / 255 * (20 * 32) / (48 * 64), rel=1e-6)


def test_ff_alpha_ignores_pixels_where_the_ground_truth_itself_fails_to_warp():
    gt = _still(frames=4)
    gt[1::2, 0:24, :] += 50  # the GT flickers in the top half: its warp error there exceeds theta
    result = gt.copy()
    result[1::2, 0:24, :] += 10  # extra flicker only where the GT is invalid
    zero_flow = np.zeros((3, 48, 64, 2), np.float32)  # the true (still) motion; DIS is confused by the flicker
    scores, valid = ff_alpha_pairs(result, gt, zero_flow)
    assert np.allclose(valid, 0.5)
    assert np.allclose(scores, 0.0)
    result[1::2, 30:40, :] += 10  # now in the valid half: 10/255 on 10 of 24 valid rows
    scores, _ = ff_alpha_pairs(result, gt, zero_flow)
    assert np.allclose(scores, 10 / 255 * 10 / 24)


def test_backward_warp_shift_and_inside_mask():
    frame = np.arange(20, dtype=np.float32).reshape(4, 5)
    flow = np.zeros((4, 5, 2), np.float32)
    flow[..., 1] = 1.0  # sample one row below
    warped, inside = backward_warp(frame, flow)
    assert np.array_equal(warped[:3], frame[1:])
    assert inside[:3].all() and not inside[3].any()


# ---------------------------------------------------------------------------------------------------- FF-beta
def test_ff_beta_frame_analytic_angles_and_zero_rule():
    a = np.zeros((3, 4, 2))
    a[..., 0] = 2.0
    theta = np.deg2rad(60)
    rot = np.stack([np.cos(theta) * a[..., 0], np.sin(theta) * a[..., 0]], axis=-1)
    assert ff_beta_frame(rot, a) == pytest.approx(1 - np.cos(theta))
    zero = np.zeros_like(a)
    assert ff_beta_frame(zero, zero) == 0.0  # both still: agreement
    assert ff_beta_frame(zero, a) == 1.0  # moving vs still: cos taken as 0


@pytest.mark.parametrize("velocity, expected", [((-2.0, 0.0), 2.0), ((0.0, 2.0), 1.0), ((2.0, 0.0), 0.0)])
def test_ff_beta_of_a_known_motion_change(velocity, expected):
    gt = _pan((2.0, 0.0))
    pred = _pan(velocity, seed=1)  # other texture: FF-beta only looks at motion directions
    hole = np.ones(gt.shape[:3], bool)  # composite = prediction everywhere
    value = FFBetaMetric(EvalOptions(flow="dis")).update(VideoSample("b", gt, pred, hole))["ff_beta"]
    assert value == pytest.approx(expected, abs=0.05)


def test_ff_beta_scales_with_the_reversed_area():
    gt = _pan((2.0, 0.0), size=(128, 64))
    rev = _pan((-2.0, 0.0), size=(128, 64))
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, :, :64] = True  # left half moves the other way
    value = ff_beta(video_flows(np.where(hole[..., None], rev, gt), DIS), video_flows(gt, DIS))
    assert value == pytest.approx(1.0, abs=0.15)  # 2 on half the frame (flow smoothing at the seam)


# ------------------------------------------------------------------------------------------ unchanged region
def test_unchanged_region_is_computed_on_the_raw_prediction_over_known_pixels():
    gt = _still(frames=2)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, :24] = True  # top half is the hole
    pred = gt.copy()
    pred[:, :24] = 0  # anything in the hole is ignored
    pred[:, 24:, :, 1] += 12  # one channel altered on all known pixels: max-channel error 12
    assert unchanged_region(pred, gt, hole) == pytest.approx(12 / 255)
    metric = UnchangedRegionMetric(EvalOptions())
    metric.update(VideoSample("u", gt, pred, hole))
    metric.update(VideoSample("v", gt, gt, hole))
    assert metric.compute()["unchanged_region"] == pytest.approx(6 / 255)
    assert metric.provenance()["result"] == "raw prediction"


def test_unchanged_region_frame_without_known_pixels_is_skipped():
    gt = _still(frames=2)
    hole = np.zeros(gt.shape[:3], bool)
    hole[0] = True
    pred = gt.copy()
    pred[1] += 5
    assert unchanged_region(pred, gt, hole) == pytest.approx(5 / 255)


# ----------------------------------------------------------------------------------- metric classes, flows
def test_gt_flows_are_estimated_once_for_ff_alpha_and_ff_beta():
    calls = []

    def counting_flow(a, b):
        calls.append(1)
        return DIS(a, b)

    gt = _pan((1.0, 0.0), frames=4)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 10:20, 10:20] = True
    video = VideoSample("c", gt, gt, hole)
    fa = FFAlphaMetric(EvalOptions(), flow_fn=counting_flow)
    fb = FFBetaMetric(EvalOptions(), flow_fn=counting_flow)
    fa.update(video)
    fb.update(video)
    assert len(calls) == 3 + 3  # GT flows once (shared), composite flows once
    prov = fa.provenance()
    assert prov["threshold_255"] == 5.0 and prov["videos_below_sigma"] == 0


def test_flow_backend_selection(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))  # empty cache: no RAFT weights
    assert flow_function("auto")[1] == "dis"  # auto -> DIS without RAFT weights
    assert flow_function("dis")[1] == "dis"
    with pytest.raises(WeightsMissingError):
        flow_function("raft")  # fails at construction, not mid-pass
    # one dispatcher (devil_dataset.core.flow.flow_estimator): an unknown backend is an UnknownNameError
    from devil_dataset.core.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown flow backend 'custom'"):
        flow_function("custom", "cuda")
    fn, name = flow_function("dis")
    assert isinstance(fn, flow_module.FlowEstimator) and fn.name == name == "dis"


def test_registry_creates_the_fidelity_metrics():
    gt = _still(frames=3)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 5:15, 5:15] = True
    for name in ("ff_alpha", "ff_beta", "unchanged_region"):
        metric = METRICS[name].create(EvalOptions(flow="dis"))
        out = metric.update(VideoSample("r", gt, gt, hole))
        assert set(out) == set(METRICS[name].keys)
        assert metric.compute()[name] == pytest.approx(0.0, abs=1e-9)
        assert "implementation" in metric.provenance()


def test_shape_mismatch_is_rejected():
    gt = _still(frames=2)
    with pytest.raises(ValueError):
        unchanged_region(gt[:1], gt, np.zeros(gt.shape[:3], bool))
    flows = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(ValueError):
        ff_beta(flows, np.zeros((2, 4, 4, 2), np.float32))


def test_module_cache_is_bounded_to_one_video():
    gt1, gt2 = _still(frames=2, seed=1), _still(frames=2, seed=2)
    fidelity._GT_FLOWS.get(gt1, DIS, "dis")
    fidelity._GT_FLOWS.get(gt2, DIS, "dis")
    assert fidelity._GT_FLOWS.frames is gt2

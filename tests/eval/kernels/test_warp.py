"""Warp error (mask): the prepared (shared) path equals the reference per-pair computation bit for bit."""
from __future__ import annotations

import numpy as np

from devil_dataset.core.flow import dis_flow
from devil_dataset.eval.kernels.warp import hole_points_for, hole_warps_for, warp_error_pair, warp_error_shared
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.warp import WarpErrorMetric


def _clip():
    rng = np.random.default_rng(3)
    base = np.kron(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8), np.ones((4, 4, 1), np.uint8))
    gt = np.stack([np.roll(base, 2 * t, axis=1)[:64, :96] for t in range(6)])
    hole = np.zeros(gt.shape[:3], bool)
    for t in range(6):
        hole[t, 20:40, 10 + 5 * t : 30 + 5 * t] = True
    return gt, rng.integers(0, 256, gt.shape, dtype=np.uint8), hole


def test_prepared_warp_error_equals_per_pair_reference():
    gt, pred, hole = _clip()
    video = VideoSample("v", gt, pred, hole)
    comp = video.composite
    pairs = [warp_error_pair(comp[t - 1], comp[t], hole[t - 1], hole[t], dis_flow(gt[t - 1], gt[t]),
                             dis_flow(gt[t], gt[t - 1])) for t in range(1, len(gt))]
    ref = float(np.mean([v for v in pairs if not np.isnan(v)]))
    metric = WarpErrorMetric(EvalOptions(flow="dis"))
    assert ref > 0.01
    assert metric.update(video)["warp_error_mask"] == ref
    flow = metric.prepare(gt)
    assert warp_error_shared(comp, hole, flow) == ref
    assert warp_error_shared(comp, hole, flow, hole_warps_for(hole, flow)) == ref
    assert warp_error_shared(comp, hole, flow, points=hole_points_for(hole, flow)) == ref
    assert flow.for_hole(hole).points is not None
    assert metric.update(video, flow.for_hole(hole))["warp_error_mask"] == ref
    assert metric.compute()["warp_error_mask"] == ref


def test_hole_warp_near_the_hole_equals_the_whole_frame_warp():
    """The windowed hole warp is the whole-frame warp bit for bit: holes at borders, flows leaving the frame,
    large and tiny flows, empty holes, a non-finite flow (whole-frame fallback)."""
    from devil_dataset.eval.kernels.warp import warp_backward, warp_hole_backward

    rng = np.random.default_rng(5)
    h, w = 40, 56
    for i in range(40):
        hole = np.zeros((h, w), bool)
        if i % 10:
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            hole[y0 : y0 + rng.integers(1, 15), x0 : x0 + rng.integers(1, 15)] = True
        scale = [0.3, 2.0, 8.0, 30.0][i % 4]
        flow = rng.normal(0, scale, (h, w, 2)).astype(np.float32)
        if i == 7:
            flow[3, 4, 0] = np.inf
        with np.errstate(invalid="ignore"):  # the infinite vector's cast to an index (the same in both)
            expected = warp_backward(hole.astype(np.float32), flow)
            got = warp_hole_backward(hole, flow)
        assert got.dtype == np.float32 and np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


def _occlusion_formula(fw, bw):
    """The release's occlusion check written out on whole float64 frames (the release's formula, unoptimised)."""
    from devil_dataset.eval.kernels.warp import OCC_FB_ABS, OCC_FB_REL, OCC_GRAD_ABS, OCC_GRAD_REL, warp_backward

    bw_w = warp_backward(bw, fw).astype(np.float64)
    fw64 = fw.astype(np.float64)

    def mag(f):
        return f[..., 0] ** 2 + f[..., 1] ** 2

    fb = mag(fw64 + bw_w) > OCC_FB_REL * (mag(bw_w) + mag(fw64)) + OCC_FB_ABS
    du, dv = np.zeros_like(fw64), np.zeros_like(fw64)
    du[:, :-1] = fw64[:, :-1] - fw64[:, 1:]
    dv[:-1, :] = fw64[:-1, :] - fw64[1:, :]
    return fb | ((du ** 2 + dv ** 2).sum(axis=-1) > OCC_GRAD_REL * mag(fw64) + OCC_GRAD_ABS)


def test_occlusion_mask_whole_and_windowed_equal_the_formula():
    """Whole frames and any window (borders, single rows/columns, 1-pixel frames) give the formula's booleans;
    flows of every scale, and backward flows that nearly cancel the forward one (the threshold's edge)."""
    from devil_dataset.eval.kernels.warp import occlusion_mask

    rng = np.random.default_rng(11)
    checked = 0
    for i in range(300):
        h, w = (int(n) for n in rng.integers(1, 30, 2))
        fw = (rng.standard_normal((h, w, 2)) * [0.01, 1.0, 10.0, 1e4][i % 4]).astype(np.float32)
        bw = (rng.standard_normal((h, w, 2)) * [0.01, 1.0, 10.0][i % 3]).astype(np.float32)
        if i % 5 == 0:
            bw = (-fw + rng.standard_normal((h, w, 2)) * 0.3).astype(np.float32)
        whole = _occlusion_formula(fw, bw)
        assert np.array_equal(occlusion_mask(fw, bw), whole)
        r0, r1 = sorted(int(n) for n in rng.integers(0, h + 1, 2))
        c0, c1 = sorted(int(n) for n in rng.integers(0, w + 1, 2))
        if r1 > r0 and c1 > c0:
            window = (slice(r0, r1), slice(c0, c1))
            assert np.array_equal(occlusion_mask(fw, bw, window), whole[window]), (i, window)
            checked += 1
        checked += whole.any()
    assert checked > 300  # windows were tested and both outcomes occurred

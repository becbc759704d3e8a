"""Warp error (mask): the prepared (shared) path equals the reference per-pair computation bit for bit."""
from __future__ import annotations

import numpy as np

from devil_dataset.eval.protocol import EvalOptions, VideoSample
from devil_dataset.eval.warp import WarpErrorMetric, hole_points_for, hole_warps_for, warp_error_pair, warp_error_shared
from devil_dataset.flow import dis_flow


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

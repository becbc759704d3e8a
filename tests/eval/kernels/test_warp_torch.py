"""The torch warp error: backward warp, occlusion mask and hole points equal the numpy path.

Warped images, masks and points are compared exactly (the same float32/float64 operations); the metric computes its
value at the points in numpy, so values from the device's points are the numpy path's floats.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from devil_dataset.eval.kernels import warp
from devil_dataset.eval.kernels import warp_torch as wt
from devil_dataset.eval.kernels.warp import GroundTruthFlow
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.warp import WarpErrorMetric

ATOL = 1e-9  # the torch path equals the numpy path within 1e-9

NO_CUDA = "no CUDA device: the GPU run of the same code (the CPU run above covers it in CI)"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA))]
SIZES = [(64, 96), (37, 53)]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One torch thread: two test workers share two cores (the values do not depend on it, see the last test)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _flows(h: int, w: int, pairs: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Smooth forward flows (a pan with ripples) pointing out of the frame near the left and bottom borders, and
    backward flows that undo them except in a patch (forward-backward occlusion) and a fractional mismatch."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    fws, bws = [], []
    for k in range(pairs):
        u = 1.5 + 0.8 * np.sin(xx / 7 + k) + rng.normal(0, 0.05, (h, w))
        v = -0.6 + 0.5 * np.cos(yy / 5 + k) + rng.normal(0, 0.05, (h, w))
        u[:, :5] -= 9.0  # leaves the frame on the left
        v[h - 4 :, :] += 7.5  # leaves the frame at the bottom
        fw = np.stack([u, v], -1).astype(np.float32)
        bw = -fw + rng.normal(0, 0.2, fw.shape).astype(np.float32)
        bw[h // 3 : h // 2, w // 2 : w // 2 + 10] += 4.0  # disagreeing flows: occluded
        fws.append(fw)
        bws.append(bw.astype(np.float32))
    return fws, bws


def _clip(h: int, w: int, t: int = 6, seed: int = 0):
    """(comp, hole, flow): holes at the borders, an empty hole (frame 2), a full hole (frame 3)."""
    rng = np.random.default_rng(seed)
    gt = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
    hole = np.zeros((t, h, w), bool)
    hole[0, : h // 3, : w // 4] = True
    hole[1, h // 2 :, w - w // 4 :] = True
    hole[3:4] = True
    hole[4:, h // 4 : h // 2, w // 3 : w // 2] = True
    comp = np.where(hole[..., None], rng.integers(0, 256, gt.shape, dtype=np.uint8), gt)
    fws, bws = _flows(h, w, t - 1, seed)
    return comp, hole, GroundTruthFlow(fws, bws)


def _stack(arrays: list[np.ndarray], device: str) -> torch.Tensor:
    return torch.from_numpy(np.stack(arrays)).to(device)


def _same_points(a: list, b: list) -> None:
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert (p is None) == (q is None)
        if p is not None:
            assert np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1])
            assert q[0].dtype == p[0].dtype == np.intp


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
def test_warp_and_occlusion_equal_numpy(device, size):
    comp, hole, flow = _clip(*size)
    fw, bw = _stack(flow.fw, device), _stack(flow.bw, device)
    image = comp[1:].astype(np.float32) / 255.0
    warped = wt.warp_backward(torch.from_numpy(image).to(device), fw).cpu().numpy()
    planar = wt.warp_backward(torch.from_numpy(hole[1:]).to(device).float(), fw).cpu().numpy()
    occluded = wt.occlusion_mask(fw, bw).cpu().numpy()
    assert warped.dtype == planar.dtype == np.float32
    for k in range(len(flow.fw)):
        assert np.array_equal(warped[k], warp.warp_backward(image[k], flow.fw[k]))
        assert np.array_equal(planar[k], warp.warp_backward(hole[k + 1].astype(np.float32), flow.fw[k]))
        assert np.array_equal(occluded[k], warp.occlusion_mask(flow.fw[k], flow.bw[k]))
    assert 0.02 < occluded.mean() < 0.9  # both tests fire somewhere, not everywhere


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
def test_hole_points_and_values_equal_numpy(device, size):
    comp, hole, flow = _clip(*size)
    points = warp.hole_points_for(hole, flow)
    _same_points(points, wt.hole_points_for(hole, flow, device=device, batch_size=2))
    assert points[2] is not None and len(points[2][0]) > 0  # frame 2 has no hole, but frame 3's (full) warps back
    reference = [warp.warp_error_pair(comp[t - 1], comp[t], hole[t - 1], hole[t], flow.fw[t - 1], flow.bw[t - 1])
                 for t in range(1, len(comp))]
    assert np.isfinite(reference).all()
    state = GroundTruthFlow(flow.fw, flow.bw, device=device, batch_size=2).for_hole(hole)  # the metric's GPU path
    value = warp.warp_error_at(comp, state)
    assert value == warp.warp_error_shared(comp, hole, flow)
    assert value == pytest.approx(float(np.mean(reference)), abs=ATOL)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_holes_give_nan(device):
    comp, hole, flow = _clip(37, 53, t=3)
    empty = np.zeros_like(hole)
    assert wt.hole_points_for(empty, flow, device=device) == [None, None] == warp.hole_points_for(empty, flow)
    assert np.isnan(warp.warp_error_at(comp, GroundTruthFlow(flow.fw, flow.bw, device=device).for_hole(empty)))
    assert np.isnan(warp.warp_error_shared(comp, empty, flow))


@pytest.mark.parametrize("device", DEVICES)
def test_metric_on_torch_prepares_and_updates_like_numpy(device):
    """prepare / for_hole / update of WarpErrorMetric with the torch backend: the occlusion on the device, the same
    points, the same values bit for bit (the value is computed at the points), the cache's arrays unchanged (an entry
    written by either backend serves both)."""
    comp, hole, flow = _clip(64, 96)
    gt = comp.copy()
    pred = np.where(hole[..., None], 255 - comp, comp)
    video = VideoSample("v", gt, pred, hole)

    def flow_fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # the clip's flows, looked up by frame
        i, j = (next(k for k in range(len(gt)) if np.array_equal(gt[k], f)) for f in (a, b))
        return flow.fw[i] if j == i + 1 else flow.bw[j]

    numpy_metric = WarpErrorMetric(EvalOptions(flow="dis"), flow_fn=flow_fn)
    torch_metric = WarpErrorMetric(EvalOptions(flow="dis", pixel_backend="torch", device=device, batch_size=2),
                                   flow_fn=flow_fn)
    ref_flow = numpy_metric.prepare(gt)
    torch_flow = torch_metric.prepare(gt)
    assert ref_flow.device is None and torch_flow.device == device and torch_flow.batch_size == 2
    for key, arr in numpy_metric.prepared_to_arrays(ref_flow)[1].items():
        assert np.array_equal(arr, torch_metric.prepared_to_arrays(torch_flow)[1][key])
    expected = numpy_metric.update(video, ref_flow.for_hole(hole))["warp_error_mask"]
    assert np.isfinite(expected)
    prepared = torch_flow.for_hole(hole)
    assert device in torch_flow.device_cache  # the occlusion was evaluated there
    _same_points([None if p is None else p[:2] for p in ref_flow.for_hole(hole).points],
                 [None if p is None else p[:2] for p in prepared.points])
    # a prepared hole, no prepared state, the flows alone, and a cached entry all give the same value
    cached = torch_metric.prepared_from_arrays(*torch_metric.prepared_to_arrays(prepared))  # the cache's round trip
    for state in (prepared, None, torch_flow, cached):
        assert torch_metric.update(video, state)["warp_error_mask"] == expected
    assert torch_metric.compute()["warp_error_mask"] == expected
    prov = torch_metric.provenance()
    assert (prov["pixel_backend"], prov["pixel_device"]) == ("torch", device)
    assert numpy_metric.provenance()["pixel_backend"] == "numpy"
    copy = pickle.loads(pickle.dumps(torch_flow))  # device tensors are not pickled
    assert copy.device_cache == {} and copy.device == device
    assert torch_metric.update(video, copy)["warp_error_mask"] == expected


def test_float64_flows_are_read_as_the_numpy_path_reads_them():
    """The warp reads the flow as float32, the occlusion tests as float64 (a float64 flow is not rounded there)."""
    comp, hole, flow = _clip(37, 53, t=3)
    wide = GroundTruthFlow([f.astype(np.float64) + 1e-9 for f in flow.fw], [f.astype(np.float64) for f in flow.bw])
    _same_points(warp.hole_points_for(hole, wide), wt.hole_points_for(hole, wide))
    on_device = GroundTruthFlow(wide.fw, wide.bw, device="cpu").for_hole(hole)
    assert warp.warp_error_at(comp, on_device) == warp.warp_error_shared(comp, hole, wide)


def test_results_do_not_depend_on_the_thread_count():
    comp, hole, flow = _clip(150, 230, t=3)
    threads = torch.get_num_threads()
    runs = []
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            runs.append(wt.valid_masks(hole, GroundTruthFlow(flow.fw, flow.bw)).numpy())
    finally:
        torch.set_num_threads(threads)
    assert np.array_equal(runs[0], runs[1]) and runs[0].any()

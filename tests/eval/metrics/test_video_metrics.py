"""PVCS, VFID, LPIPS/FID metric objects and warp error on tiny generated videos (random network weights)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.core.flow import dis_flow
from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
from devil_dataset.eval import metrics as M
from devil_dataset.eval.kernels import frechet
from devil_dataset.eval.metrics import (
    FIDMetric,
    LPIPSMetric,
    PVCSMetric,
    VFIDMetric,
    WarpErrorMetric,
    occlusion_mask,
    warp_backward,
    warp_error_pair,
)
from devil_dataset.eval.metrics import i3d as i3d_metrics
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample


@pytest.fixture(scope="module")
def metrics_i3d():
    return load_i3d(state=random_i3d_state(seed=0))


def _video(clip_id: str, t: int, seed: int, damage: bool, h: int = 16, w: int = 16) -> VideoSample:
    """Tiny videos keep I3D fast: 16x16 frames still reach Mixed_5c (1x1 spatially)."""
    rng = np.random.default_rng(seed)
    gt = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
    hole = np.zeros((t, h, w), bool)
    hole[:, 4:11, 5:12] = True
    pred = gt.copy()
    if damage:
        pred[hole] = rng.integers(0, 256, (int(hole.sum()), 3), dtype=np.uint8)
    return VideoSample(clip_id, gt, pred, hole)


def _naive_pvcs(net, gt: np.ndarray, comp: np.ndarray, release_padding: bool = True) -> float:
    """One window at a time, separate forward passes for GT and composite (the release's loop).

    A video shorter than 10 frames: the release fills the composite window with the GT's last frame
    (``release_padding``); otherwise each window repeats its own last frame."""
    def feats(frames):
        x = torch.from_numpy(frames).permute(3, 0, 1, 2).float()[None] / 255.0
        return net.endpoints(x, ("Conv3d_2c_3x3", "Mixed_3c", "Mixed_4f", "Mixed_5c"))

    def unit(f):
        return f / (torch.sqrt((f ** 2).sum(1, keepdim=True)) + 1e-10)

    t = len(gt)
    values = []
    with torch.no_grad():
        for s in range(max(1, t - 9)):
            idx = [min(s + k, t - 1) for k in range(10)]
            comp_window = comp[idx].copy()
            if release_padding:
                comp_window[[k for k in range(10) if s + k > t - 1]] = gt[t - 1]
            d = sum(float(((unit(a) - unit(b)) ** 2).sum(1).mean()) for a, b in zip(feats(gt[idx]), feats(comp_window)))
            values.append(d)
    return float(np.mean(values))


def test_pvcs_zero_for_identical_and_positive_otherwise(metrics_i3d):
    m = PVCSMetric(EvalOptions(batch_size=8), network=metrics_i3d)
    same = m.update(_video("same", 10, 0, damage=False))["pvcs"]
    diff = m.update(_video("diff", 10, 1, damage=True))["pvcs"]
    assert same == 0.0
    assert diff > 0.0
    assert m.compute()["pvcs"] == pytest.approx((same + diff) / 2)
    assert m.provenance()["layers"] == ["Conv3d_2c_3x3", "Mixed_3c", "Mixed_4f", "Mixed_5c"]


def test_pvcs_equals_windowed_loop(metrics_i3d):
    v = _video("v", 12, 2, damage=True)
    got = PVCSMetric(EvalOptions(batch_size=4), network=metrics_i3d).update(v)["pvcs"]  # 1 window pair per batch
    assert got == pytest.approx(_naive_pvcs(metrics_i3d, v.gt, v.composite), rel=1e-5)


def test_window_count_and_shared_pass(metrics_i3d, monkeypatch):
    built = []
    real = M.I3DVideoPass

    class Counting(real):
        def __init__(self, *a, **k):
            built.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(i3d_metrics, "I3DVideoPass", Counting)  # the pass lives in eval.i3d_metrics
    opts = EvalOptions(batch_size=8)
    pvcs, vfid = PVCSMetric(opts, network=metrics_i3d), VFIDMetric(opts, network=metrics_i3d)
    v = _video("a", 11, 3, damage=True)
    pvcs.update(v)
    vfid.update(v)
    assert len(built) == 1  # one I3D window pass serves PVCS and VFID (clips)
    assert vfid.gt_clips.n == 2 and vfid.gt_video.n == 1  # max(1, 11 - 9) windows, one whole-video vector
    short = _video("b", 6, 4, damage=True)
    release = pvcs.update(short)["pvcs"]
    assert release == pytest.approx(_naive_pvcs(metrics_i3d, short.gt, short.composite), rel=1e-5)
    vfid.update(short)
    assert len(built) == 2
    assert vfid.gt_clips.n == 3  # a short video (padded with its last frame) still gives one window
    corrected = PVCSMetric(EvalOptions(batch_size=8, pvcs_mode="corrected"), network=metrics_i3d)
    own = corrected.update(short)["pvcs"]
    assert own == pytest.approx(_naive_pvcs(metrics_i3d, short.gt, short.composite, release_padding=False), rel=1e-5)
    assert abs(own - release) > 1e-6 * release  # the two paddings really differ on a short video
    assert corrected.provenance()["pvcs_mode"] == "corrected"
    long = _video("c", 12, 5, damage=True)  # 10+ frames: no padding, both modes agree
    assert corrected.update(long)["pvcs"] == pytest.approx(pvcs.update(long)["pvcs"], rel=1e-6)
    with pytest.raises(ValueError, match="pvcs_mode"):
        PVCSMetric(EvalOptions(pvcs_mode="own"), network=metrics_i3d).update(long)


def test_vfid_statistics_identical_for_identical_sets(metrics_i3d, monkeypatch):
    """Statistics-level check (a 1024-d sqrtm takes tens of seconds here); Frechet itself is tested separately."""
    opts = EvalOptions(batch_size=8)
    same, diff = VFIDMetric(opts, network=metrics_i3d), VFIDMetric(opts, network=metrics_i3d)
    for i in range(2):
        assert same.update(_video(f"s{i}", 10, 10 + i, damage=False)) == {}
        diff.update(_video(f"d{i}", 10, 10 + i, damage=True))
    for a, b in ((same.gt_video, same.comp_video), (same.gt_clips, same.comp_clips)):
        np.testing.assert_array_equal(a.mean(), b.mean())
        np.testing.assert_array_equal(a.cov(), b.cov())
    assert same.gt_video.mean().shape == (1024,)
    assert np.abs(diff.gt_video.mean() - diff.comp_video.mean()).max() > 1e-6
    seen = []
    monkeypatch.setattr(frechet, "frechet_distance", lambda m1, s1, m2, s2: seen.append((m1.shape, s1.shape)) or 1.5)
    assert diff.compute() == {"vfid": 1.5, "vfid_clips": 1.5}
    assert seen == [((1024,), (1024, 1024))] * 2


@pytest.mark.slow
def test_vfid_identical_sets_near_zero_and_shifted_sets_positive(metrics_i3d):
    """Slow: four 1024-d matrix square roots (tens of seconds each on 2 cores)."""
    opts = EvalOptions(batch_size=8)
    same, diff = VFIDMetric(opts, network=metrics_i3d), VFIDMetric(opts, network=metrics_i3d)
    for i in range(3):
        same.update(_video(f"s{i}", 10, 10 + i, damage=False))
        diff.update(_video(f"d{i}", 10, 10 + i, damage=True))
    s, d = same.compute(), diff.compute()
    assert abs(s["vfid"]) < 1e-4 and abs(s["vfid_clips"]) < 1e-4
    assert d["vfid"] > 1e-3 and d["vfid_clips"] > 1e-3


class _FakeLPIPS:
    def distance(self, a, b):
        return np.abs(a.astype(float) - b.astype(float)).mean(axis=(1, 2, 3))


class _FakeInception:
    def features(self, frames):
        f = frames.astype(np.float32) / 255.0
        return np.stack([f.mean(axis=(1, 2, 3)), f[..., 0].std(axis=(1, 2)), f[:, ::2].mean(axis=(1, 2, 3))], 1)


def test_lpips_metric_frame_mean_over_batches():
    v = _video("a", 7, 5, damage=True)
    m = LPIPSMetric(EvalOptions(batch_size=3), network=_FakeLPIPS())
    got = m.update(v)["lpips"]
    expected = np.abs(v.gt.astype(float) - v.composite.astype(float)).mean(axis=(1, 2, 3)).mean()
    assert got == pytest.approx(expected)
    assert m.compute() == {"lpips": pytest.approx(expected)}


def test_fid_metric_streams_one_feature_per_frame():
    m = FIDMetric(EvalOptions(batch_size=4), network=_FakeInception())
    vids = [_video(f"v{i}", 5 + i, 20 + i, damage=True) for i in range(3)]
    for v in vids:
        assert m.update(v) == {}
    gt = np.concatenate([_FakeInception().features(v.gt) for v in vids])
    comp = np.concatenate([_FakeInception().features(v.composite) for v in vids])
    expected = M.frechet_distance(gt.mean(0), np.cov(gt, rowvar=False), comp.mean(0), np.cov(comp, rowvar=False))
    assert m.gt_stats.n == 18
    assert m.compute()["fid"] == pytest.approx(expected, rel=1e-4, abs=1e-9)
    same = FIDMetric(EvalOptions(), network=_FakeInception())
    for v in vids:
        same.update(_video(v.clip_id, v.num_frames, 20, damage=False))
    assert abs(same.compute()["fid"]) < 1e-9


# ----------------------------------------------------------------------------------------------- warp error
def test_warp_backward_integer_shift_and_border_clamp():
    img = np.arange(20, dtype=np.float32).reshape(4, 5)
    flow = np.zeros((4, 5, 2), np.float32)
    flow[..., 0] = 1.0
    out = warp_backward(img, flow)
    np.testing.assert_array_equal(out[:, :4], img[:, 1:])
    np.testing.assert_array_equal(out[:, 4], img[:, 4])  # clamped at the border
    flow[..., 0] = -3.5
    np.testing.assert_array_equal(warp_backward(img, flow)[:, 0], img[:, 0])


def test_occlusion_of_consistent_translation_is_only_at_motion_boundaries():
    fw = np.zeros((20, 20, 2), np.float32)
    fw[..., 0] = 2.0
    bw = -fw
    assert not occlusion_mask(fw, bw).any()
    bad_bw = np.zeros_like(fw)  # inconsistent: |fw + bw_w|^2 = 4 > 0.01 * 4 + 0.5
    assert occlusion_mask(fw, bad_bw).all()
    edge = fw.copy()
    edge[:, 10:] = 0.0
    occ = occlusion_mask(edge, -edge)
    assert occ[:, 9].all() and not occ[:, 12].any()


def _static_video(t: int = 5, moving_noise: bool = False) -> VideoSample:
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    gt = np.repeat(frame[None], t, axis=0)
    hole = np.zeros((t, 48, 64), bool)
    hole[:, 16:32, 20:40] = True
    pred = gt.copy()
    pred[hole] = 0 if not moving_noise else rng.integers(0, 256, (int(hole.sum()), 3), dtype=np.uint8)
    return VideoSample("static", gt, pred, hole)


def test_warp_error_zero_for_static_video_and_positive_for_flicker():
    m = WarpErrorMetric(EvalOptions(flow="dis", batch_size=2))
    assert m.update(_static_video())["warp_error_mask"] == 0.0
    assert m.update(_static_video(moving_noise=True))["warp_error_mask"] > 0.01
    assert m.provenance()["flow_backend"] == "dis"


def test_warp_error_pair_matches_direct_formula():
    v = _static_video(2, moving_noise=True)
    fw = dis_flow(v.gt[0], v.gt[1])
    bw = dis_flow(v.gt[1], v.gt[0])
    got = warp_error_pair(v.composite[0], v.composite[1], v.hole[0], v.hole[1], fw, bw)
    c0, c1 = v.composite[0] / 255.0, v.composite[1] / 255.0
    region = v.hole[0] | v.hole[1]  # zero flow: the warped hole is the hole
    assert got == pytest.approx(float(np.mean((c1 - c0)[region] ** 2)), rel=1e-5)


def test_warp_error_nan_without_hole():
    v = _static_video(3)
    v = VideoSample("nohole", v.gt, v.pred, np.zeros_like(v.hole))
    m = WarpErrorMetric(EvalOptions(flow="dis"))
    assert np.isnan(m.update(v)["warp_error_mask"])
    assert np.isnan(m.compute()["warp_error_mask"])


def test_flow_backend_auto_falls_back_to_dis_and_raft_needs_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    assert WarpErrorMetric(EvalOptions(flow="auto")).backend == "dis"
    with pytest.raises(WeightsMissingError, match=r"raft_large_C_T_SKHT_V2-ff5fadd5\.pth"):
        WarpErrorMetric(EvalOptions(flow="raft"))


def test_network_metrics_need_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    for cls in (PVCSMetric, VFIDMetric):
        with pytest.raises(WeightsMissingError, match="devil weights import PATH"):
            cls(EvalOptions())


def test_metrics_load_i3d_from_cache_and_report_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    torch.save(random_i3d_state(seed=0), tmp_path / "rgb_imagenet.pt")
    pvcs = PVCSMetric(EvalOptions())
    vfid = VFIDMetric(EvalOptions())
    assert pvcs.net is vfid.net  # one network shared by the two metrics
    prov = pvcs.provenance()["weights"]["i3d"]
    # random weights: their hash does not match the table's
    assert prov["file"] == "rgb_imagenet.pt" and len(prov["sha256"]) == 64 and prov["verified"] == "mismatch"


def test_auto_flow_backend_is_raft_when_weights_are_cached(tmp_path, monkeypatch):
    from devil_dataset.core.flow import resolve_flow_backend

    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    assert resolve_flow_backend("auto") == "dis"
    (tmp_path / "raft_large_C_T_SKHT_V2-ff5fadd5.pth").write_bytes(b"x")
    assert resolve_flow_backend("auto") == "raft"
    with pytest.raises(ValueError, match="unknown flow backend"):
        resolve_flow_backend("flownet2")


@pytest.mark.slow
def test_warp_error_with_raft_backend_records_weights(tmp_path, monkeypatch):
    """Slow: RAFT-large with random weights on 128x128 inputs (about a minute on 2 busy cores)."""
    from devil_dataset.core.networks.raft import random_raft_state

    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    torch.save(random_raft_state(seed=0), tmp_path / "raft_large_C_T_SKHT_V2-ff5fadd5.pth")
    m = WarpErrorMetric(EvalOptions(flow="auto", batch_size=4))
    assert m.backend == "raft"
    v = _static_video(3, moving_noise=True)  # 48x64: padded to 128x128 for RAFT and cropped back
    value = m.update(v)["warp_error_mask"]
    assert np.isnan(value) or value >= 0.0
    prov = m.provenance()
    assert prov["flow_backend"] == "raft" and prov["weights"]["raft"]["verified"] == "mismatch"  # random weights


def test_warp_backward_equals_direct_bilinear_formula():
    """The flat-index gather gives the same float32 values as the formula written with 2-D indexing."""
    rng = np.random.default_rng(7)
    h, w = 23, 31
    flow = (rng.standard_normal((h, w, 2)) * 6).astype(np.float32)
    for img in (rng.random((h, w, 3), dtype=np.float32), rng.random((h, w), dtype=np.float32)):
        xf = np.arange(w, dtype=np.float32)[None, :] + flow[..., 0]
        yf = np.arange(h, dtype=np.float32)[:, None] + flow[..., 1]
        x0, y0 = np.floor(xf), np.floor(yf)
        a, b = xf - x0, yf - y0
        xl, xr = np.clip(x0, 0, w - 1).astype(int), np.clip(x0 + 1, 0, w - 1).astype(int)
        yt, yb = np.clip(y0, 0, h - 1).astype(int), np.clip(y0 + 1, 0, h - 1).astype(int)
        if img.ndim == 3:
            a, b = a[..., None], b[..., None]
        expected = ((1 - a) * (1 - b) * img[yt, xl] + a * (1 - b) * img[yt, xr]
                    + (1 - a) * b * img[yb, xl] + a * b * img[yb, xr]).astype(np.float32)
        out = warp_backward(img, flow)
        assert out.dtype == np.float32 and np.array_equal(out, expected)

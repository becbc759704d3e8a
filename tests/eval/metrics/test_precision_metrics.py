"""EvalOptions.precision reaches every network metric: the networks built for it compute in it, shared
networks are one object per precision, results' provenance records it, and the ground-truth cache keys differ."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.networks.i3d import random_i3d_state
from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state
from devil_dataset.core.networks.raft import random_raft_state
from devil_dataset.core.weights import KNOWN_WEIGHTS
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.scoring import gt_cache as gc


@pytest.fixture
def planted_weights(tmp_path, monkeypatch):
    """A weights cache holding random weights of the real architectures (checksums accepted as unverified)."""
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("DEVIL_WEIGHTS_ALLOW_UNVERIFIED", "1")

    def plant(name: str, state: dict) -> None:
        torch.save(state, tmp_path / KNOWN_WEIGHTS[name].filename)

    return plant


class _RecordingLPIPS:
    """Stands in for LPIPSNetwork (no 233 MB AlexNet file to write): records what the metric asked for."""

    def __init__(self, device: str = "cpu", backbone_state=None, precision: str = "float32") -> None:
        self.device, self.precision = device, precision


def test_lpips_metric_builds_its_network_in_the_precision_and_records_it(monkeypatch):
    from devil_dataset.core.networks import lpips as lpips_mod
    from devil_dataset.eval.metrics.perceptual import LPIPSMetric

    monkeypatch.setattr(lpips_mod, "LPIPSNetwork", _RecordingLPIPS)
    assert LPIPSMetric(EvalOptions(precision="bf16")).net.precision == "bf16"
    assert LPIPSMetric(EvalOptions()).net.precision == "float32"
    # the real network, injected: provenance records the precision it computes in
    monkeypatch.undo()
    metric = LPIPSMetric(EvalOptions(precision="tf32"),
                         network=LPIPSNetwork(backbone_state=random_alexnet_state(0), precision="tf32"))
    prov = metric.provenance()
    assert (prov["precision"], prov["precision_effective"]) == ("tf32", "float32")  # on a CPU tf32 is float32
    bf = LPIPSMetric(EvalOptions(), network=_RecordingLPIPS(precision="bf16"))
    assert bf.provenance()["precision"] == "bf16"  # an injected network keeps (and records) its own


def test_self_consistency_lpips_submetric_uses_the_precision(planted_weights, tmp_path, monkeypatch):
    from devil_dataset.core.networks import lpips as lpips_mod
    from devil_dataset.eval.metrics.self_consistency import lpips_submetric

    (tmp_path / KNOWN_WEIGHTS["alexnet"].filename).write_bytes(b"")  # present: the fail-fast check passes
    monkeypatch.setattr(lpips_mod, "LPIPSNetwork", _RecordingLPIPS)
    _, prov = lpips_submetric(EvalOptions(precision="bf16"))
    assert (prov["precision"], prov["precision_effective"], prov["weights"]) == ("bf16", "bf16", "cache:alexnet")
    _, prov = lpips_submetric(EvalOptions(precision="bf16"), network=_RecordingLPIPS())
    assert (prov["precision"], prov["weights"]) == ("float32", "injected")


def test_shared_i3d_is_one_object_per_precision(planted_weights):
    from devil_dataset.eval.metrics.i3d import PVCSMetric, VFIDMetric, video_pass

    planted_weights("i3d", random_i3d_state(seed=0))
    f32, bf = EvalOptions(), EvalOptions(precision="bf16")
    pvcs, vfid = PVCSMetric(f32), VFIDMetric(f32)
    pvcs_bf, vfid_bf = PVCSMetric(bf), VFIDMetric(bf)
    assert pvcs.net is vfid.net and pvcs_bf.net is vfid_bf.net  # PVCS and VFID share one pass per precision
    assert pvcs.net is not pvcs_bf.net and (pvcs.net.precision, pvcs_bf.net.precision) == ("float32", "bf16")
    assert pvcs.net.Mixed_5c is pvcs_bf.net.Mixed_5c  # one set of weights in memory
    assert pvcs_bf.provenance()["precision"] == "bf16" and vfid.provenance()["precision"] == "float32"
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (10, 24, 32, 3), dtype=np.uint8)
    video = VideoSample("v", gt, 255 - gt, np.ones((10, 24, 32), bool))
    a, b = video_pass(pvcs.net, video, f32), video_pass(pvcs_bf.net, video, bf)
    assert a is video_pass(vfid.net, video, f32) and a is not b  # the sample keeps one pass per precision
    assert not np.array_equal(a.gt_windows, b.gt_windows)
    np.testing.assert_allclose(b.pvcs, a.pvcs, rtol=0.05)


def test_raft_flows_follow_the_precision(planted_weights):
    from devil_dataset.core.flow import flow_estimator
    from devil_dataset.eval.metrics.fidelity import FFBetaMetric
    from devil_dataset.eval.metrics.warp import WarpErrorMetric

    planted_weights("raft", random_raft_state(seed=0))
    f32 = flow_estimator("raft")
    bf = flow_estimator("raft", precision="bf16")
    raft_f32, raft_bf = f32._batch.__self__, bf._batch.__self__
    assert (raft_f32.precision, raft_bf.precision) == ("float32", "bf16") and raft_f32.model is raft_bf.model
    assert flow_estimator("raft", precision="bf16")._batch.__self__ is raft_bf
    warp = WarpErrorMetric(EvalOptions(flow="raft", precision="bf16"))
    assert warp.flow._batch.__self__ is raft_bf
    assert warp.provenance()["precision"] == "bf16"
    beta = FFBetaMetric(EvalOptions(flow="raft", precision="tf32"))
    assert (beta.provenance()["precision"], beta.provenance()["precision_effective"]) == ("tf32", "float32")
    assert "precision" not in FFBetaMetric(EvalOptions(flow="dis")).provenance()  # no network, nothing to record
    warp_ident = gc.prepare_identity(warp)
    assert warp_ident is not None and warp_ident["precision"] == "bf16"
    other = gc.prepare_identity(WarpErrorMetric(EvalOptions(flow="raft")))
    assert other is not None and gc.prepare_key("a" * 64, other) != gc.prepare_key("a" * 64, warp_ident)


def test_fid_gt_cache_key_differs_by_precision(monkeypatch):
    from devil_dataset.eval.metrics import perceptual

    monkeypatch.setattr(perceptual, "weights_info", lambda name: {"sha256": "1" * 64})

    def fid(precision: str) -> perceptual.FIDMetric:  # a FID metric without its network
        metric = perceptual.FIDMetric.__new__(perceptual.FIDMetric)
        metric.options, metric._injected = EvalOptions(precision=precision), False
        return metric

    idents = {p: gc.prepare_identity(fid(p)) for p in ("float32", "tf32", "bf16")}
    assert {p: i["precision"] for p, i in idents.items() if i is not None} == {p: p for p in idents}
    keys = {gc.prepare_key("b" * 64, i) for i in idents.values() if i is not None}
    assert len(keys) == 3

"""RC-S / RC-T and the background / masked PSNR / SSIM on the package's own inputs: a release-layout
folder through ``evaluate_directory`` beside the reference metrics, each metric's direction from the registry."""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("transformers", reason="the removal metrics' DINOv2 needs the [removal] extra")

from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import higher_is_better, metric_entry
from devil_dataset.eval.protocols.devil.run import evaluate_directory
from devil_dataset.eval.protocols.prove.removal import RCSMetric, RCTMetric, removal_scores

from ...prove_data import tiny_dinov2_folder


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_dinov2_folder(str(tmp_path_factory.mktemp("dino")), hidden_size=16, layers=1)


def test_directions_are_declared_once():
    assert not higher_is_better("rc_t") and higher_is_better("rc_s")
    assert all(higher_is_better(k) for k in ("bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim"))
    assert metric_entry("rc_s").needs_weights and not metric_entry("bg_psnr").needs_weights


def test_release_layout_scores_rc_beside_psnr(model, eval_release_dirs):
    gt_dir, pred_dir = eval_release_dirs
    options = EvalOptions(dino_model=str(model))
    doc = evaluate_directory(gt_dir, pred_dir, ["psnr", "rc_s", "rc_t", "bg_psnr"], options, progress=False)
    assert {"psnr", "rc_s", "rc_t", "bg_psnr"} <= set(doc["summary"])
    rows = list(doc["videos"].values())
    assert all(0 < r["rc_s"] <= 1 for r in rows if not math.isnan(r["rc_s"]))
    assert doc["provenance"]["options"]["dino_model"] == str(model)


def test_metric_equals_the_function(model, eval_samples):
    from devil_dataset.core.networks.dinov2 import load_dinov2

    net = load_dinov2(str(model))
    video: VideoSample = eval_samples[0]
    s, t = RCSMetric(EvalOptions(), network=net), RCTMetric(EvalOptions(), network=net)
    direct = removal_scores(video.pred, video.hole.astype(np.uint8) * 255, net.patch_features,
                            arithmetic="float32")
    assert s.update(video)["rc_s"] == pytest.approx(direct.rc_s, rel=1e-12, nan_ok=True)
    assert t.update(video)["rc_t"] == pytest.approx(direct.rc_t, rel=1e-12, nan_ok=True)
    assert s.provenance()["dino"]["sha256"] and t.provenance()["higher_is_better"] is False
    assert len(video.cache) == 1  # one DINOv2 pass per crop served both metrics

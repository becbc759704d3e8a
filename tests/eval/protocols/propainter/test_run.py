"""``evaluate_propainter`` on generated DAVIS-layout data against the protocol restated step by step
(``tests/eval/davis_data.py``): PSNR / SSIM within 1e-9, VFID within 1e-4 relative with the same (random) weights."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError, UnknownNameError
from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
from devil_dataset.eval.kernels.frechet import GaussianStats
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.protocols.propainter.run import evaluate_propainter, vfid_of
from devil_dataset.eval.protocols.registry import get_protocol
from devil_dataset.eval.scoring.results import dumps, options_record, read_results, write_results

from ...davis_data import (
    TEST_SIZE,
    reference_mask,
    reference_table,
    reference_vfid,
    reference_videos,
    write_davis_layout,
)


@pytest.fixture(scope="module")
def davis(tmp_path_factory):
    return write_davis_layout(tmp_path_factory.mktemp("davis"), (5, 3, 6))


@pytest.fixture(scope="module")
def i3d():
    return load_i3d(state=random_i3d_state(seed=0))


def test_psnr_and_ssim_equal_the_restated_protocol_frame_weighted(davis):
    doc = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["psnr", "ssim"], size=TEST_SIZE)
    ref = reference_table(davis, TEST_SIZE)
    assert doc["summary"]["psnr"] == pytest.approx(ref["psnr"], abs=1e-9)
    assert doc["summary"]["ssim"] == pytest.approx(ref["ssim"], abs=1e-9)
    assert doc["num_frames"] == 14 and doc["frame_counts"] == {"v0": 5, "v1": 3, "v2": 6}
    # frame weighting: the summary is not the mean of the per-video means (videos of 5, 3 and 6 frames)
    video_mean = np.mean([doc["videos"][v]["psnr"] for v in ("v0", "v1", "v2")])
    weighted = sum(doc["videos"][v]["psnr"] * n for v, n in doc["frame_counts"].items()) / 14
    assert doc["summary"]["psnr"] == pytest.approx(weighted, abs=1e-9)
    assert abs(video_mean - doc["summary"]["psnr"]) > 1e-3
    u = doc["uncertainty"]["psnr"]
    assert u["n"] == 3 and u["frames"] == 14 and u["ci"][0] <= u["mean"] <= u["ci"][1]


def test_results_record_the_protocol_and_are_deterministic(davis, tmp_path):
    kwargs = dict(size=TEST_SIZE, method="m")
    a = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["psnr", "hole_psnr"], **kwargs)
    b = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["psnr", "hole_psnr"], **kwargs)
    assert dumps(a) == dumps(b)
    assert a["protocol"] == "propainter" and a["parity"] == "release"
    assert a["provenance"]["options"]["protocol"] == "propainter"
    assert a["provenance"]["protocol"]["dilation"] == "3x3 cross, 4 iterations"
    assert "protocol" not in options_record(EvalOptions())  # DEVIL's results files keep their bytes
    path = write_results(tmp_path / "r.json", a)
    assert read_results(path)["summary"]["psnr"] == pytest.approx(a["summary"]["psnr"])
    assert a["summary"]["hole_psnr"] < a["summary"]["psnr"]
    assert json.loads(path.read_text())["protocol"] == "propainter"


def _vfid_doc(davis, i3d, parity: str) -> dict:
    return evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["vfid"], EvalOptions(parity=parity),
                               size=TEST_SIZE, networks={"i3d": i3d})


def test_vfid_equals_the_restated_protocol_with_batch_norm_in_training_mode(davis, i3d):
    """Parity ``release``: their script leaves the I3D in training mode (each video's own BatchNorm statistics); the
    DEVIL way (eval mode) gives another number, so this fails if the step is done that way."""
    running = {k: v.clone() for k, v in i3d.state_dict().items()}
    doc = _vfid_doc(davis, i3d, "release")
    assert doc["summary"]["vfid"] == pytest.approx(reference_vfid(davis, TEST_SIZE, i3d, True), rel=1e-4)
    assert all(torch.equal(running[k], v) for k, v in i3d.state_dict().items())  # running statistics untouched
    assert not i3d.training
    assert doc["provenance"]["protocol"]["vfid"]["batch_norm"] == "video"
    assert doc["provenance"]["vfid"]["rank_deficient"] is True and doc["provenance"]["vfid"]["videos"] == 3


@pytest.mark.slow
def test_vfid_corrected_parity_is_eval_mode_and_another_number(davis, i3d):
    release, corrected = _vfid_doc(davis, i3d, "release"), _vfid_doc(davis, i3d, "corrected")
    assert corrected["summary"]["vfid"] == pytest.approx(reference_vfid(davis, TEST_SIZE, i3d, False), rel=1e-4)
    assert abs(corrected["summary"]["vfid"] - release["summary"]["vfid"]) > 1e-3 * abs(release["summary"]["vfid"])
    assert corrected["provenance"]["protocol"]["vfid"]["batch_norm"] == "running"


def test_vfid_passes_real_and_composite_videos_alone(davis, i3d):
    """In training mode a shared batch would mix the two videos' statistics: a batch of two gives another vector."""
    from devil_dataset.eval.protocols.propainter.i3d import video_feature

    _, gts, comps = next(iter(reference_videos(davis, TEST_SIZE)))
    alone = video_feature(i3d, np.stack(gts), "video")
    x = torch.from_numpy(np.stack([np.stack(gts), np.stack(comps)])).permute(0, 4, 1, 2, 3).float() / 255
    from devil_dataset.eval.protocols.propainter.i3d import video_batch_statistics

    with torch.inference_mode(), video_batch_statistics(i3d):
        shared = i3d.endpoints(x, ("Mixed_5c",))[0].mean(4).mean(3).mean(2)[0].double().numpy()
    assert np.abs(alone - shared).max() > 1e-4


def test_vfid_never_crashes_on_few_videos():
    rng = np.random.default_rng(0)
    real, fake = GaussianStats(), GaussianStats()
    real.add(rng.normal(size=(3, 64)))
    fake.add(rng.normal(size=(3, 64)) + 0.5)
    value, note = vfid_of(real, fake)
    assert np.isfinite(value) and note["rank_deficient"] and note["covariance_rank_at_most"] == 2
    one_real, one_fake = GaussianStats(), GaussianStats()
    one_real.add(rng.normal(size=(1, 64)))
    one_fake.add(rng.normal(size=(1, 64)))
    value, note = vfid_of(one_real, one_fake)
    assert np.isnan(value) and "fewer than 2 videos" in note["value"]


def test_ewarp_with_a_named_flow(davis):
    zero = lambda a, b: np.zeros((*a.shape[:2], 2), np.float32)  # noqa: E731
    doc = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["ewarp"], size=TEST_SIZE,
                              flow_fn=zero)
    expected = []
    for _, _, comps in reference_videos(davis, TEST_SIZE):
        c = np.stack(comps).astype(np.float32) / 255
        expected.append(np.mean([np.mean((c[t + 1] - c[t]).astype(np.float64) ** 2) for t in range(len(c) - 1)]))
    assert doc["summary"]["ewarp"] == pytest.approx(np.mean(expected), rel=1e-6)  # video-weighted
    assert doc["provenance"]["protocol"]["ewarp"]["flow"] == "injected"


def test_hole_lpips_is_the_lpips_of_the_dilated_holes_box(davis):
    from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state
    from devil_dataset.eval.protocols.propainter.kernels import hole_crop

    net = LPIPSNetwork("cpu", random_alexnet_state(0))
    doc = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["hole_lpips"], size=TEST_SIZE,
                              networks={"lpips": net})
    values = []
    for name, gts, comps in reference_videos(davis, TEST_SIZE):
        masks = [reference_mask(davis.mask_dir / name / f"{i:05d}.png", TEST_SIZE)[..., 0] > 0 for i in range(len(gts))]
        for g, c, m in zip(gts, comps, masks):
            box = hole_crop(m)
            values.append(float(net.distance(g[box][None], c[box][None])[0]))
    assert doc["summary"]["hole_lpips"] == pytest.approx(np.mean(values), rel=1e-9)  # frame-weighted
    assert doc["provenance"]["weights"]["alexnet"]["verified"].startswith("injected")


def test_bad_metric_and_bad_layout_errors(davis, tmp_path):
    with pytest.raises(UnknownNameError, match="unknown protocol 'pro'"):
        get_protocol("pro")
    with pytest.raises(UnknownNameError, match="unknown metric of the propainter protocol 'lpips'"):
        evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["lpips"])
    with pytest.raises(DevilError, match="prediction folder does not exist"):
        evaluate_propainter(davis.gt_dir, davis.mask_dir, tmp_path / "none", ["psnr"], size=TEST_SIZE)


@pytest.mark.slow
def test_workers_give_the_same_document(davis):
    one = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["psnr", "ssim"], size=TEST_SIZE)
    two = evaluate_propainter(davis.gt_dir, davis.mask_dir, davis.pred_dir, ["psnr", "ssim"], size=TEST_SIZE,
                              workers=2)
    assert dumps(one) == dumps(two)

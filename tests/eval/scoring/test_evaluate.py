"""One pass over videos: summary/per-video values, clipping, metric selection, directory and dataset modes."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError, WeightsMissingError
from devil_dataset.eval.kernels.pixel import pcons_psnr_mask, psnr, ssim
from devil_dataset.eval.metrics import registry
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.protocols.devil.run import evaluate_directory
from devil_dataset.eval.scoring import evaluate as ev_mod
from devil_dataset.eval.scoring.evaluate import evaluate_dataset
from devil_dataset.eval.scoring.one_pass import evaluate
from devil_dataset.eval.scoring.results import dumps, locate_inputs, read_results, write_results

from ..conftest import slice_rows

PIXEL = ["psnr", "ssim", "pcons"]


def test_evaluate_summary_is_mean_of_videos(eval_samples):
    metrics, skipped = build_metrics(PIXEL, EvalOptions())
    assert skipped == {}
    ev = evaluate(eval_samples, metrics, progress=False)
    assert list(ev.videos) == ["clip0", "clip1", "clip2"]
    for s in eval_samples:
        row = ev.videos[s.clip_id]
        assert row["psnr"] == pytest.approx(psnr(s.composite, s.gt), abs=1e-12)
        assert row["ssim"] == pytest.approx(ssim(s.composite, s.gt), abs=1e-12)
        assert row["pcons_psnr_mask"] == pytest.approx(pcons_psnr_mask(s.composite, s.hole), abs=1e-12)
    for key in ("psnr", "ssim", "pcons_psnr_mask"):
        assert ev.summary[key] == pytest.approx(np.mean([r[key] for r in ev.videos.values()]), abs=1e-12)
    assert ev.num_frames == 12 and ev.clipped == {}


def test_perfect_video_is_clipped_to_best_finite(eval_samples):
    perfect = VideoSample("perfect", eval_samples[0].gt, eval_samples[0].gt, eval_samples[0].hole)
    metrics, _ = build_metrics(["psnr", "ssim"], EvalOptions())
    ev = evaluate([perfect] + eval_samples, metrics, progress=False)
    best = max(ev.videos[c]["psnr"] for c in ("clip0", "clip1", "clip2"))
    assert ev.videos["perfect"]["psnr"] == best and ev.videos["perfect"]["ssim"] == 1.0
    assert ev.clipped == {"psnr": ["perfect"]}
    assert ev.summary["psnr"] == pytest.approx(np.mean([r["psnr"] for r in ev.videos.values()]))


def test_duplicate_clip_rejected(eval_samples):
    metrics, _ = build_metrics(["psnr"], EvalOptions())
    with pytest.raises(DevilError, match="appears twice"):
        evaluate([eval_samples[0], eval_samples[0]], metrics, progress=False)


@dataclass(frozen=True)
class _FakeEntry(registry.MetricEntry):
    error: Exception | None = None

    def create(self, options):
        raise self.error


def test_default_metrics_skip_missing_weights_explicit_fails(monkeypatch):
    entry = _FakeEntry("fake", "x:y", ("fake",), (True,), (".2f",), True,
                       error=WeightsMissingError("fake.pth missing; run devil weights import PATH"))
    broken = _FakeEntry("broken", "x:y", ("broken",), (True,), (".2f",), False, error=ImportError("no module x"))
    monkeypatch.setitem(registry.METRICS, "fake", entry)
    monkeypatch.setitem(registry.METRICS, "broken", broken)
    monkeypatch.setattr(registry, "DEVIL_METRICS", ("psnr", "fake", "broken"))
    metrics, skipped = build_metrics(None, EvalOptions())
    assert list(metrics) == ["psnr"]
    assert "fake.pth missing" in skipped["fake"] and "no module x" in skipped["broken"]
    with pytest.raises(WeightsMissingError):
        build_metrics(["psnr", "fake"], EvalOptions())
    with pytest.raises(DevilError, match="broken: implementation not available"):
        build_metrics(["broken"], EvalOptions())
    with pytest.raises(DevilError, match="unknown metric"):
        build_metrics(["nope"], EvalOptions())


def test_directory_mode_results_document(eval_release_dirs, tmp_path):
    gt_dir, pred_dir = eval_release_dirs
    doc = evaluate_directory(gt_dir, pred_dir, PIXEL, EvalOptions(), progress=False)
    assert doc["method"] == "pred" and doc["slice"] is None and doc["num_videos"] == 3
    assert set(doc["summary"]) == {"psnr", "ssim", "pcons_psnr_mask"}
    assert doc["provenance"]["inputs"]["prediction_layout"] == "frames"
    assert doc["provenance"]["metrics"]["ssim"]["data_range"] == 2.0
    out = write_results(tmp_path / "r.json", doc)
    again = read_results(out)
    assert again["summary"] == pytest.approx(doc["summary"])
    # determinism: the same inputs give byte-identical documents (input paths located as write_results does)
    again_doc = evaluate_directory(gt_dir, pred_dir, PIXEL, EvalOptions(), progress=False)
    assert dumps(locate_inputs(again_doc, out)) == out.read_text()


def test_directory_mode_validates_before_computing(eval_release_dirs, monkeypatch):
    gt_dir, pred_dir = eval_release_dirs
    (pred_dir / "clip2" / "frame_0000_pred.png").unlink()
    called = []
    monkeypatch.setattr(ev_mod, "build_metrics", lambda *a, **k: called.append(1))
    with pytest.raises(DevilError, match="clip2"):
        evaluate_directory(gt_dir, pred_dir, PIXEL, EvalOptions(), progress=False)
    assert called == []


def test_devkit_sample_scores(eval_devkit):
    inputs, outputs = eval_devkit / "sample-inpainting-inputs", eval_devkit / "sample-inpainting-outputs"
    doc = evaluate_directory(inputs, outputs, PIXEL, EvalOptions(), progress=False)
    s = doc["summary"]
    assert all(math.isfinite(v) for v in s.values())
    # reference computed the release's way: PIL composite, float32 frames, skimage per frame (SSIM in float64, as
    # the release's scikit-image 0.17.2 converts the frames before filtering)
    from PIL import Image
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    ps, ss = [], []
    for t in range(21):
        g = Image.open(inputs / f"frame_{t:04d}_gt.png")
        pred, mask = Image.open(outputs / f"frame_{t:04d}_pred.png"), Image.open(inputs / f"frame_{t:04d}_mask.png")
        c = Image.composite(g, pred, mask)
        g32, c32 = np.asarray(g, np.float32) / 255, np.asarray(c, np.float32) / 255
        ps.append(peak_signal_noise_ratio(g32, c32, data_range=1))
        ss.append(float(structural_similarity(g32.astype(np.float64), c32.astype(np.float64), win_size=7,
                                              data_range=2, channel_axis=-1)))
    assert s["psnr"] == pytest.approx(np.mean(ps), abs=1e-9)
    assert s["ssim"] == pytest.approx(np.mean(ss), abs=1e-9)
    assert 20 < s["pcons_psnr_mask"] < 60


def test_devkit_prediction_equal_to_gt(eval_devkit, tmp_path):
    from devil_dataset.core.release_format import read_frame_pngs, write_frame_pngs

    inputs = eval_devkit / "sample-inpainting-inputs"
    write_frame_pngs(read_frame_pngs(inputs, "gt"), tmp_path / "perfect", "pred")
    doc = evaluate_directory(inputs, tmp_path / "perfect", ["psnr", "ssim"], EvalOptions(), progress=False)
    assert doc["summary"]["ssim"] == 1.0
    assert doc["summary"]["psnr"] == math.inf  # infinite, and no finite value to clip to
    assert doc["videos"]["sample-inpainting-inputs"]["psnr"] == math.inf
    assert doc["clipped"] == {"psnr": ["sample-inpainting-inputs"]}
    back = json.loads(dumps(doc))  # strict JSON: "inf" as a string, never the float64 maximum
    assert back["summary"]["psnr"] == "inf" and back["videos"]["sample-inpainting-inputs"]["psnr"] == "inf"


def test_dataset_mode_end_to_end_tiny_slice(eval_samples, tmp_path):
    from devil_dataset.core.release_format import write_frame_pngs

    for s in eval_samples:
        write_frame_pngs(s.pred, tmp_path / "mymethod" / s.clip_id, "pred")
    doc = evaluate_dataset("tiny", "fg_size_high", tmp_path / "mymethod", PIXEL, EvalOptions(), progress=False,
                           rows=slice_rows(eval_samples))
    assert doc["method"] == "mymethod" and doc["slice"] == "fg_size_high" and doc["num_videos"] == 3
    direct = evaluate(eval_samples, build_metrics(PIXEL, EvalOptions())[0], progress=False)
    assert doc["summary"] == direct.summary and doc["videos"] == direct.videos


def test_dataset_mode_validation_lists_all_clips(eval_samples, tmp_path):
    from devil_dataset.core.release_format import write_frame_pngs

    write_frame_pngs(eval_samples[0].pred[:2], tmp_path / "m" / "clip0", "pred")
    write_frame_pngs(eval_samples[1].pred, tmp_path / "m" / "clip1", "pred")
    with pytest.raises(DevilError) as err:
        evaluate_dataset(
            "tiny", "all", tmp_path / "m", PIXEL, EvalOptions(), progress=False, rows=slice_rows(eval_samples)
        )
    msg = str(err.value)
    assert "2 of 3 clips" in msg and "clip0: 2 predicted frames (frame_%04d_pred.png), expected 4" in msg
    assert "clip2: prediction missing" in msg


def _write_tiny_dataset(root, config, samples):
    """A dataset folder as `devil build` lays it out (data/<config>/test-*.parquet), PNG frames (lossless)."""
    from devil_dataset.builder.dataset_writer import shard_path, write_shard
    from devil_dataset.core.dataset_schema import encode_frames, encode_hole

    rows = [{"clip_id": s.clip_id, "mask_id": f"m{i}", "frames": encode_frames(s.gt, "png"),
             "hole": encode_hole(s.hole), "num_frames": s.num_frames, "height": s.gt.shape[1], "width": s.gt.shape[2]}
            for i, s in enumerate(samples)]
    write_shard(shard_path(root, config, 0, 1), rows)
    return root


def test_dataset_mode_reads_a_built_dataset_folder(eval_samples, tmp_path, capsys):
    from devil_dataset.cli import main
    from devil_dataset.core.release_format import write_frame_pngs

    ds = _write_tiny_dataset(tmp_path / "ds", "camera_motion_high", eval_samples)
    for s in eval_samples:
        write_frame_pngs(s.pred, tmp_path / "preds" / s.clip_id, "pred")
    rc = main(["evaluate", "--dataset", str(ds), "--config", "camera_motion_high", "--predictions",
               str(tmp_path / "preds"), "--metrics", "psnr", "ssim", "pcons", "--json", "--no-progress"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    direct = evaluate(eval_samples, build_metrics(PIXEL, EvalOptions())[0], progress=False)
    assert doc["slice"] == "camera_motion_high" and doc["method"] == "preds"
    assert doc["summary"] == pytest.approx(direct.summary) and list(doc["videos"]) == list(direct.videos)


def test_skipped_metric_keys_are_null_in_summary(eval_release_dirs, monkeypatch):
    entry = _FakeEntry("fake", "x:y", ("fake_a", "fake_b"), (True, True), (".2f", ".2f"), True,
                       error=WeightsMissingError("fake.pth missing"))
    monkeypatch.setitem(registry.METRICS, "fake", entry)
    monkeypatch.setattr(registry, "DEVIL_METRICS", ("psnr", "fake"))
    doc = evaluate_directory(*eval_release_dirs, None, EvalOptions(device="cpu"), progress=False)
    parsed = json.loads(dumps(doc))
    assert parsed["summary"]["fake_a"] is None and parsed["summary"]["fake_b"] is None
    assert parsed["skipped"] == {"fake": "fake.pth missing"} and parsed["metrics"] == ["psnr"]


def test_result_keys_work_as_metric_names():
    metrics, _ = build_metrics(["pcons_psnr_mask", "psnr", "pcons"], EvalOptions())
    assert list(metrics) == ["pcons", "psnr"]


@pytest.mark.slow
def test_all_devil_metrics_in_one_pass_with_random_networks(eval_make_video):
    """Every DEVIL metric in one evaluate() call (random weights, tiny clips). Slow: ~1.5 CPU-minutes, most of
    it the 2048-d Frechet distance and I3D on CPU."""
    import warnings

    from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
    from devil_dataset.core.networks.inception import FIDInception, random_inception_state
    from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state
    from devil_dataset.eval import metrics as M

    opts = EvalOptions(device="cpu", flow="dis")
    metrics, _ = build_metrics(PIXEL, opts)
    i3d = load_i3d("cpu", random_i3d_state())
    metrics.update({
        "lpips": M.LPIPSMetric(opts, network=LPIPSNetwork("cpu", random_alexnet_state())),
        "pvcs": M.PVCSMetric(opts, network=i3d),
        "fid": M.FIDMetric(opts, network=FIDInception("cpu", random_inception_state())),
        "vfid": M.VFIDMetric(opts, network=i3d),
        "warp_error": M.WarpErrorMetric(opts),
    })
    videos = [VideoSample(f"c{i}", *eval_make_video(i, t=11, h=64, w=64, hole_box=(20, 20, 16, 16))) for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random features: singular covariances
        ev = evaluate(videos, metrics, progress=False)
    from devil_dataset.eval.scoring.results import build_results

    doc = json.loads(dumps(build_results(ev, method="m", slice_name="all", inputs={}, options=opts,
                                         metrics=list(metrics), skipped={})))
    assert set(doc["summary"]) == {"psnr", "ssim", "lpips", "pvcs", "fid", "vfid", "vfid_clips", "warp_error_mask",
                                   "pcons_psnr_mask"}
    assert all(isinstance(v, float) and math.isfinite(v) for v in doc["summary"].values())
    assert set(doc["videos"]["c0"]) == {"psnr", "ssim", "lpips", "pvcs", "warp_error_mask", "pcons_psnr_mask"}
    assert doc["provenance"]["flow_backend"] == {"warp_error": "dis"}


def test_every_missing_weights_file_is_named(monkeypatch):
    """`--metrics pvcs fid` with both weights missing names both files, not only the first."""
    a = _FakeEntry("fa", "x:y", ("fa",), (True,), (".2f",), True,
                   error=WeightsMissingError("rgb_imagenet.pt missing; run devil weights import PATH"))
    b = _FakeEntry("fb", "x:y", ("fb",), (True,), (".2f",), True,
                   error=WeightsMissingError("pt_inception.pth missing; run devil weights import PATH"))
    monkeypatch.setitem(registry.METRICS, "fa", a)
    monkeypatch.setitem(registry.METRICS, "fb", b)
    with pytest.raises(WeightsMissingError) as err:
        build_metrics(["psnr", "fa", "fb"], EvalOptions())
    assert "rgb_imagenet.pt" in str(err.value) and "pt_inception.pth" in str(err.value)

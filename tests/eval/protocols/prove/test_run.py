"""``evaluate_prove`` on generated PROVE-layout sets of small ``.mp4``: values equal the plain
restatement of PROVE's code (``benchmarks/prove_reference.py``) to 1e-4 relative with the same random tiny DINOv2;
bad input is reported, never dropped silently."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

pytest.importorskip("transformers", reason="the removal metrics' DINOv2 needs the [removal] extra")
import torch

from devil_dataset.core.errors import DevilError
from devil_dataset.core.networks.dinov2 import load_dinov2
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.protocols.prove.layout import list_prove_videos, read_prove_video
from devil_dataset.eval.protocols.prove.run import evaluate_prove, removal_lines

from ...conftest import load_benchmark
from ...prove_data import CASES, tiny_dinov2_folder, write_prove_layout


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_dinov2_folder(str(tmp_path_factory.mktemp("dino")), hidden_size=32, layers=2)


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return write_prove_layout(tmp_path_factory.mktemp("prove"))


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _reference(model, dirs, names):
    ref = load_benchmark("prove_reference")
    net = load_dinov2(str(model))
    sub = [d.parent / f"{d.name}-ref" for d in dirs]
    for d, s in zip(dirs, sub):
        s.mkdir(exist_ok=True)
        for n in names:
            shutil.copy(d / f"{n}.mp4", s / f"{n}.mp4")
    return ref.folder_values(ref.ReferenceDino(ref.transformers_model(model), net.processor), *sub)


def _assert_equal(doc, ref, tol=1e-4):
    for name, values in ref.items():
        for m in ("rc_s", "rc_t"):
            ours = doc["videos"][name][m]
            if math.isnan(values[m]):
                assert math.isnan(ours), (name, m)
            else:
                assert ours == pytest.approx(values[m], rel=tol), (name, m)


def test_values_equal_the_restatement_of_their_code(model, layout, one_thread):
    names = ("two_parts", "small", "empty")  # two components + a speck, all-small + resized result, no object
    ref = _reference(model, layout, names)
    doc = evaluate_prove(*layout, options=EvalOptions(protocol="prove", dino_model=str(model)))
    _assert_equal(doc, ref)
    assert doc["num_videos"] == len(CASES) and doc["unmatched"] == {}
    assert doc["unscored"] == {"rc_s": ["empty"], "rc_t": ["empty"]}
    scored = [doc["videos"][n]["rc_s"] for n in CASES if n != "empty"]
    assert doc["summary"]["rc_s"] == pytest.approx(float(np.mean(scored)), rel=1e-12)
    assert doc["directions"] == {"rc_s": "higher", "rc_t": "lower", "bg_psnr": "higher", "bg_ssim": "higher",
                                 "masked_psnr": "higher", "masked_ssim": "higher"}  # the defaults: every metric
    assert doc["provenance"]["dino"]["sha256"] and doc["provenance"]["dino"]["weights_file"] == "model.safetensors"
    assert doc["uncertainty"]["rc_s"]["n"] == len(CASES) - 1 and len(doc["uncertainty"]["rc_t"]["ci"]) == 2
    notes = doc["input_notes"]
    assert notes["small"]["result_resized"] == {"from": [112, 88], "to": [96, 80]}
    assert notes["moving"]["non_binary_mask"]["non_binary_frames"] > 0  # mp4v masks: lossy, read as PROVE reads them
    assert notes["moving"]["mask_values"]["kind"] == "lossy" and "mask_values" not in notes["empty"]


@pytest.mark.slow
def test_every_case_equals_the_restatement_in_both_parities(model, layout, one_thread):
    ref = _reference(model, layout, CASES)
    _assert_equal(evaluate_prove(*layout, options=EvalOptions(protocol="prove", dino_model=str(model))), ref)
    corrected = evaluate_prove(*layout, options=EvalOptions(protocol="prove", dino_model=str(model),
                                                            parity="corrected"))
    _assert_equal(corrected, ref, tol=1e-3)  # float64 MMDs: their float32 rounding only


def test_each_distinct_crop_goes_through_the_network_once(model, layout):
    doc = evaluate_prove(*layout, ["rc_s", "rc_t"], EvalOptions(protocol="prove", dino_model=str(model)))
    corner = doc["video_counts"]["corner"]  # a still mask: RC-S's crop is RC-T's, one pass per frame
    assert corner["forward_crops"] == doc["frame_counts"]["corner"]
    moving = doc["video_counts"]["moving"]  # a moving mask: the per-frame square and each pair's union square differ
    assert moving["forward_crops"] <= 3 * doc["frame_counts"]["moving"] - 2


def test_unmatched_names_are_listed(model, tmp_path):
    dirs = write_prove_layout(tmp_path, cases=("moving", "corner"))
    (dirs[2] / "corner.mp4").unlink()
    doc = evaluate_prove(*dirs, ["rc_s"], EvalOptions(protocol="prove", dino_model=str(model)))
    assert list(doc["videos"]) == ["moving"] and doc["unmatched"] == {"corner": ["masks"]}
    assert "corner: not in masks, not scored" in removal_lines(doc)


def test_unreadable_video_is_an_error_naming_it(model, tmp_path):
    dirs = write_prove_layout(tmp_path, cases=("moving",))
    (dirs[1] / "moving.mp4").write_bytes(b"not a video")
    with pytest.raises(DevilError, match="moving.mp4: unreadable video"):
        evaluate_prove(*dirs, options=EvalOptions(protocol="prove", dino_model=str(model)))


def test_frame_folders_read_like_videos(tmp_path):
    import cv2

    dirs = write_prove_layout(tmp_path / "v", cases=("moving",))
    folders = []
    for d in dirs:
        out = tmp_path / "f" / d.name / "moving"
        out.mkdir(parents=True)
        cap = cv2.VideoCapture(str(d / "moving.mp4"))
        t = 0
        while True:
            ok, f = cap.read()
            if not ok:
                break
            cv2.imwrite(str(out / f"{t:05d}.png"), f)
            t += 1
        folders.append(out.parent)
    a = read_prove_video(list_prove_videos(*dirs).videos[0])
    b = read_prove_video(list_prove_videos(*folders).videos[0])
    np.testing.assert_array_equal(a.result, b.result)
    np.testing.assert_array_equal(a.masks, b.masks)


def test_missing_model_is_a_clear_error(tmp_path):
    from devil_dataset.core.errors import WeightsMissingError

    with pytest.raises(WeightsMissingError, match="not in the Hugging Face cache"):
        load_dinov2("nobody/no-such-dinov2")
    with pytest.raises(WeightsMissingError, match="lacks config.json"):
        load_dinov2(str(tmp_path))


def test_background_and_masked_metrics_against_the_input(tmp_path, capsys):
    """No DINOv2 needed; a result equal to the input outside the mask gets the capped PSNR, and the note says so."""
    import cv2
    from PIL import Image

    from devil_dataset.eval.kernels.pixel import one_grey_level_psnr

    dirs = write_prove_layout(tmp_path, cases=("moving",), resized_result=None)
    folder = tmp_path / "composited" / "moving"
    folder.mkdir(parents=True)
    from devil_dataset.eval.protocols.prove.layout import read_frames

    inputs, masks = read_frames(dirs[0] / "moving.mp4"), read_frames(dirs[2] / "moving.mp4")
    for t, (f, m) in enumerate(zip(inputs, masks)):
        out = f.copy()
        out[m[..., 0] > 127] = 0  # a crude fill, the background put back exactly
        cv2.imwrite(str(folder / f"{t:05d}.png"), cv2.cvtColor(out, cv2.COLOR_RGB2BGR))
    doc = evaluate_prove(dirs[0], folder.parent, dirs[2], ["bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim"])
    grey = np.stack([np.asarray(Image.fromarray(m).convert("L")) for m in masks]) > 127
    cap = np.mean([one_grey_level_psnr(int((~g).sum()) * 3) for g in grey])
    values = doc["videos"]["moving"]
    assert values["bg_psnr"] == pytest.approx(cap, rel=1e-12)
    assert doc["input_notes"]["moving"]["capped_frames"] == {"bg_psnr": len(masks)}
    assert 0 < values["bg_ssim"] < 1  # windows next to the hole see the fill
    assert values["masked_psnr"] < 60 and values["masked_ssim"] < 1
    assert doc["provenance"]["dino"] is None
    assert any("capped at the one-grey-level PSNR" in line for line in removal_lines(doc))


def test_davis_layout_is_read_as_frame_folders(model, tmp_path):
    """DAVIS / YouTube-VOS layout: IN = GT/JPEGImages, masks and outputs as frame folders; the outputs at 112x72 are
    resized to the masks' 160x96 (reported), values as for the same frames given as folders."""
    from ...davis_data import write_davis_layout

    data = write_davis_layout(tmp_path, (3, 2))
    doc = evaluate_prove(data.gt_dir / "JPEGImages", data.pred_dir, data.mask_dir, ["rc_s", "rc_t", "bg_psnr"],
                         EvalOptions(protocol="prove", dino_model=str(model)))
    assert list(doc["videos"]) == ["v0", "v1"] and doc["unmatched"] == {}
    assert doc["input_notes"]["v0"]["result_resized"] == {"from": [112, 72], "to": [160, 96]}
    assert all(0 < v["rc_s"] <= 1 and v["rc_t"] >= 0 and v["bg_psnr"] > 0 for v in doc["videos"].values())


def test_hub_id_read_from_the_cache_records_its_revision(model, tmp_path, monkeypatch):
    import huggingface_hub.constants

    from devil_dataset.core.atomic import file_sha256

    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "models--someone--dinov2-tiny" / "snapshots" / revision
    shutil.copytree(model, snapshot)
    (tmp_path / "models--someone--dinov2-tiny" / "refs").mkdir()
    (tmp_path / "models--someone--dinov2-tiny" / "refs" / "main").write_text(revision)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    identity = load_dinov2("someone/dinov2-tiny").identity()
    assert {k: identity[k] for k in ("name", "revision", "weights_file", "sha256")} == {
        "name": "someone/dinov2-tiny", "revision": revision, "weights_file": "model.safetensors",
        "sha256": file_sha256(model / "model.safetensors")}
    assert identity["path"] == str(snapshot.resolve()) and identity["architecture"]["model_type"] == "dinov2"

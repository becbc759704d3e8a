"""The front door: functional metrics equal the class path and the CLI; one validator with clear errors."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError, InvalidInputError, UnknownNameError
from devil_dataset.eval import Evaluator, pcons, psnr, ssim, warp_error
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring.one_pass import evaluate


@pytest.fixture
def video(eval_make_video):
    return eval_make_video(5, t=4)


def test_functional_equals_class_path(video):
    gt, pred, hole = video
    sample = VideoSample("v", gt, pred, hole)
    metrics, _ = build_metrics(["psnr", "ssim", "pcons", "warp_error"], EvalOptions(flow="dis"))
    row = {k: v for m in metrics.values() for k, v in m.update(sample).items()}
    assert psnr(pred, gt, hole) == row["psnr"]
    assert ssim(pred, gt, hole) == row["ssim"]
    assert pcons(pred, gt, hole) == row["pcons_psnr_mask"]
    assert warp_error(pred, gt, hole, flow="dis") == row["warp_error_mask"]


def test_functional_equals_cli(video, tmp_path, capsys):
    from devil_dataset.cli import main
    from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs

    gt, pred, hole = video
    write_frame_pngs(gt, tmp_path / "gt" / "v", "gt")
    write_mask_pngs(hole, tmp_path / "gt" / "v")
    write_frame_pngs(pred, tmp_path / "pred" / "v", "pred")
    assert main(["evaluate", "--gt-dir", str(tmp_path / "gt"), "--pred-dir", str(tmp_path / "pred"), "--metrics",
                 "psnr", "ssim", "pcons", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["psnr"] == psnr(pred, gt, hole)
    assert doc["summary"]["ssim"] == ssim(pred, gt, hole)
    assert doc["summary"]["pcons_psnr_mask"] == pcons(pred, gt, hole)


def test_torch_float_and_tchw_inputs_score_like_uint8(video):
    gt, pred, hole = video
    ref = psnr(pred, gt, hole)
    as_float = lambda x: torch.from_numpy(x.astype(np.float32) / 255.0)  # noqa: E731
    assert psnr(as_float(pred), as_float(gt), torch.from_numpy(hole)) == ref  # not 255x off
    tchw = lambda x: as_float(x).permute(0, 3, 1, 2)  # noqa: E731  (the training dataset's [T, 3, H, W])
    assert psnr(tchw(pred), tchw(gt), torch.from_numpy(hole)[:, None], layout="TCHW") == ref


@pytest.mark.parametrize("bad,match", [
    (lambda p: p.astype(np.float32), r"float frames must lie in \[0, 1\]"),        # 0-255 floats: no silent rescale
    (lambda p: p.astype(np.int64), "dtype int64 is not supported"),
    (lambda p: p[..., :2], "3 colour channels"),
    (lambda p: p[0], "expected 4 dimensions"),
    (lambda p: p[:2], "differs from gt's"),
    (lambda p: p.tolist(), "numpy array or a torch tensor"),
])
def test_bad_frames_get_clear_errors(video, bad, match):
    gt, pred, hole = video
    with pytest.raises(InvalidInputError, match=match):
        psnr(bad(pred), gt, hole)


def test_bad_hole_and_layout(video):
    gt, pred, hole = video
    with pytest.raises(InvalidInputError, match=r"hole: expected shape \(4, 72, 96\)"):
        psnr(pred, gt, hole[:, :10])
    with pytest.raises(InvalidInputError, match="values must be 0/1"):
        psnr(pred, gt, hole.astype(np.uint8) * 255)
    with pytest.raises(UnknownNameError, match="layout: unknown layout 'HWC'"):
        psnr(pred, gt, hole, layout="HWC")


def test_unknown_names_are_one_error_type():
    from devil_dataset.core.slices import slice_for
    from devil_dataset.inpaint import get_inpainter

    for call in (lambda: Evaluator(["nope"]), lambda: get_inpainter("nope"), lambda: slice_for("nope"),
                 lambda: ssim(np.zeros((1, 8, 8, 3), np.uint8), np.zeros((1, 8, 8, 3), np.uint8),
                              np.zeros((1, 8, 8), bool), mode="nope")):
        with pytest.raises(UnknownNameError) as info:
            call()
        assert isinstance(info.value, (DevilError, ValueError, KeyError)) and "--" not in str(info.value)


def test_evaluator_equals_engine_and_merges(eval_samples):
    names = ["psnr", "ssim", "pcons"]
    direct = evaluate(eval_samples, build_metrics(names, EvalOptions())[0], progress=False)
    whole, left, right = Evaluator(names), Evaluator(names), Evaluator(names)
    for i, s in enumerate(eval_samples):
        whole.update(s.pred, s.gt, s.hole, clip_id=s.clip_id)
        (left if i < 2 else right).update(s.pred, s.gt, s.hole, clip_id=s.clip_id)
    assert whole.compute() == direct.summary
    assert left.merge(right).compute() == direct.summary
    assert whole.results("m")["videos"] == json.loads(json.dumps(direct.videos))
    with pytest.raises(InvalidInputError, match="already scored"):
        whole.update(eval_samples[0].pred, eval_samples[0].gt, eval_samples[0].hole, clip_id=eval_samples[0].clip_id)
    whole.reset()
    with pytest.raises(DevilError, match="no video"):
        whole.compute()


def test_evaluator_refuses_to_merge_or_reset_undeclared_state(eval_samples):
    """A metric without declared state (the fidelity and self-consistency metrics) names itself, and nothing is
    merged half-way."""
    s = eval_samples[0]
    opts = EvalOptions(flow="dis")
    ev, other = Evaluator(["psnr", "unchanged_region"], opts), Evaluator(["psnr", "unchanged_region"], opts)
    ev.update(s.pred, s.gt, s.hole, clip_id="a")
    other.update(s.pred, s.gt, s.hole, clip_id="b")
    before = ev.metrics["psnr"].state_dict()
    with pytest.raises(DevilError, match="metric unchanged_region: its state cannot be merged"):
        ev.merge(other)
    assert ev.metrics["psnr"].state_dict() == before and list(ev.videos) == ["a"]
    with pytest.raises(DevilError, match="metric unchanged_region: its state cannot be reset"):
        ev.reset()


def test_a_perfect_video_alone_is_inf_not_a_sentinel(video):
    """One perfect video through Evaluator: PSNR inf in compute() and in results()."""
    from devil_dataset.eval.scoring.results import dumps

    gt, _, hole = video
    ev = Evaluator(["psnr", "ssim"])
    assert ev.update(gt, gt, hole)["psnr"] == float("inf")
    assert ev.compute() == {"psnr": float("inf"), "ssim": 1.0}
    doc = ev.results()
    assert doc["videos"]["video00000"]["psnr"] == float("inf") and doc["clipped"] == {"psnr": ["video00000"]}
    assert json.loads(dumps(doc))["summary"]["psnr"] == "inf"

"""devil_dataset/eval/scoring/clip_scoring.py: a clip's predictions scored from memory, ground-truth work shared,
with the values of the one-pass evaluation."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring.clip_scoring import ClipScorer
from devil_dataset.eval.scoring.one_pass import evaluate

from ..conftest import make_video

PIXEL = ["psnr", "ssim", "pcons", "warp_error"]
OPTIONS = EvalOptions(device="cpu", flow="dis")


def _reference(clip_id, gt, pred, hole) -> dict[str, float]:
    """The per-video row `devil evaluate` writes for one video (fresh metrics, no shared preparation)."""
    metrics, _ = build_metrics(PIXEL, OPTIONS)
    return evaluate([VideoSample(clip_id, gt, pred, hole)], metrics, progress=False).videos[clip_id]


def test_clip_scorer_equals_the_evaluation_for_every_hole_and_prediction():
    gt, pred_a, hole_a = make_video(3, t=5)
    _, _, hole_b = make_video(3, t=5, hole_box=(10, 12, 30, 36))
    pred_b = np.clip(gt.astype(np.int16) + 40, 0, 255).astype(np.uint8)
    scorer = ClipScorer("c", gt, PIXEL, OPTIONS)
    # two predictions per hole, holes in turn (the hole work is prepared once per key)
    for key, hole in (("a", hole_a), ("b", hole_b)):
        for pred in (pred_a, pred_b):
            row = scorer.score(pred, hole, key)
            assert row == _reference("c", gt, pred, hole), (key,)
    # a key seen before but not the current one: prepared again, same values
    assert scorer.score(pred_a, hole_a, "a") == _reference("c", gt, pred_a, hole_a)


def test_clip_scorer_keys_its_hole_work():
    gt, pred, hole_a = make_video(4, t=4)
    hole_b = np.roll(hole_a, 7, axis=2)
    scorer = ClipScorer("c", gt, ["warp_error"], OPTIONS)
    first = scorer.score(pred, hole_a, None)
    assert scorer.score(pred, hole_b, None) == _reference_warp(gt, pred, hole_b)  # None: never reused
    assert first == _reference_warp(gt, pred, hole_a)


def _reference_warp(gt, pred, hole):
    metrics, _ = build_metrics(["warp_error"], OPTIONS)
    return evaluate([VideoSample("c", gt, pred, hole)], metrics, progress=False).videos["c"]


def test_clip_scorer_perfect_prediction_is_unclipped_infinity():
    gt, _, hole = make_video(5, t=3)
    row = ClipScorer("c", gt, ["psnr"], OPTIONS).score(gt.copy(), hole, "h")
    assert row["psnr"] == pytest.approx(float("inf"))

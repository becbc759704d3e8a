"""Re-inpainting self-consistency (devil_dataset/eval/metrics/self_consistency.py): analytic cases and
reproducibility."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.eval.kernels.patch_masks import clip_rng
from devil_dataset.eval.kernels.pixel import psnr_frames
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import METRICS, build_metrics
from devil_dataset.eval.metrics.self_consistency import (
    SelfConsistencyMetric,
    make_submetric,
    self_consistency,
    submetric_direction,
)
from devil_dataset.eval.scoring.one_pass import evaluate

from ..conftest import panning_scene


def _video(frames=3, size=(64, 48), seed=0):
    gt = panning_scene(np.random.default_rng(seed), size, frames, (1.0, 0.0))
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 12:30, 20:44] = True
    pred = np.zeros_like(gt)
    pred[:] = 77  # a flat fill in the hole
    return VideoSample("clip-1", gt, pred, hole)


def _oracle(first):
    """A second inpainter that restores exactly the first inpainting (the identity setup)."""
    return lambda frames, hole: first.copy()


def test_identity_setup_scores_perfectly_for_every_submetric():
    v = _video()
    first = v.composite
    for name, perfect in (("psnr", math.inf), ("ssim", 1.0)):
        fn, _ = make_submetric(name)
        r = self_consistency(first, v.hole, _oracle(first), fn, np.random.default_rng(0), k=3, patch_size=8)
        assert r.value == perfect and len(r.per_k) == 3


def test_only_previously_known_pixels_are_remasked_and_the_hole_keeps_the_first_inpainting():
    v = _video()
    first = v.composite
    seen = []

    def recording(frames, hole):
        seen.append((frames.copy(), hole.copy()))
        return np.where(hole[..., None], 200, frames).astype(np.uint8)

    r = self_consistency(first, v.hole, recording, psnr_frames, np.random.default_rng(1), k=4, patch_size=8)
    assert len(seen) == 4
    for frames, m2 in seen:
        assert not (m2 & v.hole).any()  # the original hole is never re-masked ...
        assert (frames[v.hole] == first[v.hole]).all()  # ... and is given filled with the first inpainting
        assert (frames[m2] == 0).all()  # re-masked pixels are blanked before the second inpainter sees them
        assert m2.any()
    assert 0.0 < r.remasked_fraction < 1.0


def test_score_is_the_mean_over_k_of_the_frame_mean_submetric():
    # First inpainting: flat grey 100; the second inpainter fills every re-masked pixel with 110.
    first = np.full((2, 32, 32, 3), 100, np.uint8)
    hole = np.zeros((2, 32, 32), bool)
    hole[:, 8:16, 8:16] = True
    masks = []

    def plus_ten(frames, m2):
        masks.append(m2.copy())
        return np.where(m2[..., None], 110, frames).astype(np.uint8)

    r = self_consistency(first, hole, plus_ten, psnr_frames, np.random.default_rng(2), k=5, patch_size=4)
    expected = []
    for m2 in masks:
        frac = m2.reshape(2, -1).mean(axis=1)  # MSE per frame = (10/255)^2 * re-masked fraction
        with np.errstate(divide="ignore"):
            expected.append(np.mean(10 * np.log10(1.0 / ((10 / 255) ** 2 * frac))))
    assert r.per_k == pytest.approx(expected)
    assert r.value == pytest.approx(np.mean(expected))


def test_metric_is_reproducible_and_seeded_by_clip_and_seed():
    v = _video(frames=2)
    opts = EvalOptions(self_consistency_submetric="psnr", self_consistency_k=3, seed=4)
    a = SelfConsistencyMetric(opts, patch_size=8).score(v)
    b = SelfConsistencyMetric(opts, patch_size=8).score(v)
    assert a == b  # same seed + clip: identical masks, ratios and scores (telea is deterministic)
    c = SelfConsistencyMetric(EvalOptions(self_consistency_submetric="psnr", self_consistency_k=3, seed=5),
                              patch_size=8).score(v)
    assert c.ratios != a.ratios
    assert all(0.2 <= x <= 0.6 for x in a.ratios)
    expected_first_ratio = 0.2 + 0.4 * clip_rng(4, "clip-1").random()
    assert a.ratios[0] == pytest.approx(expected_first_ratio)


def test_a_worse_first_inpainting_scores_worse_with_telea():
    # A textured clip: the GT-filled composite is more self-consistent than a noise-filled one.
    v = _video(frames=2, size=(96, 64))
    rng = np.random.default_rng(0)
    noisy = rng.integers(0, 256, v.gt.shape, dtype=np.uint8)
    opts = EvalOptions(self_consistency_submetric="psnr", self_consistency_k=4)
    good = SelfConsistencyMetric(opts, patch_size=8).update(VideoSample("c", v.gt, v.gt, v.hole))
    bad = SelfConsistencyMetric(opts, patch_size=8).update(VideoSample("c", v.gt, noisy, v.hole))
    assert bad["self_consistency"] < good["self_consistency"]  # PSNR: higher is better


def test_direction_provenance_and_psnr_clipping():
    m = SelfConsistencyMetric(EvalOptions(self_consistency_submetric="psnr", self_consistency_k=2))
    assert m.higher_is_better and m.clip_keys == ("self_consistency",)
    prov = m.provenance()
    assert prov["submetric"]["name"] == "psnr" and prov["higher_is_better"] is True
    assert prov["k"] == 2 and prov["second_inpainter"] == "telea" and prov["pattern"] == "per_clip"
    assert prov["first_inpainting"] == "composite"
    m.values = [20.0, math.inf]
    assert m.compute()["self_consistency"] == 20.0  # +inf clipped to the max finite value (the release's metrics)
    assert submetric_direction("lpips") is False
    with pytest.raises(ValueError):
        submetric_direction("mse")


def test_lpips_submetric_without_weights_raises_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(WeightsMissingError, match="psnr or ssim"):
        SelfConsistencyMetric(EvalOptions())  # default sub-metric: LPIPS


def test_lpips_submetric_with_injected_random_network():
    pytest.importorskip("lpips")
    from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state
    from devil_dataset.eval.metrics.self_consistency import lpips_submetric

    fn, prov = lpips_submetric(EvalOptions(batch_size=2), network=LPIPSNetwork(backbone_state=random_alexnet_state(0)))
    v = _video(frames=3)
    first = v.composite
    r = self_consistency(first, v.hole, _oracle(first), fn, np.random.default_rng(0), k=2, patch_size=8)
    assert r.value == 0.0 and prov["weights"] == "injected"
    other = np.where(v.hole[..., None], 0, first).astype(np.uint8)
    assert (fn(first, other) > 0).all()


def test_injected_inpainter_submetric_and_frame_stride():
    calls = []

    def inpainter(frames, hole):
        calls.append(len(frames))
        return frames

    v = _video(frames=5)
    m = SelfConsistencyMetric(EvalOptions(self_consistency_submetric="ssim", self_consistency_k=2),
                              inpainter=inpainter, submetric=lambda a, b: np.zeros(len(a)), frame_stride=2)
    assert m.update(v) == {"self_consistency": 0.0}
    assert calls == [3, 3]
    assert m.provenance()["frame_stride"] == 2


def test_registry_and_evaluate_integration():
    opts = EvalOptions(self_consistency_submetric="psnr", self_consistency_k=2, flow="dis")
    names = ["self_consistency", "ff_alpha", "ff_beta", "unchanged_region"]
    metrics, skipped = build_metrics(names, opts)
    assert not skipped and METRICS["self_consistency"].keys == ("self_consistency",)
    ev = evaluate([_video(frames=2), VideoSample("clip-2", *(_video(frames=2, seed=1).gt,) * 2, _video(frames=2).hole)],
                  metrics, progress=False)
    assert set(ev.summary) == set(names)
    assert all(np.isfinite(v) for v in ev.summary.values())


def test_bad_inputs_are_rejected():
    v = _video()
    with pytest.raises(ValueError):
        self_consistency(v.gt.astype(np.float32), v.hole, _oracle(v.gt), psnr_frames, np.random.default_rng(0))
    with pytest.raises(ValueError):
        self_consistency(v.gt, v.hole[:, :10], _oracle(v.gt), psnr_frames, np.random.default_rng(0))
    with pytest.raises(ValueError):
        self_consistency(v.gt, v.hole, lambda f, h: f[:1], psnr_frames, np.random.default_rng(0), k=1)
    with pytest.raises(ValueError):
        SelfConsistencyMetric(EvalOptions(self_consistency_submetric="psnr", self_consistency_k=0))

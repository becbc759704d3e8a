"""benchmarks/reference_free_validation.py: synthesized bad inpaintings, the table, the multi-sub-metric column."""
from __future__ import annotations

import doctest

import numpy as np
import pytest

from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.self_consistency import SelfConsistencyMetric

from .conftest import load_benchmark

rf = load_benchmark("reference_free_validation")


def _video(frames=3, size=(64, 48), seed=0):
    gt = rf.panning_scene(np.random.default_rng(seed), size, frames, (1.0, 0.0))
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 12:30, 20:44] = True
    pred = np.zeros_like(gt)
    pred[:] = 77  # a flat fill in the hole
    return VideoSample("clip-1", gt, pred, hole)


def test_docstring_examples():
    result = doctest.testmod(rf, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


def test_multi_submetric_columns_equal_the_metric():
    v = _video(frames=2)
    opts = EvalOptions(self_consistency_submetric="psnr", self_consistency_k=2, seed=3)
    multi = rf.MultiSelfConsistency(opts, ["psnr", "ssim"], patch_size=8).update(v)
    for name in ("psnr", "ssim"):
        single = SelfConsistencyMetric(EvalOptions(self_consistency_submetric=name, self_consistency_k=2, seed=3),
                                       patch_size=8).update(v)
        assert multi[f"self_consistency[{name}]"] == single["self_consistency"]


def test_validation_run_ranks_synthesized_bad_inpaintings_worse():
    from devil_dataset.inpaint import get_inpainter

    clips = rf.sample_clips((96, 64), 4, num_synthetic=2, real=False, seed=0)
    c = clips[0]
    assert (rf.synth_blend(c.frames, c.hole, clips[1].frames)[~c.hole] == c.frames[~c.hole]).all()
    noisy = rf.synth_blurred_noise(c.frames, c.hole, np.random.default_rng(0))
    assert (noisy[~c.hole] == c.frames[~c.hole]).all() and (noisy[c.hole] != c.frames[c.hole]).mean() > 0.5
    opts = EvalOptions(flow="dis", self_consistency_submetric="psnr", self_consistency_k=2)
    doc = rf.run(clips, opts, submetrics=["psnr"], baselines={"telea": get_inpainter("telea")}, progress=False)
    assert doc["best_baseline"] == "telea"
    assert set(doc["table"]) == {"gt", "telea", "telea+jpeg-raw", "blend", "noise"}
    assert doc["table"]["telea+jpeg-raw"]["unchanged_region"] > 0 == doc["table"]["telea"]["unchanged_region"]
    for bad in ("blend", "noise"):
        assert doc["verdict"][bad]["ff_alpha"] and doc["verdict"][bad]["ff_beta"]
    assert "| blend |" in doc["markdown"]


def test_validation_reads_a_dataset_slice_through_iter_slice(monkeypatch):
    import devil_dataset.data as data
    from devil_dataset.core.errors import DevilError

    rows = [{"clip_id": f"c{i}", "frames": _video(frames=2, seed=i).gt, "hole": _video(frames=2).hole}
            for i in range(3)]
    seen = []
    monkeypatch.setattr(data, "iter_slice", lambda d, c: seen.append((d, c)) or iter(rows))
    clips = rf._dataset_clips("DIR", "fg_size_high", limit=2)
    assert [c.clip_id for c in clips] == ["c0", "c1"] and seen == [("DIR", "fg_size_high")]
    assert clips[0].hole.dtype == bool and clips[0].frames.dtype == np.uint8
    monkeypatch.setattr(data, "iter_slice", lambda d, c: iter(rows[:1]))
    with pytest.raises(DevilError, match="at least 2 clips"):
        rf._dataset_clips("DIR", "fg_size_high", limit=None)

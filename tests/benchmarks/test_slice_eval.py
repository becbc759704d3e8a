"""benchmarks/slice_eval.py: the generated slice, the per-stage clock, the comparison with today's path."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.metrics.pixel import PSNRMetric
from devil_dataset.eval.scoring.evaluate import evaluate_dataset

from .conftest import load_benchmark

se = load_benchmark("slice_eval")


def test_the_generated_slice_is_made_again_identically_on_every_pass():
    rows = se.GeneratedSlice(3, 4, 48, 32)
    first, second = list(rows), list(rows)
    assert len(rows) == 3 and [r["clip_id"] for r in first] == ["clip0000", "clip0001", "clip0002"]
    assert all(np.array_equal(a["frames"], b["frames"]) and np.array_equal(a["hole"], b["hole"])
               for a, b in zip(first, second))
    assert first[0]["frames"].shape == (4, 32, 48, 3) and first[0]["hole"].any()
    assert [r["clip_id"] for r in rows.head(2)] == ["clip0000", "clip0001"]


def test_largest_difference_treats_nan_as_equal_and_inf_as_infinitely_far():
    today = {"videos": {"a": {"psnr": 30.0, "ssim": math.nan}, "b": {"psnr": math.inf}}}
    assert se.largest_difference(today, today) == 0.0
    assert se.largest_difference({"videos": {"a": {"psnr": 30.5, "ssim": math.nan}, "b": {"psnr": math.inf}}},
                                 today) == pytest.approx(0.5)
    assert se.largest_difference({"videos": {"b": {"psnr": 99.0}}}, today) == math.inf
    assert se.largest_difference({"videos": {"c": {"psnr": 1.0}}}, today) == 0.0  # no clip in common


def test_the_stage_clock_times_each_metric_and_takes_its_wrappers_away(tmp_path):
    from devil_dataset.core.release_format import write_frame_pngs

    rows = se.GeneratedSlice(2, 3, 48, 32)
    for row in rows:
        write_frame_pngs(row["frames"], tmp_path / "pred" / row["clip_id"], "pred")
    original = PSNRMetric.update
    clock = se.StageClock()
    with clock.installed(["psnr", "ssim"]):
        assert PSNRMetric.update is not original
        evaluate_dataset("bench", "all", tmp_path / "pred", ["psnr", "ssim"], EvalOptions(), progress=False,
                         rows=list(rows))
        seconds = clock.take()
    assert PSNRMetric.update is original  # the benchmark leaves the classes as it found them
    assert {"psnr.update", "ssim.update", "read predictions"} <= set(seconds)
    assert all(s > 0 for s in seconds.values()) and clock.take() == {}


def test_no_gpu_busy_figure_without_a_gpu():
    busy = se.GpuBusy("cpu")
    with busy.sampling():
        pass
    assert busy.fraction() is None and busy.samples == []

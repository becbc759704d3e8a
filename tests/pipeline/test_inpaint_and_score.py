"""devil_dataset/pipeline (plan, clip_task, inpaint_and_score): units planned from slices, any inpainter run once per
(clip, hole), predictions written once and linked into every slice, scored from memory, resumed from folders and the
cache; every step takes one BenchmarkPlan."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.engines import Engine
from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import read_frame_pngs
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring.one_pass import evaluate
from devil_dataset.eval.scoring.results import ValuesCache
from devil_dataset.inpaint.run import PredictionFolder, dataset_run_info, hole_fingerprint
from devil_dataset.pipeline import clip_task as clip_task_module
from devil_dataset.pipeline import inpaint_and_score as pipeline
from devil_dataset.pipeline import plan as plan_module
from devil_dataset.pipeline.inpaint_and_score import inpaint_and_score, slice_results
from devil_dataset.pipeline.plan import BenchmarkPlan, Unit, clip_work, plan_units

from ..eval.conftest import make_video

OPTIONS = EvalOptions(device="cpu", flow="dis")
PIXEL = ["psnr", "ssim", "pcons", "warp_error"]


def grey_fill(frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """A user method (any Inpainter): the hole painted mid-grey."""
    out = frames.copy()
    out[hole] = 128
    return out


def fails(frames, hole):
    raise AssertionError("inpainted again")


@pytest.fixture
def slices(monkeypatch):
    """Two slices over two clips: clip a's hole is the same in both (one unit), clip b's differs (two units)."""
    a, _, hole_a = make_video(1, t=4)
    b, _, hole_b1 = make_video(2, t=5)
    hole_b2 = np.roll(hole_b1, 9, axis=2)
    rows = {"fg_size_low": [("a", a, hole_a), ("b", b, hole_b1)], "fg_size_high": [("b", b, hole_b2), ("a", a, hole_a)]}

    def fake_iter_slice(dataset, config, split="test", *, columns=None, clip_ids=None):
        for clip_id, frames, hole in rows[config]:
            if clip_ids is None or clip_id in clip_ids:
                yield {"clip_id": clip_id, "frames": frames, "hole": hole}

    for module in (plan_module, clip_task_module):  # where the pipeline reads slices
        monkeypatch.setattr(module, "iter_slice", fake_iter_slice)
    return rows


def _folders(root, methods, slice_names):
    return {(m, s): PredictionFolder(root / m / s, dataset_run_info(m, "tiny", s))
            for m in methods for s in slice_names}


def _plan(root, inpainters, slice_names, metrics=PIXEL, engine=None, network_metrics=(), skipped=None):
    """The plan of ``inpainters`` on the fake slices, prediction folders under ``root``."""
    units, order = plan_units("tiny", slice_names)
    return BenchmarkPlan("tiny", root, dict(inpainters), tuple(slice_names), units, order, list(metrics),
                         list(network_metrics), dict(skipped or {}), OPTIONS, engine or Engine(),
                         _folders(root / "pred", list(inpainters), slice_names))


def test_plan_units_shares_a_clip_and_hole_between_slices(slices):
    units, order = plan_units("tiny", ["fg_size_low", "fg_size_high"])
    assert len(units) == 3 and [units[k].clip_id for k in order["fg_size_high"]] == ["b", "a"]
    shared = units[order["fg_size_low"][0]]
    assert shared.slices == ["fg_size_low", "fg_size_high"] and shared.num_frames == 4
    assert np.array_equal(shared.hole(), slices["fg_size_low"][0][2])
    assert shared.fingerprint == hole_fingerprint(shared.hole()) and shared.hole_pixels == shared.hole().sum()


def test_inpaint_and_score_any_inpainter_writes_links_scores_and_resumes(slices, tmp_path):
    names = ["fg_size_low", "fg_size_high"]
    plan = _plan(tmp_path, {"grey": grey_fill}, names)
    units, order, folders = plan.units, plan.order, plan.folders
    cache = ValuesCache(tmp_path / "values", "d", PIXEL)
    lines: list[str] = []
    run = inpaint_and_score(plan, cache=cache, progress=False, say=lines.append)
    assert len(lines) == 2 and all(" 2 videos x 1 methods inpainted and scored, " in line for line in lines)
    for s in names:
        for clip_id, frames, hole in slices[s]:
            pred = read_frame_pngs(folders[("grey", s)].path / clip_id, "pred")
            assert np.array_equal(pred, grey_fill(frames, hole))
            assert folders[("grey", s)].holds(clip_id, hole_fingerprint(hole), len(frames))
            metrics, _ = build_metrics(PIXEL, OPTIONS)
            ref = evaluate([VideoSample(clip_id, frames, pred, hole)], metrics, progress=False).videos[clip_id]
            assert run.values[(f"{clip_id}-{hole_fingerprint(hole)}", "grey")] == ref
    low, high = (folders[("grey", s)].path / "a" / "frame_0000_pred.png" for s in names)
    assert low.stat().st_ino == high.stat().st_ino  # the shared unit was written once, hard-linked
    assert run.inpaint_cpu["grey"] >= 0 and run.score_cpu["grey"] > 0

    # resume: nothing inpainted or scored again, the same values from the cache
    again = inpaint_and_score(_plan(tmp_path, {"grey": fails}, names), cache=cache, progress=False)
    assert again.values == run.values

    # values lost, predictions kept: scored from the PNGs, not inpainted
    cache2 = ValuesCache(tmp_path / "values2", "d", PIXEL)
    rescored = inpaint_and_score(_plan(tmp_path, {"grey": fails}, names), cache=cache2, progress=False)
    assert rescored.values == run.values and cache2.load("grey", "b", units[order["fg_size_high"][0]].fingerprint)


def test_clips_go_to_the_engine_largest_first_as_picklable_records(slices, tmp_path):
    """The engine gets one record per clip with its work estimate (clip b: two units, more frames, goes first); the
    records and the module-level task function pickle, so the local engine's worker processes can run them."""
    import pickle

    names = ["fg_size_low", "fg_size_high"]
    tasks = []

    class Recording:  # an engine that runs in this process and keeps the records it got
        def map_ordered(self, fn, records, *, cost=None, **kw):
            records = sorted(records, key=lambda r: -cost(r))
            tasks.extend(records)
            return map(fn, records)

    run = inpaint_and_score(_plan(tmp_path, {"grey": grey_fill}, names, engine=Recording()), progress=False)
    assert [t.clip_id for t in tasks] == ["b", "a"] and tasks[0].work > tasks[1].work
    assert [len(t.items) for t in tasks] == [2, 1] and tasks[0].slice_name == "fg_size_low"
    assert pickle.loads(pickle.dumps(tasks[0])).items[1].key == tasks[0].items[1].key
    assert pickle.loads(pickle.dumps(clip_task_module.clip_task)) is clip_task_module.clip_task
    assert len(run.values) == 3


def test_a_missing_prediction_is_an_error(slices, tmp_path):
    class Nothing:
        def map_ordered(self, fn, records, **kw):
            return iter(())

    with pytest.raises(DevilError, match="no prediction of grey for clip"):
        inpaint_and_score(_plan(tmp_path, {"grey": grey_fill}, ["fg_size_low"], engine=Nothing()), progress=False)


def test_slice_results_rebuild_the_slice_values(slices, tmp_path):
    names = ["fg_size_low", "fg_size_high"]
    plan = _plan(tmp_path, {"grey": grey_fill}, names, metrics=["psnr", "warp_error"], skipped={"lpips": "no weights"})
    order, folders = plan.order, plan.folders
    run = inpaint_and_score(plan, progress=False)
    docs = slice_results(plan, run.values, progress=False)
    doc = docs[("grey", "fg_size_high")]
    psnrs = [run.values[(k, "grey")]["psnr"] for k in order["fg_size_high"]]
    assert doc["num_videos"] == 2 and doc["num_frames"] == 9 and list(doc["videos"]) == ["b", "a"]
    assert math.isclose(doc["summary"]["psnr"], sum(psnrs) / 2)
    assert math.isnan(doc["summary"]["lpips"]) and doc["skipped"] == {"lpips": "no weights"}
    assert doc["provenance"]["metrics"]["warp_error"]["shared"] == pipeline.SHARED_WARP_NOTE
    assert doc["provenance"]["inputs"]["predictions"] == str(folders[("grey", "fg_size_high")].path)


def test_clip_work_puts_big_clips_first():
    """The scheduling estimate grows with the (unit, method) items, the frames and the hole area, so a clip with
    many large holes is handed to a worker before a clip with one small hole."""

    def unit(frames: int, hole_fraction: float) -> Unit:
        return Unit("c", "f", frames, hole_shape=(frames, 10, 10), hole_pixels=int(frames * 100 * hole_fraction))

    small = clip_work([unit(45, 0.05)], 3)
    assert clip_work([unit(45, 0.05)] * 6, 18) > clip_work([unit(45, 0.05)] * 2, 6) > small
    assert clip_work([unit(45, 0.4)], 3) > small
    assert clip_work([unit(90, 0.05)], 3) > small
    assert clip_work([], 0) == 0.0

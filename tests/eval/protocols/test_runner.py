"""The folder protocols' one runner: an interrupted run started again scores only the videos without a stored record
and writes the document of an uninterrupted run, byte for byte; a changed file or option is scored again."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.protocols.propainter import run as propainter_run
from devil_dataset.eval.protocols.prove import run as prove_run
from devil_dataset.eval.protocols.runner import score_videos
from devil_dataset.eval.scoring.results import DEVIL_FIELDS, dumps, results_document

from ..davis_data import TEST_SIZE, write_davis_layout
from ..prove_data import write_prove_layout
from .resume_check import interrupted_then_resumed


def _patch_features(images):
    """A deterministic stand-in for DINOv2: each 14x14 patch's mean colour (a function of the crop only)."""
    out = []
    for i in images:
        h, w = i.shape[0] // 14 * 14, i.shape[1] // 14 * 14
        out.append(i[:h, :w].reshape(h // 14, 14, w // 14, 14, 3).mean((1, 3)).astype(np.float32))
    return np.stack(out)


class Interrupted(Exception):
    pass


def _counting(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper recording the name of each video it scores."""
    scored: list[str] = []
    real = getattr(module, name)

    def wrapper(item, *args, **kwargs):
        scored.append(item.name if hasattr(item, "name") else item[0].name)
        return real(item, *args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return scored


@pytest.fixture(scope="module")
def prove_dirs(tmp_path_factory):
    return write_prove_layout(tmp_path_factory.mktemp("prove"), cases=("moving", "corner", "two_parts"))


def _prove(dirs, cache=None, **kwargs):
    return prove_run.evaluate_prove(*dirs, ["rc_s", "rc_t", "bg_psnr"], EvalOptions(protocol="prove"), method="m",
                                    network=_patch_features, identity={"name": "patch means"}, cache=cache, **kwargs)


def test_an_interrupted_prove_run_resumes_with_only_the_rest_and_the_same_document(prove_dirs, tmp_path,
                                                                                  monkeypatch):
    whole = _prove(prove_dirs)
    seen: list[str] = []

    def stop_after_first(scores):
        seen.append(scores.name)
        raise Interrupted

    scored = _counting(monkeypatch, prove_run, "score_prove_video")
    with pytest.raises(Interrupted):
        _prove(prove_dirs, tmp_path / "cache", on_video=stop_after_first)
    assert seen == ["corner"] and scored == ["corner"]  # the first video (names sorted), stored before on_video
    scored.clear()
    resumed = _prove(prove_dirs, tmp_path / "cache")
    assert scored == ["moving", "two_parts"]  # only what the interrupted run had not scored
    assert dumps(resumed) == dumps(whole)
    scored.clear()
    assert dumps(_prove(prove_dirs, tmp_path / "cache")) == dumps(whole) and scored == []  # all stored


def test_a_changed_file_or_option_is_scored_again(prove_dirs, tmp_path, monkeypatch):
    _prove(prove_dirs, tmp_path / "cache")
    scored = _counting(monkeypatch, prove_run, "score_prove_video")
    prove_run.evaluate_prove(*prove_dirs, ["rc_s", "rc_t", "bg_psnr"], EvalOptions(protocol="prove",
                             parity="corrected"), network=_patch_features, identity={"name": "patch means"},
                             cache=tmp_path / "cache")
    assert scored == ["corner", "moving", "two_parts"]  # another parity: other values
    scored.clear()
    (prove_dirs[1] / "corner.mp4").write_bytes((prove_dirs[1] / "moving.mp4").read_bytes())
    _prove(prove_dirs, tmp_path / "cache")
    assert scored == ["corner"]  # its result's bytes changed
    prove_run.evaluate_prove(*prove_dirs, ["rc_s"], network=_patch_features, cache=tmp_path / "anonymous")
    assert not (tmp_path / "anonymous").exists()  # an injected network without an identity: never stored


def test_an_interrupted_propainter_run_resumes_with_only_the_rest(tmp_path, monkeypatch):
    data = write_davis_layout(tmp_path / "davis", (3, 2, 2))
    args = (data.gt_dir, data.mask_dir, data.pred_dir, ["psnr", "ssim", "hole_psnr"])
    whole = propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m")
    scored = _counting(monkeypatch, propainter_run, "score_video_frames")
    real = propainter_run.score_video_frames

    def fail_on_v1(task, *a, **k):
        if task[0].name == "v1":
            raise Interrupted
        return real(task, *a, **k)

    monkeypatch.setattr(propainter_run, "score_video_frames", fail_on_v1)
    with pytest.raises(Interrupted):
        propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m", cache=tmp_path / "cache")
    assert scored == ["v0"]
    monkeypatch.setattr(propainter_run, "score_video_frames", real)
    scored = _counting(monkeypatch, propainter_run, "score_video_frames")
    resumed = propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m", cache=tmp_path / "cache")
    assert scored == ["v1", "v2"] and dumps(resumed) == dumps(whole)


def test_the_propainter_network_pass_is_stored_and_read_back_identical(tmp_path, monkeypatch):
    data = write_davis_layout(tmp_path / "davis", (3, 2))
    args = (data.gt_dir, data.mask_dir, data.pred_dir, ["psnr", "ewarp"], EvalOptions(flow="dis", device="cpu"))
    whole = propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m", cache=tmp_path / "cache")
    scored = _counting(monkeypatch, propainter_run, "network_video")
    again = propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m", cache=tmp_path / "cache")
    assert scored == [] and dumps(again) == dumps(whole)  # E_warp read back, not computed
    assert whole["provenance"]["protocol"]["ewarp"]["flow"] == "dis" and whole["summary"]["ewarp"] > 0


def test_score_videos_calls_on_video_in_order_for_stored_and_new_results():
    got: list[float] = []
    assert score_videos([1.0, 2.0, 3.0], abs, on_video=got.append) == [1.0, 2.0, 3.0] and got == [1.0, 2.0, 3.0]


def test_every_field_has_a_place_in_the_document():
    with pytest.raises(ValueError, match="without a place in the document: extra"):
        results_document("m", None, {"extra": 1}, DEVIL_FIELDS)
    with pytest.raises(KeyError):
        results_document("m", None, {}, ("num_videos",))


def test_devil_evaluate_protocol_prove_resumes_from_values_cache(prove_dirs, tmp_path, monkeypatch, capsys):
    from devil_dataset.cli import main

    command = ["evaluate", "--protocol", "prove", "--input-dir", str(prove_dirs[0]), "--pred-dir",
               str(prove_dirs[1]), "--mask-dir", str(prove_dirs[2]), "--metrics", "bg_psnr", "masked_ssim",
               "--no-progress"]
    before, after = interrupted_then_resumed(monkeypatch, prove_run, "score_prove_video", command, tmp_path,
                                             stop_at="moving")
    assert before == ["corner", "moving"] and after == ["moving", "two_parts"]
    assert main(["evaluate", "--dataset", str(tmp_path), "--config", "c", "--predictions", str(tmp_path),
                 "--values-cache", str(tmp_path / "cache")]) == 2
    assert "--values-cache: only with a protocol reading folders of its own" in capsys.readouterr().err


def test_records_stored_by_engine_workers_read_back_identical(prove_dirs, tmp_path):
    from devil_dataset.core.engines import get_engine

    def run(**kwargs):
        return prove_run.evaluate_prove(*prove_dirs, ["bg_psnr", "masked_psnr"], method="m", **kwargs)

    here = run()
    engine = get_engine("local", jobs=2)
    assert dumps(run(engine=engine, cache=tmp_path / "cache")) == dumps(here)
    assert len(list((tmp_path / "cache" / "prove").glob("*.json"))) == 3
    assert dumps(run(cache=tmp_path / "cache")) == dumps(here)  # read back in this process


def test_a_damaged_record_is_scored_again(prove_dirs, tmp_path, monkeypatch):
    """A stored record that no longer decodes (bad UTF-8, a missing field, a value of the wrong type) reads as
    missing: its video is scored again and the document is the uninterrupted run's."""
    whole = _prove(prove_dirs, tmp_path / "cache")
    records = sorted((tmp_path / "cache" / "prove").glob("*.json"))
    assert len(records) == 3
    records[0].write_bytes(b"\xff" + records[0].read_bytes()[1:])
    doc = records[1].read_text()
    records[1].write_text(doc.replace('"record"', '"recorded"'))
    scored = _counting(monkeypatch, prove_run, "score_prove_video")
    assert dumps(_prove(prove_dirs, tmp_path / "cache")) == dumps(whole)
    assert sorted(scored) == sorted(p.name.rsplit("-", 1)[0] for p in records[:2])


class _RecordingEngine:
    """An engine that runs each call here and records what it was given (what `--engine ray` would run remotely)."""

    def __init__(self):
        self.items: list[str] = []

    def map_ordered(self, fn, items):
        for item in items:
            self.items.append(_task_name_of(item))
            yield fn(item)


def _task_name_of(item) -> str:
    return item.name if hasattr(item, "name") else item[0].name


def test_propainter_pixel_pass_runs_on_the_given_engine(tmp_path):
    """`devil evaluate --protocol propainter --engine ray` hands the pixel pass to the engine, as PROVE's does, with
    the document of a run in this process."""
    data = write_davis_layout(tmp_path / "davis", (3, 2))
    args = (data.gt_dir, data.mask_dir, data.pred_dir, ["psnr", "ssim", "hole_psnr"])
    here = propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m")
    engine = _RecordingEngine()
    assert dumps(propainter_run.evaluate_propainter(*args, size=TEST_SIZE, method="m", engine=engine)) == dumps(here)
    assert engine.items == ["v0", "v1"]


def test_propainter_hashes_each_videos_files_once_for_both_passes(tmp_path, monkeypatch):
    """The frame pass and the network pass key their records by the same files: each video is hashed once."""
    data = write_davis_layout(tmp_path / "davis", (3, 2))
    hashed: list[int] = []
    real = propainter_run.content_digest

    def counting(paths):
        paths = tuple(paths)
        hashed.append(len(paths))
        return real(paths)

    monkeypatch.setattr(propainter_run, "content_digest", counting)
    propainter_run.evaluate_propainter(data.gt_dir, data.mask_dir, data.pred_dir, ["psnr", "ewarp"],
                                       EvalOptions(flow="dis", device="cpu"), size=TEST_SIZE, method="m",
                                       cache=tmp_path / "cache")
    assert len(hashed) == 2  # two videos, each once
    assert len(list((tmp_path / "cache" / "propainter").glob("*.json"))) == 4  # each pass stored both videos

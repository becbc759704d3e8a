"""DEVIL's directory mode on the one runner: each clip scored on its own (here, in worker processes, on an engine,
or read back from the values cache) gives the document of one pass over the clips, byte for byte; set-level states
(feature statistics) merge exactly; an interrupted ``devil evaluate --gt-dir --pred-dir --values-cache`` resumes with
only the clips left."""
from __future__ import annotations

import json

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.engines import get_engine
from devil_dataset.eval.kernels.frechet import GaussianStats, frechet_of
from devil_dataset.eval.metrics.metric import EvalOptions, Metric, VideoSample
from devil_dataset.eval.protocols.devil import run as devil_run
from devil_dataset.eval.scoring import evaluate as scoring_evaluate
from devil_dataset.eval.scoring.inputs import DirectorySource
from devil_dataset.eval.scoring.one_pass import evaluate
from devil_dataset.eval.scoring.results import build_results, dumps

from ...conftest import make_video, write_release_dirs
from ..resume_check import interrupted_then_resumed

PIXEL = ["psnr", "ssim", "pcons", "warp_error"]


@pytest.fixture(scope="module")
def release_dirs(tmp_path_factory):
    """Three clips of the release's layout (one predicted perfectly: an infinite PSNR clipped by the slice)."""
    samples = []
    for i, t in enumerate((4, 5, 3)):
        gt, pred, hole = make_video(i, t=t)
        samples.append(VideoSample(f"clip{i}", gt, gt.copy() if i == 1 else pred, hole))
    return write_release_dirs(tmp_path_factory.mktemp("release"), samples)


class _FeatureStats(Metric):
    """A set-level metric like FID (feature statistics of every frame, merged, not averaged), with per-group state as
    ``set_level_ci`` keeps it: the frames' mean colours and squares as features."""

    keys = ("toy_frechet",)

    def __init__(self, options=None):
        super().__init__()
        for name in ("gt_stats", "comp_stats"):
            self.add_state(name, GaussianStats)
        self.add_state("groups", dict)
        self.add_state("videos_per_group", dict)

    def update(self, video, prepared=None):
        def features(frames):
            x = frames.reshape(len(frames), -1, 3).astype(np.float64) / 255
            return np.concatenate([x.mean(1), (x ** 2).mean(1), x.std(1)], axis=1)
        self.gt_stats.add(features(video.gt))
        self.comp_stats.add(features(video.composite))
        group = int(video.clip_id[-1]) % 2
        self.groups.setdefault(group, GaussianStats()).add(features(video.composite))
        self.videos_per_group[group] = self.videos_per_group.get(group, 0) + 1
        return {}

    def compute(self):
        return {"toy_frechet": frechet_of(self.gt_stats, self.comp_stats)}

    def provenance(self):
        return {"frames": self.gt_stats.n, "groups": {g: s.n for g, s in self.groups.items()},
                "videos_per_group": dict(self.videos_per_group)}


def test_clip_states_merge_into_the_statistics_of_one_pass_and_survive_the_values_cache():
    """Per-clip feature statistics, packed as grid rows, stored as JSON and read back, merge into the same bits as
    one set of statistics fed every clip (mean, covariance, count)."""
    rng = np.random.default_rng(0)
    clips = [rng.normal(size=(n, 6)) * 3 for n in (7, 1, 12)]
    whole = GaussianStats()
    total = GaussianStats()
    for x in clips:
        whole.add(x)
        part = GaussianStats()
        part.add(x)
        record = devil_run.DevilVideoScores("c", len(x), {"v": float("inf")}, {"m": {"s": devil_run._packed(part)}})
        back = devil_run.decode_record(json.loads(dumps(devil_run.encode_record(record))))
        assert isinstance(back.states["m"]["s"], devil_run.GridRows) and back.values == {"v": float("inf")}
        total = devil_run._merged(total, back.states["m"]["s"])
    assert total.n == whole.n
    assert (total.mean() == whole.mean()).all() and (total.cov() == whole.cov()).all()
    flushed = GaussianStats()
    flushed.add(rng.normal(size=(2100, 2)))  # 2048 rows and more are summed already: stored as sums
    back = devil_run._decode(json.loads(dumps(devil_run._encode(devil_run._packed(flushed)))))
    assert back.n == flushed.n and (back.cov() == flushed.cov()).all()


def test_a_set_level_metric_merged_over_clips_equals_one_pass(release_dirs, monkeypatch):
    """The summary rule merges each clip's state: a metric of feature statistics (and groups, and counts) gives the
    values and provenance of one pass feeding every clip to one metric object."""
    real = scoring_evaluate.build_metrics

    def build(names, options):
        return {"toy": _FeatureStats(), "psnr": real(["psnr"], options)[0]["psnr"]}, {}

    monkeypatch.setattr(scoring_evaluate, "build_metrics", build)
    source = DirectorySource(*release_dirs)
    options = EvalOptions(device="cpu")
    one_pass = evaluate(source, build(None, options)[0], progress=False)
    _, metrics, _ = scoring_evaluate.prepare_metrics(["toy"], options)
    merged = devil_run.score_directory(source, metrics, options, engine=_RecordingEngine())
    assert merged.summary == one_pass.summary and merged.metric_provenance == one_pass.metric_provenance
    assert merged.videos == one_pass.videos and merged.clipped == one_pass.clipped
    assert np.isfinite(merged.summary["toy_frechet"])
    docs = [build_results(ev, method="m", slice_name=None, inputs={}, options=options, metrics=["toy", "psnr"],
                          skipped={}) for ev in (one_pass, merged)]
    assert dumps(docs[0]) == dumps(docs[1])


class _RecordingEngine:
    """An engine running each call here and recording the clips it was given (what `--engine ray` runs remotely)."""

    def __init__(self):
        self.items: list[str] = []

    def map_ordered(self, fn, items):
        for item in items:
            self.items.append(item.name)
            yield fn(item)


def test_directory_mode_on_an_engine_in_workers_and_from_the_cache_writes_the_same_document(release_dirs, tmp_path,
                                                                                             monkeypatch):
    here = devil_run.evaluate_directory(*release_dirs, PIXEL, EvalOptions(flow="dis"), progress=False)
    engine = _RecordingEngine()
    assert dumps(devil_run.evaluate_directory(*release_dirs, PIXEL, EvalOptions(flow="dis"), progress=False,
                                              engine=engine)) == dumps(here)
    assert engine.items == ["clip0", "clip1", "clip2"]
    workers = devil_run.evaluate_directory(*release_dirs, PIXEL, EvalOptions(flow="dis"), progress=False,
                                           engine=get_engine("local", jobs=2), cache=tmp_path / "cache")
    assert dumps(workers) == dumps(here) and here["clipped"] == {"psnr": ["clip1"], "pcons_psnr_mask": ["clip1"]}
    assert len(list((tmp_path / "cache" / "devil").glob("clip*.json"))) == 3
    scored: list[str] = []
    real = devil_run.score_directory_clip
    monkeypatch.setattr(devil_run, "score_directory_clip", lambda clip, *a, **k: scored.append(clip.name)
                        or real(clip, *a, **k))
    again = devil_run.evaluate_directory(*release_dirs, PIXEL, EvalOptions(flow="dis"), progress=False,
                                         cache=tmp_path / "cache")
    assert dumps(again) == dumps(here) and scored == []  # every clip read back
    devil_run.evaluate_directory(*release_dirs, PIXEL, EvalOptions(flow="dis", parity="corrected"), progress=False,
                                 cache=tmp_path / "cache")
    assert scored == ["clip0", "clip1", "clip2"]  # another scoring identity: scored again


def test_devil_evaluate_directory_mode_resumes_from_the_values_cache(release_dirs, tmp_path, monkeypatch, capsys):
    """`devil evaluate --gt-dir --pred-dir --values-cache DIR` (refused before: DEVIL's pass had its own loop): a run
    interrupted at the second clip keeps the first; the run started again scores only the rest and writes the bytes
    of an uninterrupted run. `--values-cache` stays refused in dataset mode."""
    command = ["evaluate", "--gt-dir", str(release_dirs[0]), "--pred-dir", str(release_dirs[1]), "--metrics", "psnr",
               "ssim", "--no-progress"]
    before, after = interrupted_then_resumed(monkeypatch, devil_run, "score_directory_clip", command, tmp_path,
                                             stop_at="clip1", resume_args=("--jobs", "1"))
    assert before == ["clip0", "clip1"] and after == ["clip1", "clip2"]
    capsys.readouterr()
    assert main(["evaluate", "--dataset", str(tmp_path), "--config", "c", "--predictions", str(tmp_path),
                 "--values-cache", str(tmp_path / "cache")]) == 2
    assert "--values-cache: only with a protocol reading folders of its own, not devil in dataset mode" in \
        capsys.readouterr().err


def test_the_registry_dispatches_devils_directory_layout_only():
    from devil_dataset.eval.protocols.registry import get_protocol

    devil = get_protocol("devil")
    assert devil.layout("directory").evaluate == "devil_dataset.eval.protocols.devil.run:evaluate_folders"
    assert devil.layout("dataset").evaluate is None and devil.evaluate is None
    with pytest.raises(Exception, match="reads no folders of its own in the dataset layout"):
        devil.run(None, layout="dataset")  # type: ignore[arg-type]


def test_metric_classes_without_declared_state_merge_their_value_lists(release_dirs):
    """The fidelity metrics keep their per-video values in plain lists (no declared state): scored clip by clip in
    worker processes, their values and provenance are those of one pass."""
    source = DirectorySource(*release_dirs)
    options = EvalOptions(device="cpu", flow="dis")
    names = ["ff_alpha", "unchanged_region", "psnr"]
    one_pass = evaluate(source, scoring_evaluate.build_metrics(names, options)[0], progress=False)
    _, metrics, _ = scoring_evaluate.prepare_metrics(names, options)
    merged = devil_run.score_directory(source, metrics, options, engine=get_engine("local", jobs=2))
    assert merged.summary == one_pass.summary and merged.videos == one_pass.videos
    assert merged.metric_provenance == one_pass.metric_provenance and np.isfinite(merged.summary["ff_alpha"])

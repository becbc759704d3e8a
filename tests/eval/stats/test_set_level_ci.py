"""Set-level intervals: FID and VFID keep per-group Gaussian statistics with ``set_level_ci``; their
delete-a-group jackknife reaches the results' ``uncertainty`` block, merges like one pass and shows in Table 1."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from devil_dataset.eval.kernels.frechet import frechet_distance
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.perceptual import FIDMetric
from devil_dataset.eval.scoring.one_pass import evaluate
from devil_dataset.eval.stats.jackknife import JACKKNIFE_GROUPS, video_group

CI = EvalOptions(set_level_ci=True)


class _MeanColourNet:
    """A stand-in FID network: 6-d features per frame (channel means and standard deviations)."""

    def features(self, frames: np.ndarray) -> np.ndarray:
        x = frames.astype(np.float64).reshape(len(frames), -1, 3)
        return np.concatenate([x.mean(1), x.std(1)], axis=1)


@pytest.fixture
def videos(eval_make_video) -> list[VideoSample]:
    return [VideoSample(f"clip{i:02d}", *eval_make_video(i, t=3 + i % 3, h=40, w=48)) for i in range(14)]


def _fid(options: EvalOptions, videos) -> FIDMetric:
    metric = FIDMetric(options, network=_MeanColourNet())
    for v in videos:
        metric.update(v)
    return metric


def test_group_state_is_declared_only_when_asked(videos):
    plain = _fid(EvalOptions(batch_size=2), videos[:3])
    assert plain.state_names() == ("gt_stats", "comp_stats") and plain.uncertainty() == {}
    grouped = _fid(EvalOptions(batch_size=2, set_level_ci=True), videos[:3])
    assert grouped.state_names() == ("gt_stats", "comp_stats", "gt_groups", "comp_groups", "group_videos")
    assert grouped.group_videos == {g: n for g, n in
                                    zip(*np.unique([video_group(v.clip_id) for v in videos[:3]], return_counts=True))}
    assert sum(s.n for s in grouped.gt_groups.values()) == grouped.gt_stats.n == sum(v.num_frames for v in videos[:3])
    assert grouped.compute() == plain.compute()  # the slice's FID does not change
    grouped.reset()
    assert grouped.gt_groups == {} and grouped.uncertainty() == {}


def test_fid_interval_against_a_direct_leave_one_group_out(videos):
    metric = _fid(CI, videos)
    net = _MeanColourNet()
    feats = {v.clip_id: (net.features(v.gt), net.features(v.composite)) for v in videos}
    groups = sorted({video_group(c) for c in feats})
    assert len(groups) >= 5  # enough groups for a meaningful test

    def fid(ids):
        g = np.concatenate([feats[c][0] for c in ids])
        p = np.concatenate([feats[c][1] for c in ids])
        return frechet_distance(g.mean(0), np.cov(g, rowvar=False), p.mean(0), np.cov(p, rowvar=False))

    loo = np.array([fid([c for c in feats if video_group(c) != k]) for k in groups])
    se = math.sqrt((len(groups) - 1) / len(groups) * np.sum((loo - loo.mean()) ** 2))
    u = metric.uncertainty()["fid"]
    assert (u["n"], u["groups"], u["level"]) == (len(videos), len(groups), 0.95)
    assert u["mean"] == metric.compute()["fid"] and u["mean"] == pytest.approx(fid(list(feats)), rel=1e-9)
    assert u["se"] == pytest.approx(se, rel=1e-8) and u["se"] > 0
    assert u["ci"][0] < u["mean"] < u["ci"][1]
    assert u["method"] == f"jackknife over {len(groups)} groups of videos (delete-a-group, t interval)"
    assert len(groups) <= JACKKNIFE_GROUPS


def test_fid_halves_merged_from_workers_equal_one_pass(videos):
    """What the local and Ray engines do: each part's state_dict (pickled) merged into the first; 1e-9 relative."""
    whole = _fid(CI, videos)
    left, right = _fid(CI, videos[:6]), _fid(CI, videos[6:])
    left.merge(pickle.loads(pickle.dumps(right.state_dict())))
    assert left.group_videos == whole.group_videos
    a, b = left.uncertainty()["fid"], whole.uncertainty()["fid"]
    assert (a["n"], a["groups"], a["method"]) == (b["n"], b["groups"], b["method"])
    for key in ("mean", "se"):
        assert a[key] == pytest.approx(b[key], rel=1e-9)
    assert a["ci"] == pytest.approx(b["ci"], rel=1e-9)
    assert left.uncertainty() == left.uncertainty()  # deterministic


class _StubPass:
    """What ``video_pass`` keeps on a sample (I3D features), low-dimensional and seeded by the clip."""

    def __init__(self, net, clip_id: str, windows: int) -> None:
        rng = np.random.default_rng(int(clip_id[-2:]))
        self.net = net
        self.pvcs = rng.random(windows)
        self.gt_windows = rng.normal(size=(windows, 4))
        self.comp_windows = self.gt_windows + rng.normal(0.3, 0.6, size=(windows, 4))
        self._video = (rng.normal(size=4), rng.normal(0.5, 1.2, size=4))

    def video_features(self):
        return self._video


def _i3d(cls, options: EvalOptions, clip_ids):
    net = object()
    metric = cls(options, network=net)
    for c in clip_ids:
        v = VideoSample(c, np.zeros((3, 2, 2, 3), np.uint8), np.zeros((3, 2, 2, 3), np.uint8),
                        np.zeros((3, 2, 2), bool))
        v.cache[("i3d", id(net), options.batch_size, options.pvcs_mode)] = _StubPass(net, c, 3)
        metric.update(v)
    return metric


def test_vfid_and_vfid_clips_intervals_merge_like_one_pass():
    from devil_dataset.eval.metrics.i3d import PVCSMetric, VFIDMetric

    ids = [f"clip{i:02d}" for i in range(16)]
    whole = _i3d(VFIDMetric, CI, ids)
    left, right = _i3d(VFIDMetric, CI, ids[:7]), _i3d(VFIDMetric, CI, ids[7:])
    left.merge(pickle.loads(pickle.dumps(right.state_dict())))
    values = whole.compute()
    u, merged = whole.uncertainty(values), left.uncertainty()
    assert sorted(u) == ["vfid", "vfid_clips"]
    assert u["vfid"]["n"] == u["vfid_clips"]["n"] == 16 and u["vfid"]["mean"] == values["vfid"]
    assert u["vfid_clips"]["mean"] == values["vfid_clips"] and u["vfid"]["se"] > 0
    for key in u:
        assert merged[key]["se"] == pytest.approx(u[key]["se"], rel=1e-9)
        assert merged[key]["ci"] == pytest.approx(u[key]["ci"], rel=1e-9)
    assert sum(s.n for s in whole.gt_video_groups.values()) == 16  # one vector per video
    assert sum(s.n for s in whole.gt_clips_groups.values()) == 48  # one per window
    pvcs = _i3d(PVCSMetric, CI, ids[:2])  # no set-level key: no group state, no interval
    assert "group_videos" not in pvcs.state_names() and pvcs.uncertainty() == {}
    plain = _i3d(VFIDMetric, EvalOptions(), ids)
    assert plain.uncertainty() == {} and plain.compute() == values


def _read_back(doc: dict, path) -> dict:
    """``doc`` as ``devil evaluate`` writes it and a later step reads it."""
    from devil_dataset.eval.scoring.results import read_results, write_results

    return read_results(write_results(path, doc))


def test_results_carry_the_interval_and_its_mean_is_the_slice_value(videos, tmp_path):
    from devil_dataset.eval.scoring.results import build_results, merge_results

    def doc(options, metrics):
        ev = evaluate(videos, metrics, progress=False)
        return ev, build_results(ev, method="m", slice_name="s", inputs={}, options=options, metrics=list(metrics),
                                 skipped={})

    ev, with_ci = doc(CI, {"fid": FIDMetric(CI, network=_MeanColourNet())})
    assert ev.set_level_uncertainty["fid"]["mean"] == ev.summary["fid"]
    with_ci = _read_back(with_ci, tmp_path / "ci.json")
    block = with_ci["uncertainty"]["fid"]
    assert block["mean"] == with_ci["summary"]["fid"] and block["n"] == len(videos)
    assert with_ci["provenance"]["options"]["set_level_ci"] is True
    _, without = doc(EvalOptions(), {"fid": FIDMetric(EvalOptions(), network=_MeanColourNet())})
    assert "fid" not in without["uncertainty"] and without["summary"]["fid"] == with_ci["summary"]["fid"]

    from devil_dataset.eval.metrics.registry import build_metrics

    _, pixel = doc(CI, build_metrics(["psnr"], CI)[0])  # what the benchmark merges: pixel doc + network doc
    merged = merge_results(_read_back(pixel, tmp_path / "p.json"), with_ci)
    assert merged["uncertainty"]["fid"] == block and "psnr" in merged["uncertainty"]
    redone = _read_back(without, tmp_path / "w.json")  # FID scored again without an interval: the old one is stale
    assert "fid" not in merge_results(merged, redone)["uncertainty"]


def test_table1_shows_the_fid_interval_under_ci(videos, tmp_path):
    from devil_dataset.eval.report import score_table, table1_markdown, table1_tsv, video_intervals
    from devil_dataset.eval.scoring.results import build_results

    docs = []
    for m, blur in (("a", 0), ("b", 1)):
        metric = FIDMetric(CI, network=_MeanColourNet())
        vs = [VideoSample(v.clip_id, v.gt, v.pred // (1 + blur), v.hole) for v in videos]
        ev = evaluate(vs, {"fid": metric}, progress=False)
        docs.append(_read_back(build_results(ev, method=m, slice_name="fg_size_low", inputs={}, options=CI,
                                             metrics=["fid"], skipped={}), tmp_path / f"{m}.json"))
    iv = video_intervals(docs)
    table = score_table(docs)
    md = table1_markdown(table, uncertainty=iv, ci="interval")
    lo, hi = iv[("a", "fg_size_low")]["fid"]["ci"]
    assert f"[{lo:.2f}, {hi:.2f}]" in md  # FID's release format .2f
    assert "FID: delete-a-group jackknife 95% t interval over 10 groups of videos" in md
    se_md = table1_markdown(table, uncertainty=iv, ci="se")
    assert f"± {iv[('b', 'fg_size_low')]['fid']['se']:.2f}" in se_md and "jackknife standard error" in se_md
    tsv = table1_tsv(table, uncertainty=iv, ci="interval").splitlines()
    assert tsv[0].split("\t")[3:5] == ["FID ▼ ci low", "FID ▼ ci high"]
    assert tsv[1].split("\t")[3] == f"{lo:.2f}"

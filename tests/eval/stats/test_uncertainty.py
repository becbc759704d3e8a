"""eval/stats/: intervals and tests against scipy on fixed data, Holm by hand, merge = one pass."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring.one_pass import collect, evaluate
from devil_dataset.eval.scoring.results import build_results, merge_results
from devil_dataset.eval.stats.intervals import BOOTSTRAP_RESAMPLES, results_uncertainty, video_summary
from devil_dataset.eval.stats.significance import (
    compare_methods,
    holm,
    indistinguishable_from_best,
    paired_comparison,
    sign_flip_test,
    smallest_sign_flip_p,
    unpaired_test,
)

VALUES = [31.2, 28.4, 35.9, 30.1, 33.3, 29.8, 27.5, 36.2]


def test_video_summary_matches_scipy_on_fixed_data():
    s = video_summary(VALUES, level=0.9, seed=3)
    assert s["n"] == len(VALUES) and s["level"] == 0.9
    assert s["mean"] == pytest.approx(np.mean(VALUES), rel=1e-12)
    assert s["se"] == pytest.approx(stats.sem(VALUES), rel=1e-12)  # std ddof 1 / sqrt(n)
    ref = stats.bootstrap((np.array(VALUES),), np.mean, confidence_level=0.9, n_resamples=BOOTSTRAP_RESAMPLES,
                          method="BCa", random_state=np.random.default_rng(3)).confidence_interval
    assert s["ci"] == pytest.approx([ref.low, ref.high], rel=1e-12)
    assert "BCa" in s["method"] and "seed 3" in s["method"]
    assert video_summary(VALUES, seed=3) == video_summary(VALUES, seed=3)  # deterministic


def test_video_summary_leaves_out_nan_and_handles_tiny_samples():
    assert video_summary(VALUES + [float("nan"), None]) == video_summary(VALUES)  # type: ignore[list-item]
    one = video_summary([4.0])
    assert one["n"] == 1 and one["mean"] == 4.0 and math.isnan(one["se"]) and all(map(math.isnan, one["ci"]))
    assert video_summary([2.5, 2.5, 2.5])["ci"] == [2.5, 2.5]
    lo, hi = video_summary([1.0, 3.0])["ci"]  # BCa undefined for 2 values: percentile fallback, finite
    assert 1.0 <= lo <= hi <= 3.0
    with pytest.raises(ValueError, match="level"):
        video_summary(VALUES, level=95)


def test_sign_flip_test_is_the_exact_enumeration():
    a = np.array([3.1, 2.0, 4.4, 1.2, 5.0, 2.2])
    b = np.array([2.9, 2.5, 3.0, 1.0, 4.1, 2.4])
    d = a - b
    null = [np.mean(d * np.array(s)) for s in itertools.product((1, -1), repeat=len(d))]
    expected = np.mean(np.abs(null) >= abs(np.mean(d)) - 1e-12)
    assert sign_flip_test(a, b) == pytest.approx(expected, rel=1e-12)
    assert smallest_sign_flip_p(5) == 2 / 32
    assert sign_flip_test(np.arange(5.0) + 1, np.arange(5.0)) == 2 / 32  # the best five videos can do


def test_sign_flip_monte_carlo_beyond_the_exact_limit_is_seeded():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=20), rng.normal(size=20)  # 2^20 > 100,000: Monte Carlo
    p = sign_flip_test(a, b, seed=1)
    assert p == sign_flip_test(a, b, seed=1) and 0 < p <= 1
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                                 permutation_type="samples", vectorized=True, n_resamples=100_000,
                                 random_state=np.random.default_rng(1)).pvalue
    # other random sign vectors than scipy's: the same p within Monte Carlo error (sd sqrt(p(1-p)/1e5) < 0.0016)
    assert p == pytest.approx(ref, abs=0.008)


def test_unpaired_test_matches_scipy_exact():
    low, high = [30.0, 31.5, 29.0, 33.0, 32.0], [25.0, 27.5, 31.0, 24.0, 26.0]
    ref = stats.permutation_test((low, high), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                                 permutation_type="independent", vectorized=True, n_resamples=100_000).pvalue
    assert unpaired_test(low, high) == pytest.approx(ref, rel=1e-12)
    assert unpaired_test(low, high) < 0.05  # C(10, 5) = 252 splits: an unpaired test over 5 + 5 videos can say so


def test_holm_against_a_hand_example():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == [0.03, 0.06, 0.06, 0.02]
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    out = holm([0.01, float("nan")])
    assert out[0] == 0.01 and math.isnan(out[1])


def _doc(method, values, slice_name="fg_size_high"):
    return {"slice": slice_name, "method": method, "videos": {f"c{i:02d}": {"psnr": v} for i, v in enumerate(values)}}


def test_separated_pair_is_significant_and_identical_methods_are_not():
    rng = np.random.default_rng(7)
    base = rng.normal(30, 3, size=12)
    docs = [_doc("good", base + 5 + rng.normal(0, 0.3, 12)), _doc("bad", base), _doc("twin", base.copy())]
    rows = compare_methods(docs)
    by_pair = {(r["a"], r["b"]): r for r in rows}
    sep, same = by_pair[("good", "bad")], by_pair[("bad", "twin")]
    assert sep["n"] == 12 and sep["mean_diff"] == pytest.approx(5, abs=0.5)
    assert sep["p"] == 2 / 2 ** 12 and sep["p_holm"] < 0.05 and sep["ci"][0] > 0
    assert same["p"] == 1.0 and same["p_holm"] == 1.0 and same["mean_diff"] == 0.0
    assert indistinguishable_from_best(rows, "fg_size_high", "psnr", "good") == set()
    assert indistinguishable_from_best(rows, "fg_size_high", "psnr", "bad") == {"twin"}
    assert [set(r) for r in rows][0] == {"slice", "metric", "a", "b", "n", "mean_diff", "ci", "ci_level",
                                        "p", "p_holm"}


def test_paired_comparison_uses_only_videos_both_scored():
    c = paired_comparison({"a": 2.0, "b": float("nan"), "c": 5.0}, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0})
    assert c["n"] == 2 and c["mean_diff"] == 2.5


def _videos(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        gt = rng.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
        pred = np.clip(gt.astype(int) + rng.integers(-20, 21, gt.shape), 0, 255).astype(np.uint8)
        hole = np.zeros((3, 32, 32), bool)
        hole[:, 8:20, 6:20] = True
        out.append(VideoSample(f"clip{i:02d}", gt, pred, hole))
    return out


def test_merging_halves_gives_the_numbers_of_one_pass():
    videos = _videos(8, 0)
    names = ["psnr", "ssim"]
    one = build_results(evaluate(videos, build_metrics(names, EvalOptions())[0], progress=False), method="m",
                        slice_name="s", inputs={}, options=EvalOptions(), metrics=names, skipped={})
    # two workers' parts, merged the way the engine merges them (states, then rows), second half first
    parts = [videos[4:], videos[:4]]
    first, _ = build_metrics(names, EvalOptions())
    per_video: dict = {}
    for k, part in enumerate(parts):
        ms = first if k == 0 else build_metrics(names, EvalOptions())[0]
        ev = evaluate(part, ms, progress=False)
        per_video.update(ev.videos)
        if k:
            for name, metric in first.items():
                metric.merge(ms[name].state_dict())
    merged = build_results(collect(first, per_video, 0), method="m", slice_name="s", inputs={},
                           options=EvalOptions(), metrics=names, skipped={})
    assert merged["uncertainty"] == one["uncertainty"]
    assert set(one["uncertainty"]) == {"psnr", "ssim"} and one["uncertainty"]["psnr"]["n"] == 8
    assert one["uncertainty"]["psnr"]["mean"] == pytest.approx(one["summary"]["psnr"], rel=1e-12)
    # documents of other metrics merged (merge_results) carry intervals recomputed from the joined values
    docs = [build_results(evaluate(videos, build_metrics([n], EvalOptions())[0], progress=False), method="m",
                          slice_name="s", inputs={}, options=EvalOptions(), metrics=[n], skipped={}) for n in names]
    assert merge_results(docs[0], docs[1])["uncertainty"] == one["uncertainty"]


def test_results_uncertainty_is_independent_of_video_order():
    rows = {f"c{i}": {"psnr": v} for i, v in enumerate(VALUES)}
    assert results_uncertainty(dict(reversed(list(rows.items())))) == results_uncertainty(rows)


def test_grouped_jackknife_frechet_against_direct_leave_one_out():
    from scipy.stats import t

    from devil_dataset.eval.kernels.frechet import GaussianStats, frechet_distance
    from devil_dataset.eval.stats.jackknife import grouped_jackknife_frechet, video_group

    rng = np.random.default_rng(5)
    feats = {f"clip{i}": (rng.normal(size=(6, 3)), rng.normal(0.3, 1.2, size=(6, 3))) for i in range(40)}
    groups = 5
    gts, comps = [GaussianStats() for _ in range(groups)], [GaussianStats() for _ in range(groups)]
    for c, (g, p) in feats.items():
        gts[video_group(c, groups)].add(g)
        comps[video_group(c, groups)].add(p)
    out = grouped_jackknife_frechet(gts, comps, videos=len(feats))

    def fd(ids):
        g = np.concatenate([feats[c][0] for c in ids])
        p = np.concatenate([feats[c][1] for c in ids])
        return frechet_distance(g.mean(0), np.cov(g, rowvar=False), p.mean(0), np.cov(p, rowvar=False))

    loo = np.array([fd([c for c in feats if video_group(c, groups) != k]) for k in range(groups)])
    se = np.sqrt((groups - 1) / groups * np.sum((loo - loo.mean()) ** 2))
    assert (out["n"], out["groups"]) == (len(feats), groups)
    assert out["mean"] == pytest.approx(fd(list(feats)), rel=1e-9)
    assert out["se"] == pytest.approx(se, rel=1e-9)
    half = t.ppf(0.975, groups - 1) * se
    assert out["ci"] == pytest.approx([out["mean"] - half, out["mean"] + half], rel=1e-9)
    assert math.isnan(grouped_jackknife_frechet(gts[:1], comps[:1])["se"])


def _data_frechet(x: np.ndarray, y: np.ndarray) -> float:
    """The Frechet distance of n <= D samples without a square root of a singular D x D product: the nonzero
    eigenvalues of cov(x) cov(y) are those of the n x n matrix Xc cov(y) Xc^T (Xc: centred x / sqrt(n - 1)), which
    has at most one zero eigenvalue."""
    xc = (x - x.mean(0)) / np.sqrt(len(x) - 1)
    sy = np.cov(y, rowvar=False)
    lam = np.linalg.eigvalsh(xc @ sy @ xc.T)
    d = x.mean(0) - y.mean(0)
    return float(d @ d + np.trace(np.cov(x, rowvar=False)) + np.trace(sy) - 2 * np.sum(np.sqrt(np.clip(lam, 0, None))))


@pytest.mark.parametrize("dim, n", [(3, 50), (40, 400), (40, 12), (200, 30)])
def test_frechet_distance_cholesky_against_sqrtm_and_the_exact_value(dim, n):
    """Full rank (n > dim): the release's sqrtm form within 1e-11; rank-deficient (n <= dim, as VFID): the exact
    value from the samples within 1e-8 (sqrtm of a singular product is only accurate to ~sqrt(eps))."""
    import warnings

    from devil_dataset.eval.kernels.frechet import frechet_distance
    from devil_dataset.eval.stats.jackknife import frechet_distance_cholesky

    rng = np.random.default_rng(dim + n)
    x = rng.normal(size=(n, dim))
    y = 0.7 * x + rng.normal(0.2, 0.5, size=(n, dim))
    args = (x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
    got = frechet_distance_cholesky(*args)
    if n > dim:
        assert got == pytest.approx(frechet_distance(*args), rel=1e-11)
    else:
        assert got == pytest.approx(_data_frechet(x, y), rel=1e-8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert got == pytest.approx(frechet_distance(*args), rel=1e-5)  # sqrtm: only near


def test_grouped_jackknife_frechet_takes_group_dicts_and_centres_on_the_given_value():
    from devil_dataset.eval.kernels.frechet import GaussianStats, frechet_of
    from devil_dataset.eval.stats.jackknife import grouped_jackknife_frechet, set_level_uncertainty

    rng = np.random.default_rng(8)
    gts = {g: GaussianStats() for g in (0, 2, 5)}
    comps = {g: GaussianStats() for g in (0, 2, 5, 7)}  # group 7: no ground truth -> left out
    for g in gts:
        gts[g].add(rng.normal(size=(20, 4)))
        comps[g].add(rng.normal(0.4, 1.1, size=(20, 4)))
    comps[7].add(rng.normal(size=(20, 4)))
    as_list = grouped_jackknife_frechet([gts[g] for g in (0, 2, 5)], [comps[g] for g in (0, 2, 5)])
    as_dict = grouped_jackknife_frechet(gts, comps)
    assert as_dict == as_list and as_dict["groups"] == 3 and as_dict["n"] == 60  # samples when videos not given
    pooled = [GaussianStats(), GaussianStats()]
    for g in gts:
        pooled = [pooled[0].merged(gts[g]), pooled[1].merged(comps[g])]
    assert as_dict["mean"] == frechet_of(*pooled)
    centred = grouped_jackknife_frechet(gts, comps, full=7.0, videos=9)
    assert centred["mean"] == 7.0 and centred["se"] == as_dict["se"] and centred["n"] == 9
    assert centred["ci"][0] + centred["ci"][1] == pytest.approx(14.0, rel=1e-12)
    u = set_level_uncertainty("fid", gts, comps, {0: 3, 2: 2, 5: 4}, {"fid": 7.0})
    assert u == {"fid": centred}
    assert set_level_uncertainty("fid", {}, {}, {}) == {}


def test_grouped_jackknife_leave_out_is_one_group_at_a_time_and_handles_one_sample_groups():
    """Groups of one video (VFID: one vector per video) have no scatter of their own; the leave-one-group-out
    statistics are still those of the remaining videos."""
    from devil_dataset.eval.kernels.frechet import GaussianStats, frechet_distance
    from devil_dataset.eval.stats.jackknife import grouped_jackknife_frechet

    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(6, 3)), rng.normal(0.5, 1.0, size=(6, 3))
    gts, comps = [GaussianStats() for _ in range(6)], [GaussianStats() for _ in range(6)]
    for i in range(6):
        gts[i].add(x[i:i + 1])
        comps[i].add(y[i:i + 1])
    out = grouped_jackknife_frechet(gts, comps)

    def fd(keep):
        return frechet_distance(x[keep].mean(0), np.cov(x[keep], rowvar=False), y[keep].mean(0),
                                np.cov(y[keep], rowvar=False))

    loo = np.array([fd([j for j in range(6) if j != i]) for i in range(6)])
    assert out["se"] == pytest.approx(np.sqrt(5 / 6 * np.sum((loo - loo.mean()) ** 2)), rel=1e-9)

"""Declared, mergeable metric state: two halves merged equal one pass; reset empties; I3D yields three keys."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.kernels.frechet import GaussianStats, frechet_of
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample, merge_state
from devil_dataset.eval.metrics.perceptual import FIDMetric
from devil_dataset.eval.metrics.pixel import PConsMetric, PSNRMetric, SSIMMetric
from devil_dataset.eval.metrics.warp import WarpErrorMetric


class _MeanColourNet:
    """A stand-in FID network: 6-d features per frame (channel means and standard deviations)."""

    def features(self, frames: np.ndarray) -> np.ndarray:
        x = frames.astype(np.float64).reshape(len(frames), -1, 3)
        return np.concatenate([x.mean(1), x.std(1)], axis=1)


def _samples(eval_make_video, n=4):
    return [VideoSample(f"c{i}", *eval_make_video(i, t=3 + i % 2, h=56, w=64)) for i in range(n)]


def test_gaussian_stats_merge_equals_one_pass():
    rng = np.random.default_rng(3)
    x = rng.normal(loc=50.0, scale=2.0, size=(200, 6))
    y = rng.normal(loc=50.5, scale=2.0, size=(150, 6))
    whole_x, whole_y = GaussianStats(), GaussianStats()
    whole_x.add(x)
    whole_y.add(y)
    a, b = GaussianStats(), GaussianStats()
    a.add(x[:70])
    b.add(x[70:])
    merged = a.merged(b)
    assert merged.n == 200
    np.testing.assert_allclose(merged.mean(), whole_x.mean(), rtol=1e-12)
    np.testing.assert_allclose(merged.cov(), whole_x.cov(), rtol=1e-10)
    assert frechet_of(merged, whole_y) == pytest.approx(frechet_of(whole_x, whole_y), rel=1e-9)
    assert GaussianStats().merged(a).n == 70 and a.merged(GaussianStats()).n == 70


@pytest.mark.parametrize("cls", [PSNRMetric, SSIMMetric, PConsMetric, WarpErrorMetric])
def test_per_video_metrics_merge_equals_one_pass(cls, eval_make_video):
    opts = EvalOptions(flow="dis")
    videos = _samples(eval_make_video)
    whole, left, right = cls(opts), cls(opts), cls(opts)
    for v in videos:
        whole.update(v)
    for v in videos[:2]:
        left.update(v)
    for v in videos[2:]:
        right.update(v)
    assert left.merge(right).compute() == whole.compute()


def test_fid_merge_of_halves_equals_one_pass(eval_make_video):
    videos = _samples(eval_make_video, 6)
    net = _MeanColourNet()
    whole, left, right = (FIDMetric(EvalOptions(batch_size=2), network=net) for _ in range(3))
    for v in videos:
        whole.update(v)
    for v in videos[:3]:
        left.update(v)
    for v in videos[3:]:
        right.update(v)
    expected = whole.compute()["fid"]
    assert np.isfinite(expected) and expected > 0
    assert left.merge(right).compute()["fid"] == pytest.approx(expected, rel=1e-9)
    left.reset()
    assert left.gt_stats.n == 0 and np.isnan(left.compute()["fid"])


def test_fid_prepared_ground_truth_gives_the_same_value(eval_make_video):
    videos = _samples(eval_make_video, 3)
    net = _MeanColourNet()
    direct, prepared = FIDMetric(EvalOptions(), network=net), FIDMetric(EvalOptions(), network=net)
    for v in videos:
        direct.update(v)
        prepared.update(v, prepared.prepare(v.gt))
    assert direct.compute() == prepared.compute()


def test_warp_error_prepared_once_serves_several_methods(eval_make_video):
    gt, pred, hole = eval_make_video(7, t=5)
    metric = WarpErrorMetric(EvalOptions(flow="dis"))
    flow = metric.prepare(gt, hole)
    for other in (pred, 255 - pred, gt):
        v = VideoSample("a", gt, other, hole)
        fresh = WarpErrorMetric(EvalOptions(flow="dis")).update(v)["warp_error_mask"]
        shared = metric.update(v, flow)["warp_error_mask"]
        assert shared == fresh or (np.isnan(shared) and np.isnan(fresh))


def test_merge_rejects_other_classes_and_unknown_state():
    with pytest.raises(TypeError):
        PSNRMetric().merge(SSIMMetric())
    with pytest.raises(TypeError):
        merge_state(object(), object())


@pytest.fixture(scope="module")
def protocol_i3d():
    from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state

    return load_i3d(state=random_i3d_state(seed=1))


def _tiny_videos(n):
    out = []
    for i in range(n):
        rng = np.random.default_rng(40 + i)
        gt = rng.integers(0, 256, (11, 16, 16, 3), dtype=np.uint8)
        hole = np.zeros(gt.shape[:3], bool)
        hole[:, 4:11, 5:12] = True
        out.append(VideoSample(f"t{i}", gt, 255 - gt, hole))
    return out


def test_one_i3d_metric_yields_pvcs_vfid_and_clips_and_merges(protocol_i3d):
    from devil_dataset.eval.metrics.i3d import I3DMetric, PVCSMetric, VFIDMetric

    opts = EvalOptions(batch_size=8)
    videos = _tiny_videos(4)
    whole, left, right = (I3DMetric(opts, network=protocol_i3d) for _ in range(3))
    pvcs, vfid = PVCSMetric(opts, network=protocol_i3d), VFIDMetric(opts, network=protocol_i3d)
    for i, v in enumerate(videos):
        row = whole.update(v)
        assert row == pvcs.update(v)  # the same pass (kept on the sample) serves both views
        vfid.update(v)
        (left if i < 2 else right).update(v)
    assert whole.keys == ("pvcs", "vfid", "vfid_clips")
    left.merge(right)
    assert left.values == whole.values == pvcs.values
    for name in ("gt_video", "comp_video", "gt_clips", "comp_clips"):
        a, b = getattr(left, name), getattr(whole, name)
        assert a.n == b.n == getattr(vfid, name).n
        np.testing.assert_allclose(a.mean(), b.mean(), rtol=1e-12)
        np.testing.assert_allclose(a.cov(), b.cov(), rtol=1e-9, atol=1e-15)


@pytest.mark.slow
def test_vfid_of_merged_halves_equals_one_pass(protocol_i3d):
    """Slow: two 1024-d matrix square roots per VFID value on CPU (tens of seconds).

    Why not 1e-9 relative: 4 videos (8 windows) in 1024 dimensions give singular covariances (rank 3 and 7), so
    sigma1 sigma2 has ~1020 zero eigenvalues. The merged statistics equal one pass's to rounding (covariances within
    1e-12 relative, asserted), but tr sqrtm(sigma1 sigma2) is not Lipschitz at a zero eigenvalue: ||sqrt(A + E) -
    sqrt(A)|| <= sqrt(||E||) for PSD A, so a rounding-level perturbation E ~ eps ||sigma1|| ||sigma2|| moves each of
    the D square roots by up to sqrt(||E||) and the distance (2 tr sqrt) by up to 2 D sqrt(eps ||sigma1|| ||sigma2||)
    (1e-5 and 5e-6 here; observed 2e-9 for VFID (clips)). That bound is the tolerance; full-rank statistics meet 1e-9
    (test_gaussian_stats_merge_equals_one_pass).
    """
    import warnings

    from devil_dataset.eval.metrics.i3d import VFIDMetric

    opts = EvalOptions(batch_size=8)
    videos = _tiny_videos(4)
    whole, left, right = (VFIDMetric(opts, network=protocol_i3d) for _ in range(3))
    for i, v in enumerate(videos):
        whole.update(v)
        (left if i < 2 else right).update(v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = whole.compute(), left.merge(right).compute()
    eps = np.finfo(np.float64).eps
    for key, (gt, comp) in (("vfid", ("gt_video", "comp_video")), ("vfid_clips", ("gt_clips", "comp_clips"))):
        s1, s2 = getattr(whole, gt).cov(), getattr(whole, comp).cov()
        for name in (gt, comp):
            np.testing.assert_allclose(getattr(left, name).cov(), getattr(whole, name).cov(), rtol=1e-12,
                                       atol=1e-12 * np.abs(getattr(whole, name).cov()).max())
        bound = 2 * len(s1) * np.sqrt(eps * np.linalg.norm(s1, 2) * np.linalg.norm(s2, 2))
        assert np.linalg.matrix_rank(s1) < len(s1)  # the singular case the bound is for
        assert got[key] == pytest.approx(expected[key], rel=1e-9, abs=bound)


# --- options: one parity switch resolving the metric modes ------------------------------------------------------

def test_eval_options_parity_sets_both_modes_and_an_explicit_mode_wins():
    assert (EvalOptions().parity, EvalOptions().ssim_mode, EvalOptions().pvcs_mode) == ("release", "release", "release")
    corrected = EvalOptions(parity="corrected")
    assert (corrected.ssim_mode, corrected.pvcs_mode) == ("standard", "corrected")
    expert = EvalOptions(parity="corrected", ssim_mode="release")
    assert (expert.ssim_mode, expert.pvcs_mode) == ("release", "corrected")
    assert EvalOptions(pvcs_mode="corrected").ssim_mode == "release"
    # the metrics read the resolved modes
    assert SSIMMetric(corrected).provenance()["data_range"] == 1.0
    assert SSIMMetric(EvalOptions()).provenance()["data_range"] == 2.0


@pytest.mark.parametrize("kwargs, needle", [
    (dict(parity="strict"), "parity: unknown parity 'strict'; valid: release, corrected"),
    (dict(ssim_mode="corrected"), "ssim_mode: unknown ssim mode 'corrected'; valid: release, standard"),
    (dict(parity="corrected", pvcs_mode="own"), "pvcs_mode: unknown pvcs mode 'own'; valid: release, corrected"),
])
def test_eval_options_refuse_unknown_parity_and_modes(kwargs, needle):
    from devil_dataset.core.errors import DevilError

    with pytest.raises(DevilError) as exc:
        EvalOptions(**kwargs)
    assert str(exc.value).startswith(needle)


def test_eval_parity_table_names_the_metrics_modes():
    from devil_dataset.core.parity import PARITIES, mode_choices
    from devil_dataset.eval.kernels.pixel import SSIM_DATA_RANGE
    from devil_dataset.eval.metrics.i3d import PVCS_MODES
    from devil_dataset.eval.metrics.metric import EVAL_PARITY_MODES

    assert tuple(EVAL_PARITY_MODES) == PARITIES
    assert mode_choices(EVAL_PARITY_MODES, "ssim_mode") == tuple(SSIM_DATA_RANGE)
    assert mode_choices(EVAL_PARITY_MODES, "pvcs_mode") == PVCS_MODES

"""PSNR and SSIM equal scikit-image; vectorised PCons equals a direct implementation of the release's loop."""
from __future__ import annotations

import math

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from devil_dataset.eval.kernels.pixel import (
    clip_psnr_values,
    hole_centroid_topleft,
    mean_of,
    pcons_psnr_mask,
    pcons_psnr_mask_pairs,
    pcons_release_loop,
    psnr,
    psnr_frames,
    ssim,
    ssim_frames,
)
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.pixel import PConsMetric, PSNRMetric, SSIMMetric


def _same(a, b) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(np.isinf(a), np.isinf(b))
    fin = np.isfinite(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=0, atol=1e-9)


def test_psnr_equals_skimage(eval_make_video):
    gt, pred, _ = eval_make_video(0, t=4)
    expected = [peak_signal_noise_ratio(g.astype(np.float32) / 255, p.astype(np.float32) / 255, data_range=1)
                for g, p in zip(gt, pred)]
    _same(psnr_frames(pred, gt), expected)
    assert psnr(pred, gt) == pytest.approx(np.mean(expected), abs=1e-12)


def test_psnr_identical_frame_is_infinite():
    a = np.zeros((2, 8, 8, 3), np.uint8)
    b = a.copy()
    b[1, 0, 0] = 255
    values = psnr_frames(b, a)
    assert math.isinf(values[0]) and math.isfinite(values[1])


def _release_ssim(gt: np.ndarray, test: np.ndarray, data_range: float) -> float:
    """The release's SSIM of one frame pair: scikit-image on the float32 frames converted to float64 (as its
    scikit-image 0.17.2 does before filtering), uniform 7x7 window, sample covariance."""
    def as64(a):
        return (a.astype(np.float32) / np.float32(255)).astype(np.float64)

    return float(structural_similarity(as64(gt), as64(test), win_size=7, data_range=data_range, channel_axis=-1))


# measured largest relative difference from the release's float64 scikit-image over this file's cases: see
# docs/release-metrics.md (its running-sum filter rounds; our window sums are exact)
SSIM_RELEASE_RTOL = 1e-13


@pytest.mark.parametrize("mode,data_range", [("release", 2.0), ("standard", 1.0)])
def test_ssim_equals_skimage(eval_make_video, mode, data_range):
    gt, pred, _ = eval_make_video(1, t=3)
    expected = [_release_ssim(g, p, data_range) for g, p in zip(gt, pred)]
    np.testing.assert_allclose(ssim_frames(pred, gt, mode), expected, rtol=SSIM_RELEASE_RTOL, atol=0)
    assert ssim(pred, gt, mode) == pytest.approx(np.mean(np.asarray(expected, np.float64)), abs=1e-12)
    # current scikit-image computes float32 frames in float32: about 1e-8 away, where the release never was
    float32 = [structural_similarity(g.astype(np.float32) / 255, p.astype(np.float32) / 255, win_size=7,
                                     data_range=data_range, channel_axis=-1) for g, p in zip(gt, pred)]
    np.testing.assert_allclose(ssim_frames(pred, gt, mode), float32, rtol=1e-6)


def test_ssim_modes_differ_and_unknown_mode_fails(eval_make_video):
    gt, pred, _ = eval_make_video(2, t=1)
    assert ssim(pred, gt, "release") > ssim(pred, gt, "standard")
    with pytest.raises(ValueError, match="unknown ssim mode"):
        ssim(pred, gt, "other")
    with pytest.raises(ValueError, match="unknown ssim mode"):
        SSIMMetric(EvalOptions(ssim_mode="other"))


def test_centroid_matches_np_where_mean():
    rng = np.random.default_rng(3)
    hole = rng.random((6, 90, 120)) < 0.05
    hole[2] = False
    tl = hole_centroid_topleft(hole, (90, 120))
    for t in range(6):
        rows, cols = np.where(hole[t])
        if len(rows) == 0:
            assert tl[t].tolist() == [-1, -1]
            continue
        assert tl[t, 0] == np.clip(math.floor(rows.mean() - 25), 0, 40)
        assert tl[t, 1] == np.clip(math.floor(cols.mean() - 25), 0, 70)


PCONS_CASES = {
    # name: (seed, T, H, W, shift, noise, hole box (y, x, h, w))
    "centre": (0, 4, 120, 160, (1, 2), 2, (45, 60, 20, 30)),
    "top-left border": (1, 3, 100, 130, (2, 1), 1, (0, 0, 15, 15)),
    "bottom-right border": (2, 3, 100, 130, (1, 1), 3, (80, 110, 15, 15)),
    "frame barely above the patch": (3, 3, 55, 62, (0, 1), 2, (10, 10, 20, 20)),
    "static scene (exact match)": (4, 3, 90, 90, (0, 0), 0, (30, 30, 20, 20)),
}


@pytest.mark.parametrize("case", sorted(PCONS_CASES))
def test_pcons_vectorised_equals_release_loop(eval_make_video, case):
    seed, t, h, w, shift, noise, box = PCONS_CASES[case]
    gt, pred, hole = eval_make_video(seed, t=t, h=h, w=w, shift=shift, noise=noise, hole_box=box)
    comp = np.where(hole[..., None], pred, gt)
    _same(pcons_psnr_mask_pairs(comp, hole), pcons_release_loop(comp, hole))


def test_pcons_smooth_content_with_ties_and_no_hole_frame():
    # smooth gradients give many near-equal windows (ties / near-ties must still pick the exact best)
    y, x = np.mgrid[0:80, 0:100]
    frame = np.stack([(x * 2) % 256, (y * 3) % 256, ((x + y) // 2) % 256], -1).astype(np.uint8)
    frames = np.stack([frame, np.roll(frame, 1, axis=1), np.roll(frame, 2, axis=0), frame])
    hole = np.zeros((4, 80, 100), bool)
    hole[0, 30:50, 40:60] = True
    hole[2, 70:80, 90:100] = True  # frame 1 has no hole: its pair is skipped
    got = pcons_psnr_mask_pairs(frames, hole)
    _same(got, pcons_release_loop(frames, hole))
    assert np.isnan(got[1])
    assert pcons_psnr_mask(frames, hole) == pytest.approx(np.nanmean(got))


def test_pcons_edge_cases():
    frames = np.zeros((1, 60, 60, 3), np.uint8)
    assert math.isnan(pcons_psnr_mask(frames, np.ones((1, 60, 60), bool)))  # a single frame: no pair
    with pytest.raises(ValueError, match="smaller than"):
        pcons_psnr_mask_pairs(np.zeros((2, 40, 60, 3), np.uint8), np.ones((2, 40, 60), bool))


def test_clip_psnr_values():
    clipped, cap = clip_psnr_values([30.0, math.inf, 40.0, math.nan])
    assert cap == 40.0
    _same(clipped, [30.0, 40.0, 40.0, math.nan])
    clipped, cap = clip_psnr_values([math.inf, math.inf])  # nothing finite to clip to -> inf
    assert cap == math.inf and clipped.tolist() == [math.inf, math.inf]
    assert mean_of(clipped) == math.inf  # not the float64 maximum (a sentinel printed as a score)
    big = np.finfo(np.float64).max
    assert mean_of(np.array([big, big])) == big  # no overflow
    assert math.isnan(mean_of(np.array([math.nan])))


def test_metric_classes_clip_infinite_videos(eval_make_video):
    gt, pred, hole = eval_make_video(5, t=3)
    perfect = VideoSample("perfect", gt, gt, hole)
    noisy = VideoSample("noisy", gt, pred, hole)
    m = PSNRMetric(EvalOptions())
    assert math.isinf(m.update(perfect)["psnr"])
    v = m.update(noisy)["psnr"]
    assert m.compute()["psnr"] == pytest.approx(v)  # the infinite video counts as the best finite one
    s = SSIMMetric(EvalOptions())
    assert s.update(perfect)["ssim"] == 1.0
    p = PConsMetric(EvalOptions())
    value = p.update(noisy)["pcons_psnr_mask"]
    assert value == pytest.approx(np.nanmean(pcons_release_loop(noisy.composite, hole)), abs=1e-9)
    assert p.provenance()["patch"] == 50 and s.provenance()["data_range"] == 2.0


def test_pcons_near_ties_at_high_intensity():
    """Bright, low-contrast frames: many windows have exact SSDs within float32 rounding of each other."""
    rng = np.random.default_rng(7)
    f0 = rng.integers(250, 256, (66, 70, 3)).astype(np.uint8)
    frames = np.stack([f0, np.clip(np.roll(f0, (1, 2), (0, 1)).astype(int) + rng.integers(-1, 2, f0.shape), 0, 255),
                       rng.integers(250, 256, (66, 70, 3))]).astype(np.uint8)
    hole = np.zeros((3, 66, 70), bool)
    hole[:, 25:40, 25:45] = True
    _same(pcons_psnr_mask_pairs(frames, hole), pcons_release_loop(frames, hole))


@pytest.mark.parametrize("mode,data_range", [("release", 2.0), ("standard", 1.0)])
@pytest.mark.parametrize("shape", [(2, 7, 7, 3), (2, 37, 53, 3), (1, 120, 208, 3), (1, 30, 40, 1)])
def test_ssim_equals_the_release_float64(shape, mode, data_range):
    """Random, constant, identical, holed and inverted frames: within 1e-13 of the release's float64 SSIM, and
    exactly 1.0 for identical frames."""
    rng = np.random.default_rng(sum(shape))
    gt = rng.integers(0, 256, shape, dtype=np.uint8)
    holed = gt.copy()
    h, w = shape[1], shape[2]
    holed[:, h // 4 : h // 2 + 1, w // 4 : w // 2 + 1] = rng.integers(0, 256, 3, np.uint8)[: shape[3]]
    flat = np.full(shape, 200, np.uint8)
    for a, b in [(gt, holed), (holed, gt), (gt, gt), (flat, gt), (flat, flat), (gt, 255 - gt)]:
        expected = [_release_ssim(g, p, data_range) for g, p in zip(a, b)]
        np.testing.assert_allclose(ssim_frames(b, a, mode), expected, rtol=SSIM_RELEASE_RTOL, atol=0)
        if a is b:
            assert ssim_frames(b, a, mode).tolist() == [1.0] * len(a)


def test_ssim_frame_smaller_than_window_fails_like_skimage():
    a = np.zeros((1, 5, 9, 3), np.uint8)
    with pytest.raises(ValueError, match="win_size exceeds image extent"):
        ssim_frames(a, a)


def _holed_pairs(rng, shape, n):
    """Random clips with holes of many shapes (touching borders, thin, several pieces, empty) and fills."""
    t, h, w, c = shape
    for i in range(n):
        gt = rng.integers(0, 256, shape, dtype=np.uint8)
        if i % 3 == 1:  # smooth content: small local variances
            gt = np.broadcast_to(np.linspace(0, 255, w, dtype=np.uint8)[None, None, :, None], shape).copy()
        hole = np.zeros(shape[:3], bool)
        for f in range(t):
            for _ in range(rng.integers(0, 3)):
                y0, x0 = rng.integers(0, h), rng.integers(0, w)
                hole[f, y0 : y0 + rng.integers(1, h), x0 : x0 + rng.integers(1, w)] = True
        pred = gt.copy()
        kind = i % 4
        noise = rng.integers(0, 256, shape, dtype=np.uint8)
        if kind == 1:  # a near-perfect fill: off by one here and there
            noise = np.clip(gt.astype(int) + rng.integers(-1, 2, shape), 0, 255).astype(np.uint8)
        elif kind == 2:  # a perfect fill: the composite equals the ground truth
            noise = gt
        pred[hole] = noise[hole]
        if kind == 3:  # a prediction that also changes known pixels (the composite must not see them)
            pred = noise
        yield gt, pred, hole


@pytest.mark.parametrize("mode", ["release", "standard"])
@pytest.mark.parametrize("shape", [(4, 40, 56, 3), (3, 7, 9, 3), (2, 64, 33, 1)])
def test_ssim_and_psnr_on_the_changed_region_are_bit_identical(shape, mode):
    """Scoring only where the composite differs (SSIM's changed rows and columns, PSNR's hole box) gives the very
    floats of the whole-frame computation, for holes anywhere (borders, thin, several pieces, none)."""
    from devil_dataset.eval.kernels.pixel import psnr_frames

    rng = np.random.default_rng(sum(shape))
    for gt, pred, hole in _holed_pairs(rng, shape, 12):
        comp = np.where(hole[..., None], pred, gt)
        whole = ssim_frames(comp, gt, mode)
        assert ssim_frames(comp, gt, mode, hole).tolist() == whole.tolist()
        assert psnr_frames(comp, gt, hole).tolist() == psnr_frames(comp, gt).tolist()


def test_psnr_changed_region_falls_back_when_the_sum_could_round():
    """A frame whose squared differences add up past the exact float64 range is summed whole, as before."""
    from devil_dataset.eval.kernels.pixel import _EXACT_SUM_LIMIT, psnr_frames

    gt = np.zeros((1, 120, 100, 3), np.uint8)
    pred = np.full_like(gt, 255)  # every term is 1.0: the sum is 36000 > 2**13
    hole = np.ones(gt.shape[:3], bool)
    assert 120 * 100 * 3 > _EXACT_SUM_LIMIT
    assert psnr_frames(pred, gt, hole).tolist() == psnr_frames(pred, gt).tolist() == [0.0]


def test_ssim_metric_scores_around_the_hole_as_over_whole_frames():
    """The metric computes the map around the hole only (the composite equals the ground truth elsewhere): the
    value of whole frames, and nothing prepared per clip."""
    rng = np.random.default_rng(4)
    gt = rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 8:20, 8:20] = True
    video = VideoSample("c", gt, rng.integers(0, 256, gt.shape, dtype=np.uint8), hole)
    metric = SSIMMetric()
    assert metric.prepare(gt, hole) is None
    assert metric.update(video) == {"ssim": ssim(video.composite, gt)}
    assert metric.compute()["ssim"] == ssim(video.composite, gt) < 1.0

"""The ProPainter protocol's per-frame math against restated references: scikit-image's SSIM with their
arguments, their PSNR, OpenCV's dilation; each protocol step fails here if done the DEVIL way."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy import ndimage
from skimage.metrics import structural_similarity

from devil_dataset.core.errors import InvalidInputError
from devil_dataset.eval.kernels.composite import composite
from devil_dataset.eval.kernels.warp import occlusion_mask, warp_backward
from devil_dataset.eval.protocols.propainter.kernels import (
    dilate_hole,
    ewarp_pair,
    ewarp_video,
    hole_psnr_frames,
    hole_ssim_frames,
    map_sums,
    psnr_frames,
    ssim_frame,
    ssim_frames,
    ssim_map,
)

from ...davis_data import reference_psnr, reference_ssim


def _frames(seed: int, t: int = 3, h: int = 80, w: int = 120, hole: bool = True):
    rng = np.random.default_rng(seed)
    gt = np.stack([cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (0, 0), 2) for _ in range(t)])
    pred = np.clip(gt.astype(np.int16) + rng.integers(-40, 41, gt.shape), 0, 255).astype(np.uint8)
    m = np.zeros((t, h, w), bool)
    if hole:
        for i in range(t):
            m[i, 20 + i:45 + i, 30 + 2 * i:70 + 2 * i] = True
    return gt, pred, m


# ----------------------------------------------------------------------------------------------- dilation


def test_dilation_is_a_3x3_cross_four_times_as_opencv_and_scipy_compute_it():
    rng = np.random.default_rng(0)
    hole = rng.random((4, 40, 50)) > 0.97
    ours = dilate_hole(hole)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    for h, o in zip(hole, ours):
        assert np.array_equal(o, cv2.dilate(h.astype(np.uint8), cross, iterations=4) > 0)
        # the same as scipy's binary dilation with the cross and a zero border
        assert np.array_equal(o, ndimage.binary_dilation(h, ndimage.generate_binary_structure(2, 1), iterations=4))
    one = np.zeros((11, 11), bool)
    one[5, 5] = True
    assert dilate_hole(one).sum() == 41  # a diamond of radius 4
    # the DEVIL way (no dilation) or a square kernel give other holes
    assert not np.array_equal(ours, hole)
    square = np.stack([cv2.dilate(h.astype(np.uint8), np.ones((3, 3), np.uint8), iterations=4) > 0 for h in hole])
    assert not np.array_equal(ours, square)
    assert dilate_hole(np.zeros((0, 4, 4), bool)).shape == (0, 4, 4)
    with pytest.raises(InvalidInputError):
        dilate_hole(np.zeros((4, 4), np.uint8))


def test_composite_keeps_the_ground_truth_outside_the_dilated_hole():
    gt, pred, hole = _frames(1)
    dilated = dilate_hole(hole)
    comp = composite(pred, gt, dilated)
    restated = pred * dilated[..., None].astype(np.uint8) + gt * (1 - dilated[..., None].astype(np.uint8))
    assert np.array_equal(comp, restated)
    # the DEVIL way composites with the undilated hole: the ring the dilation adds would be ground truth
    assert not np.array_equal(comp, composite(pred, gt, hole))


# ---------------------------------------------------------------------------------------------- PSNR, SSIM


def test_psnr_equals_their_formula_per_frame():
    gt, pred, hole = _frames(2)
    comp = composite(pred, gt, dilate_hole(hole))
    ours = psnr_frames(comp, gt)
    assert ours.tolist() == [reference_psnr(g, c) for g, c in zip(gt, comp)]  # the same floats: exact sums
    assert psnr_frames(gt[:1], gt[:1])[0] == np.inf
    with pytest.raises(InvalidInputError):
        psnr_frames(comp[:, :10], gt)


@pytest.mark.parametrize("case", ["hole", "whole frame", "window-sized", "one pixel", "extremes"])
def test_ssim_equals_scikit_image_with_their_arguments(case):
    if case == "window-sized":
        gt, pred, hole = _frames(3, t=2, h=65, w=65)
        comp = pred
    elif case == "whole frame":
        gt, pred, hole = _frames(4, t=2, h=90, w=140)
        comp = pred
    elif case == "one pixel":
        gt, pred, hole = _frames(5, t=2)
        comp = gt.copy()
        comp[:, 40, 60] ^= 0xFF
    elif case == "extremes":
        rng = np.random.default_rng(6)
        gt = (rng.random((2, 70, 90, 3)) > 0.5).astype(np.uint8) * 255
        comp = 255 - gt
    else:
        gt, pred, hole = _frames(7)
        comp = composite(pred, gt, dilate_hole(hole))
    ours = ssim_frames(comp, gt)
    reference = np.array([reference_ssim(g, c) for g, c in zip(gt, comp)])
    assert np.abs(ours - reference).max() <= 1e-9


def test_ssim_window_is_65_uniform_not_devils_7x7():
    gt, pred, hole = _frames(8)
    comp = composite(pred, gt, dilate_hole(hole))
    ours = ssim_frames(comp, gt)
    devil_way = np.array([structural_similarity(g.astype(np.float64), c.astype(np.float64), data_range=255,
                                                channel_axis=-1) for g, c in zip(gt, comp)])  # default 7x7
    gaussian = np.array([structural_similarity(g.astype(np.float64), c.astype(np.float64), data_range=255,
                                               channel_axis=-1, gaussian_weights=True, sigma=1.5,
                                               use_sample_covariance=False) for g, c in zip(gt, comp)])
    assert np.abs(ours - devil_way).min() > 1e-3
    assert np.abs(ours - gaussian).min() > 1e-3


def test_ssim_given_the_changed_pixels_is_the_same_value():
    gt, pred, hole = _frames(9)
    dilated = dilate_hole(hole)
    comp = composite(pred, gt, dilated)
    assert np.array_equal(ssim_frames(comp, gt, dilated), ssim_frames(comp, gt))
    assert ssim_frame(gt[0], gt[0]) == 1.0
    full = ssim_map(gt[0], comp[0])
    assert np.allclose(map_sums(gt[0], comp[0]), full.reshape(-1, 3).sum(axis=0), rtol=1e-13, atol=0)
    assert (ssim_map(gt[0], gt[0]) == 1).all()  # identical windows give exactly 1


def test_ssim_refuses_what_it_cannot_score():
    gt, pred, _ = _frames(10, h=40, w=40)
    with pytest.raises(InvalidInputError, match="smaller than the 65x65 window"):
        ssim_frames(pred, gt)
    with pytest.raises(InvalidInputError, match="uint8"):
        ssim_frames(pred.astype(np.float64), gt.astype(np.float64))


# --------------------------------------------------------------------------------------------- hole-only


def test_hole_only_psnr_and_ssim_definitions():
    gt, pred, hole = _frames(11)
    dilated = dilate_hole(hole)
    comp = composite(pred, gt, dilated)
    hp = hole_psnr_frames(comp, gt, dilated)
    for t in range(len(gt)):
        d = gt[t][dilated[t]].astype(np.float64) - comp[t][dilated[t]].astype(np.float64)
        assert hp[t] == pytest.approx(20 * np.log10(255 / np.sqrt(np.mean(d ** 2))), abs=1e-9)
    assert (hp < psnr_frames(comp, gt)).all()  # the unchanged background no longer dilutes the error
    hs = hole_ssim_frames(comp, gt, dilated)
    for t in range(len(gt)):
        _, smap = structural_similarity(gt[t].astype(np.float64), comp[t].astype(np.float64), data_range=255,
                                        channel_axis=-1, win_size=65, full=True)
        centres = dilated[t][32:-32, 32:-32]
        expected = np.mean([smap[32:-32, 32:-32, c][centres].mean() for c in range(3)])
        assert hs[t] == pytest.approx(expected, abs=1e-9)
    empty = np.zeros_like(dilated)
    assert np.isnan(hole_psnr_frames(comp, gt, empty)).all() and np.isnan(hole_ssim_frames(comp, gt, empty)).all()


# ------------------------------------------------------------------------------------------------- E_warp


def test_ewarp_is_the_per_channel_mean_over_non_occluded_pixels():
    rng = np.random.default_rng(12)
    comp = rng.integers(0, 256, (3, 24, 32, 3), dtype=np.uint8)
    fw = np.zeros((2, 24, 32, 2), np.float32)
    fw[..., 0], fw[..., 1] = 1.25, -0.5
    fw[:, 10:14, 10:20] = 6.0  # a moving patch: occlusions at its borders
    bw = -fw + rng.normal(0, 0.3, fw.shape).astype(np.float32)
    values = []
    assert 0 < occlusion_mask(fw[0], bw[0]).mean() < 0.5
    for t in range(2):
        c0, c1 = comp[t].astype(np.float32) / 255, comp[t + 1].astype(np.float32) / 255
        noc = np.repeat((~occlusion_mask(fw[t], bw[t]))[..., None], 3, axis=2).astype(np.float64)
        err = ((warp_backward(c1, fw[t]) - c0).astype(np.float64) ** 2 * noc).sum() / noc.sum()
        values.append(err)
        assert ewarp_pair(comp[t], comp[t + 1], fw[t], bw[t]) == pytest.approx(err, rel=1e-12)
    assert ewarp_video(comp, fw, bw) == pytest.approx(np.mean(values), rel=1e-12)
    assert np.isnan(ewarp_video(comp[:1], fw[:0], bw[:0]))

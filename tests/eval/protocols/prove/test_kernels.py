"""PROVE's RC-S / RC-T steps, one test per step, each failing when the step is done another way: the
component filter, the bounding square, the resize and padding, the pooling, the window rule and the MMD. The
reference for each is the plain restatement in ``benchmarks/prove_reference.py`` or the library call their code
makes (``torch.nn.functional.unfold`` / ``adaptive_max_pool2d`` / ``cdist``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from devil_dataset.eval.protocols.prove import kernels as k

from ...conftest import load_benchmark


@pytest.fixture(scope="module")
def ref():
    return load_benchmark("prove_reference")


def test_components_are_4_connected_and_small_ones_dropped():
    b = np.zeros((40, 40), bool)
    b[0:15, 0:15] = True          # 225 px: kept
    b[15, 15] = True              # touches only diagonally: its own component (8-connectivity would merge it)
    b[30:40, 30:49] = True        # 100 px: dropped (< 200 while a larger one exists)
    kept = k.kept_components(b)
    assert [int(c.sum()) for c in kept] == [225]
    small = np.zeros((20, 20), bool)
    small[0:3, 0:3] = True        # 9 px
    small[10:13, 10:13] = True    # 9 px: a tie for the largest, both kept
    small[18, 18] = True          # 1 px: dropped
    assert [int(c.sum()) for c in k.kept_components(small)] == [9, 9]
    assert k.kept_components(np.zeros((5, 5), bool)) == []


def test_bounding_square_matches_the_restatement_and_rounds_half_to_even(ref):
    rng = np.random.default_rng(0)
    for _ in range(300):
        h, w = rng.integers(8, 60, 2)
        m = np.zeros((h, w), np.uint8)
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        m[y0:y0 + rng.integers(1, h), x0:x0 + rng.integers(1, w)] = 255
        assert k.bounding_square(m) == ref.square_of(m)
    m = np.zeros((50, 50), np.uint8)
    m[10:15, 10:20] = 255  # 10x5 box: centre y 12.5, corner 12.5 - 5 = 7.5 -> round half to even = 8
    x1, y1, x2, y2 = k.bounding_square(m)
    assert (x2 - x1, y2 - y1) == (16, 16) and y1 == 8 - 3 and x1 == 10 - 3
    wide = np.zeros((20, 100), np.uint8)
    wide[5:15, 10:90] = 255  # an 80-pixel side: capped at the frame's 20-pixel height, still a square
    x1, y1, x2, y2 = k.bounding_square(wide)
    assert (x2 - x1, y2 - y1, y1) == (20, 20, 0)


def test_resize_truncates_and_pads_with_their_colour():
    g = k.grid_geometry(55, 55)  # int(55 * (448 / 55)) = 447: one short, padded by 1
    assert g.resized_hw == (447, 447) and g.pad_hw == (1, 1) and g.grid_hw == (32, 32)
    image = k.network_input(np.zeros((55, 55, 3), np.uint8), g)
    assert image.shape == (448, 448, 3)
    assert image[447, 0].tolist() == [123, 116, 103] and image[0, 447].tolist() == [123, 116, 103]
    assert image[446, 446].tolist() == [0, 0, 0]
    g2 = k.grid_geometry(30, 60)
    assert g2.resized_hw == (224, 448) and g2.grid_hw == (16, 32)


def test_pooling_is_adaptive_max_pool_of_the_grey_values():
    rng = np.random.default_rng(1)
    mask = (rng.random((55, 55)) > 0.97).astype(np.uint8) * rng.integers(1, 255, (55, 55)).astype(np.uint8)
    g = k.grid_geometry(55, 55)
    ours = k.pooled_mask(mask, g)
    import cv2

    resized = cv2.resize(mask.astype(np.float32), (447, 447), interpolation=cv2.INTER_NEAREST)
    padded = cv2.copyMakeBorder(resized, 0, 1, 0, 1, cv2.BORDER_CONSTANT, value=0)
    theirs = torch.nn.functional.adaptive_max_pool2d(torch.as_tensor(padded)[None, None], (32, 32))[0, 0].numpy()
    np.testing.assert_array_equal(ours, theirs)
    assert set(np.unique(ours)) - {0.0} <= set(np.unique(mask).astype(np.float32))  # grey values, not thresholded


def test_windows_follow_unfold_and_the_cell_rules():
    for gh, gw in ((32, 32), (16, 32), (37, 20), (7, 9)):
        cells = k.window_cells(gh, gw)
        kk, st = k.window_geometry(gh, gw)
        grid = torch.arange(gh * gw, dtype=torch.float64).reshape(1, 1, gh, gw)
        unfolded = torch.nn.functional.unfold(grid, kernel_size=kk, stride=st)[0].T.numpy().astype(np.int64)
        np.testing.assert_array_equal(cells, unfolded)
    # RC-S: a window needs MORE than 5 hole cells and more than 5 known ones (or none known)
    p = np.zeros((16, 16), np.float32)  # kernel 4, stride 2
    p[0, 0:6] = 1.0                     # window (0, 0): 4 hole cells; window (0, 2): 4; never > 5
    assert len(k.rcs_window_sets(p)[0]) == 0
    p[1, 0:2] = 1.0                     # window (0, 0): 6 hole cells, 10 known: scored
    hole, known = k.rcs_window_sets(p)
    assert len(hole) == 1 and int(hole[0].sum()) == 6 and int(known[0].sum()) == 10
    full = np.full((16, 16), 9.0, np.float32)
    assert len(k.rcs_window_sets(full)[0]) == 0  # all hole, no known cell in the crop: nothing to compare with
    # RC-T: AT LEAST 5 shared cells (> 0.5 in both)
    a = np.zeros((16, 16), np.float32)
    a[0, 0:4] = 255
    a[1, 0] = 255                       # 5 cells in window (0, 0)
    assert k.rct_window_sets(a, a).sum(1).tolist() == [5]
    b = a.copy()
    b[1, 0] = 0                         # only 4 shared
    assert len(k.rct_window_sets(a, b)) == 0


def test_mmd_matches_their_formula(ref):
    rng = np.random.default_rng(2)
    f = rng.normal(size=(64, 24))
    x = np.zeros((3, 64), bool)
    y = np.zeros((3, 64), bool)
    x[0, :10], y[0, 10:40] = True, True
    x[1, 5:30], y[1, 30:] = True, True
    x[2, ::3], y[2, 1::3] = True, True
    fn = k.normalized(f)
    kern = k.rbf_kernel(fn, fn)
    ours = k.set_mmd(kern, kern, kern, x, y)
    t = torch.as_tensor(f)
    for i in range(3):
        direct = float(ref.mmd(t[torch.as_tensor(x[i])], t[torch.as_tensor(y[i])]))  # float64 tensors in: float64
        assert math.isclose(ours[i], direct, rel_tol=1e-9)
        f32 = float(k.float32_mmds(f, f, x[i:i + 1], y[i:i + 1])[0])
        assert f32 == float(ref.mmd(t.float()[torch.as_tensor(x[i])], t.float()[torch.as_tensor(y[i])]))
    # sigma 10 and the x1000 scale: two orthogonal unit vectors
    e = k.normalized(np.eye(2))
    ke = k.rbf_kernel(e, e)
    value = k.set_mmd(ke, ke, ke, np.array([[1, 0]], bool), np.array([[0, 1]], bool))[0]
    assert math.isclose(value, (2 - 2 * math.exp(-2 / 200)) * 1000, rel_tol=1e-12)


def test_rcs_value_is_exp_of_the_clipped_mean_over_three():
    rng = np.random.default_rng(3)
    f = rng.normal(size=(256, 8))
    p = np.zeros((16, 16), np.float32)
    p[4:12, 4:12] = 255
    hole, known = k.rcs_window_sets(p)
    fn = k.normalized(f)
    kern = k.rbf_kernel(fn, fn)
    raw = float(np.mean(k.set_mmd(kern, kern, kern, hole, known)))
    assert math.isclose(k.rcs_crop_value(f, p), math.exp(-max(0.0, raw) / 3), rel_tol=1e-12)
    assert math.isclose(k.rcs_crop_value(f, p, "float32"), k.rcs_crop_value(f, p), rel_tol=1e-4)

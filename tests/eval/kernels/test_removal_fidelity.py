"""Background and masked PSNR: the integer sums of squared errors give the bits of the float64 definitions (the
module docstring's), on random videos with an identical frame (capped), an all-hole frame (NaN) and no hole."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.kernels.pixel import one_grey_level_psnr
from devil_dataset.eval.kernels.removal_fidelity import background_psnr_frames, masked_psnr_frames


def _psnr_as_defined(sq: float, n: int) -> tuple[float, float]:
    if n == 0:
        return float("nan"), 0.0
    value = float("inf") if sq == 0 else 10.0 * np.log10(255.0 ** 2 * n / sq)
    cap = one_grey_level_psnr(n)
    return min(value, cap), float(value > cap)


def _background_as_defined(ref: np.ndarray, out: np.ndarray, hole: np.ndarray) -> np.ndarray:
    d = ref.astype(np.float64) - out.astype(np.float64)
    rows = [_psnr_as_defined(float((d[t][~hole[t]] ** 2).sum()), int((~hole[t]).sum()) * 3) for t in range(len(ref))]
    return np.array(rows).T


def _masked_as_defined(ref: np.ndarray, out: np.ndarray, hole: np.ndarray) -> np.ndarray:
    m = hole[..., None].astype(np.float64)
    d = ref.astype(np.float64) * m - out.astype(np.float64) * m
    return np.array([_psnr_as_defined(float((d[t] ** 2).sum()), d[t].size) for t in range(len(ref))]).T


@pytest.mark.parametrize("shape", [(6, 48, 80, 3), (3, 7, 9, 3), (2, 480, 854, 3)])
def test_psnr_sums_in_integers_give_the_float64_definitions_bits(shape):
    rng = np.random.default_rng(sum(shape))
    ref = rng.integers(0, 256, shape, dtype=np.uint8)
    out = rng.integers(0, 256, shape, dtype=np.uint8)
    out[0] = ref[0]  # identical everywhere: capped
    out[0, 0, 0] = 255 - ref[0, 0, 0]  # ... but for one pixel, then in the hole below
    hole = rng.random(shape[:3]) < 0.3
    hole[0, 0, 0] = True
    hole[1] = True  # all hole: NaN background, full-frame masked
    if len(hole) > 2:
        hole[2] = False  # no hole: masked PSNR of two zero frames (capped)
    background = background_psnr_frames(ref, out, hole)
    masked = masked_psnr_frames(ref, out, hole)
    assert np.array_equal(background, _background_as_defined(ref, out, hole), equal_nan=True)
    assert np.array_equal(masked, _masked_as_defined(ref, out, hole), equal_nan=True)
    assert background[1, 0] == 1.0 and np.isnan(background[0, 1])


def test_extreme_differences_do_not_wrap():
    """Differences of -255 and +255 on every sample of a large frame (sums of 8e10: past int32)."""
    ref = np.zeros((2, 480, 854, 3), np.uint8)
    out = np.full_like(ref, 255)
    ref[1], out[1] = 255, 0
    hole = np.zeros(ref.shape[:3], bool)
    n = 480 * 854 * 3
    expected = 10.0 * np.log10(255.0 ** 2 * n / (255.0 ** 2 * n))  # every sample 255 off: 0 dB
    assert background_psnr_frames(ref, out, hole)[0].tolist() == [expected, expected] == [0.0, 0.0]
    hole[:] = True
    assert masked_psnr_frames(ref, out, hole)[0].tolist() == [0.0, 0.0]


def test_ssim_frames_are_the_same_on_any_number_of_threads():
    """Each frame is scikit-image's SSIM of that frame alone, whichever thread computed it."""
    from skimage.metrics import structural_similarity

    from devil_dataset.eval.kernels.removal_fidelity import background_ssim_frames, masked_ssim_frames

    rng = np.random.default_rng(3)
    ref = rng.integers(0, 256, (5, 24, 32, 3), dtype=np.uint8)
    out = np.clip(ref.astype(np.int16) + rng.integers(-30, 31, ref.shape), 0, 255).astype(np.uint8)
    hole = np.zeros(ref.shape[:3], bool)
    hole[:, 6:14, 8:20] = True
    hole[4] = True  # all hole: no background
    by_threads = {n: (background_ssim_frames(ref, out, hole, threads=n), masked_ssim_frames(ref, out, hole, threads=n))
                  for n in (1, 3)}
    assert all(np.array_equal(by_threads[1][i], by_threads[3][i], equal_nan=True) for i in (0, 1))
    background, masked = by_threads[3]
    _, smap = structural_similarity(ref[0], out[0], win_size=7, data_range=255.0, channel_axis=-1, full=True)
    assert background[0] == smap[~hole[0]].mean() and np.isnan(background[4])
    k = hole[2][..., None].astype(np.uint8)
    assert masked[2] == structural_similarity(ref[2] * k, out[2] * k, win_size=7, data_range=255.0, channel_axis=-1)

"""Algorithm-2 patch masks of the re-inpainting self-consistency metric (devil_dataset/eval/kernels/patch_masks.py)."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.kernels.patch_masks import (
    DEFAULT_K,
    DEFAULT_PATCH_SIZE,
    DEFAULT_RATIO_RANGE,
    clip_rng,
    patch_mask,
    re_inpainting_masks,
    remask,
)


def test_defaults_follow_the_paper():
    assert DEFAULT_K == 10
    assert DEFAULT_RATIO_RANGE == (0.2, 0.6)
    assert DEFAULT_PATCH_SIZE == 32


@pytest.mark.parametrize("ratio", [0.2, 0.4, 0.6])
def test_patch_mask_ratio_is_right_statistically(ratio):
    # 128 x 128 = 16384 independent patches: the masked fraction has std sqrt(r(1-r)/16384) < 0.004.
    m = patch_mask((512, 512), patch_size=4, ratio=ratio, rng=np.random.default_rng(1))
    assert abs(m.mean() - ratio) < 0.02


def test_patch_mask_patches_are_whole_and_independent():
    m = patch_mask((40, 24), patch_size=8, ratio=0.5, rng=np.random.default_rng(3))
    assert m.shape == (24, 40)
    blocks = m.reshape(3, 8, 5, 8).transpose(0, 2, 1, 3).reshape(15, 64)
    assert (blocks.all(axis=1) | ~blocks.any(axis=1)).all()  # every patch all-or-nothing
    assert 0 < blocks[:, 0].sum() < 15


def test_patch_mask_partial_edge_patches_and_extremes():
    rng = np.random.default_rng(0)
    assert patch_mask((10, 7), 4, 1.0, rng).all() and patch_mask((10, 7), 4, 1.0, rng).shape == (7, 10)
    assert not patch_mask((10, 7), 4, 0.0, rng).any()
    with pytest.raises(ValueError):
        patch_mask((10, 7), 0, 0.5, rng)
    with pytest.raises(ValueError):
        patch_mask((10, 7), 4, 1.5, rng)


def test_remask_touches_only_known_pixels():
    rng = np.random.default_rng(5)
    hole = rng.random((3, 20, 30)) < 0.3
    patch = patch_mask((30, 20), 5, 0.5, rng)
    m = remask(patch, hole)
    assert m.shape == hole.shape
    assert not (m & hole).any()
    assert (m == (patch[None] & ~hole)).all()


def test_re_inpainting_masks_per_clip_pattern_ratio_and_known_pixels():
    hole = np.zeros((4, 64, 96), bool)
    hole[:, 20:40, 30:60] = True
    hole[2, :10, :10] = True
    masks = list(re_inpainting_masks(hole, np.random.default_rng(0), k=6, patch_size=8))
    assert len(masks) == 6
    for rm in masks:
        assert 0.2 <= rm.ratio <= 0.6
        assert rm.mask.shape == hole.shape and rm.mask.dtype == bool
        assert not (rm.mask & hole).any()
        # per clip: the same patch pattern in every frame wherever the pixel is known in both frames
        both_known = ~hole[0] & ~hole[3]
        assert (rm.mask[0][both_known] == rm.mask[3][both_known]).all()
    assert len({rm.ratio for rm in masks}) == 6


def test_re_inpainting_masks_per_frame_and_fixed_ratio():
    hole = np.zeros((5, 64, 64), bool)
    masks = list(re_inpainting_masks(hole, np.random.default_rng(0), k=3, patch_size=4, ratio_range=(0.4, 0.4),
                                     per_frame=True))
    assert all(rm.ratio == 0.4 for rm in masks)
    m = masks[0].mask
    assert not (m[0] == m[1]).all()
    assert abs(m.mean() - 0.4) < 0.03
    with pytest.raises(ValueError):
        list(re_inpainting_masks(hole, np.random.default_rng(0), ratio_range=(0.6, 0.2)))


def test_masks_are_reproducible_for_a_seed_and_clip():
    hole = np.zeros((2, 48, 48), bool)

    def draw(seed, clip):
        return [rm.mask for rm in re_inpainting_masks(hole, clip_rng(seed, clip), k=3, patch_size=8)]

    a, b = draw(0, "clip-a"), draw(0, "clip-a")
    assert all((x == y).all() for x, y in zip(a, b))
    assert any((x != y).any() for x, y in zip(a, draw(1, "clip-a")))
    assert any((x != y).any() for x, y in zip(a, draw(0, "clip-b")))


def test_clip_rng_is_stable_across_processes():
    # BLAKE2b of the clip id, not Python's salted hash(): these values must never change.
    assert clip_rng(0, "clip-a").integers(0, 2**31, 3).tolist() == [587303016, 2092010202, 173665766]
    assert clip_rng(7, "clip-a").integers(0, 2**31, 3).tolist() == [980153781, 1753826804, 458616399]

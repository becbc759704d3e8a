"""Cover-crop to 832x480 (the release's slices): geometry, and masks equal to Pillow's NEAREST resize + crop exactly."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from devil_dataset.core.cover_crop import cover_crop_frame, cover_crop_frames, cover_crop_geometry, cover_crop_mask


def _pillow_reference(mask: np.ndarray, size: tuple[int, int], mode: str) -> np.ndarray:
    """The release's path: each frame as a PIL image, resize(NEAREST) to the cover size, crop."""
    h, w = mask.shape[-2:]
    (rw, rh), (left, top) = cover_crop_geometry((w, h), size)
    out = []
    for frame in mask:
        image = Image.fromarray(frame) if mode == "1" else Image.fromarray(frame.astype(np.uint8) * 255)
        image = image.resize((rw, rh), Image.Resampling.NEAREST).crop((left, top, left + size[0], top + size[1]))
        out.append(np.asarray(image).view(np.uint8) != 0)
    return np.stack(out)


def test_release_geometry():
    assert cover_crop_geometry((1920, 1080)) == ((854, 480), (11, 0))
    assert cover_crop_geometry((1920, 1080), (832, 480)) == ((854, 480), (11, 0))
    assert cover_crop_geometry((832, 480)) == ((832, 480), (0, 0))
    assert cover_crop_geometry((854, 480)) == ((854, 480), (11, 0))
    assert cover_crop_geometry((1000, 1000)) == ((832, 832), (0, 176))
    assert cover_crop_geometry((1280, 720)) == ((854, 480), (11, 0))  # 853.33 rounds up, like 1920x1080


@pytest.mark.parametrize("src, dst", [
    ((1920, 1080), (832, 480)),   # the benchmark's path
    ((1280, 720), (832, 480)),
    ((640, 360), (832, 480)),     # upscaling
    ((1000, 1000), (832, 480)),   # crops vertically
    ((432, 240), (200, 100)),     # a size where a closed-form index formula is off by one in places
    ((1921, 1079), (832, 480)),
    ((832, 480), (832, 480)),     # identity
])
@pytest.mark.parametrize("mode", ["1", "L"])
def test_mask_equals_pillow_nearest_resize_and_crop(src, dst, mode):
    rng = np.random.default_rng(hash((src, dst)) % 2**32)
    mask = rng.random((2, src[1], src[0])) < 0.5
    ours = cover_crop_mask(mask, dst)
    assert ours.shape == (2, dst[1], dst[0]) and ours.dtype == bool
    assert np.array_equal(ours, _pillow_reference(mask, dst, mode))


def test_mask_random_sizes_equal_pillow():
    rng = np.random.default_rng(7)
    for _ in range(20):
        src = (int(rng.integers(20, 400)), int(rng.integers(20, 400)))
        dst = (int(rng.integers(10, 300)), int(rng.integers(10, 300)))
        mask = rng.random((1, src[1], src[0])) < 0.3
        assert np.array_equal(cover_crop_mask(mask, dst), _pillow_reference(mask, dst, "1")), (src, dst)


def test_single_frame_mask_and_frames():
    mask = np.zeros((1080, 1920), bool)
    mask[:, :30] = True  # the crop removes the 11 leftmost resized columns (about 25 source columns)
    out = cover_crop_mask(mask)
    assert out.shape == (480, 832)
    assert out[:, :2].all() and not out[:, 3:].any()
    frames = np.random.default_rng(0).integers(0, 256, (2, 1080, 1920, 3), dtype=np.uint8)
    assert cover_crop_frames(frames).shape == (2, 480, 832, 3)
    resized = np.asarray(Image.fromarray(frames[0]).resize((854, 480), Image.Resampling.BICUBIC))
    assert np.array_equal(cover_crop_frame(frames[0]), resized[:, 11:843])

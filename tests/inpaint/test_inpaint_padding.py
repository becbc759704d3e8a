"""Mirror padding to a size divisor (the release's metrics): exact split, symmetric values, round trip, wrapper."""
import numpy as np
import pytest

from devil_dataset.inpaint import get_inpainter
from devil_dataset.inpaint.padding import PadInfo, crop_padding, divisor_safe, pad_to_multiple


def _clip(t=2, h=30, w=51, seed=0):
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
    hole = rng.random((t, h, w)) < 0.2
    return frames, hole


@pytest.mark.parametrize(
    "h, w, divisor, expected",
    [
        (30, 51, 8, (1, 1, 2, 3)),  # H: total 2 -> 1/1; W: total 5 -> left 2, right 3
        (30, 50, 8, (1, 1, 3, 3)),
        (480, 832, 8, (0, 0, 0, 0)),  # already a multiple
        (480, 832, 128, (16, 16, 32, 32)),
        (29, 49, 4, (1, 2, 1, 2)),  # totals 3 -> 1 left/top, 2 right/bottom
        (7, 9, 1, (0, 0, 0, 0)),
    ],
)
def test_pad_split_left_is_total_floor_half(h, w, divisor, expected):
    frames, hole = np.zeros((1, h, w, 3), np.uint8), np.zeros((1, h, w), bool)
    pf, ph, info = pad_to_multiple(frames, hole, divisor)
    assert (info.top, info.bottom, info.left, info.right) == expected
    assert pf.shape[1] % divisor == 0 and pf.shape[2] % divisor == 0
    assert ph.shape == pf.shape[:3] and ph.dtype == bool and pf.dtype == np.uint8
    assert (info.height, info.width) == (h, w)


def test_pad_is_symmetric_mirror_and_round_trips():
    frames, hole = _clip()
    pf, ph, info = pad_to_multiple(frames, hole, 8)
    assert info == PadInfo(1, 1, 2, 3, 30, 51)
    # symmetric mode repeats the edge: padded column left-1 == original column 0, left-2 == column 1
    assert np.array_equal(pf[:, 1:-1, 1], frames[:, :, 0]) and np.array_equal(pf[:, 1:-1, 0], frames[:, :, 1])
    assert np.array_equal(pf[:, 1:-1, -1], frames[:, :, -3]) and np.array_equal(pf[:, 1:-1, -3], frames[:, :, -1])
    assert np.array_equal(pf[:, 0, 2:-3], frames[:, 0]) and np.array_equal(pf[:, -1, 2:-3], frames[:, -1])
    assert np.array_equal(ph[:, 1:-1, 1], hole[:, :, 0])
    assert np.array_equal(crop_padding(pf, info), frames)
    assert np.array_equal(crop_padding(ph, info), hole)


def test_crop_rejects_wrong_size_and_pad_rejects_bad_divisor():
    frames, hole = _clip()
    _, _, info = pad_to_multiple(frames, hole, 8)
    with pytest.raises(ValueError, match="expected the padded"):
        crop_padding(frames, info)
    with pytest.raises(ValueError):
        pad_to_multiple(frames, hole, 0)


def test_divisor_safe_wrapper_sees_multiples_and_returns_original_size():
    frames, hole = _clip(h=30, w=51)
    seen = []

    def method(f, h):
        seen.append((f.shape, h.shape))
        return 255 - f

    out = divisor_safe(method, 16)(frames, hole)
    assert seen == [((2, 32, 64, 3), (2, 32, 64))]
    assert np.array_equal(out, 255 - frames)


def test_get_inpainter_with_divisor_keeps_known_pixels():
    frames, hole = _clip(h=30, w=51)
    out = get_inpainter("telea", size_divisor=8)(frames, hole)
    assert out.shape == frames.shape and np.array_equal(out[~hole], frames[~hole])

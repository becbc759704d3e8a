"""The demo's PNG writer: standard files (read back by Pillow and OpenCV) with exactly the frame's pixels."""
import io
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image

from devil_dataset.core import png_encode
from devil_dataset.core.png_encode import PNG_SIGNATURE, encode_rgb_png


def _frames():
    rng = np.random.default_rng(0)
    yield rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)  # noise
    y, x = np.mgrid[0:37, 0:53]
    yield np.stack([x * 4, y * 6, (x + y) % 256], -1).astype(np.uint8)  # gradients (Up-filter wrap-around)
    yield np.full((1, 1, 3), 255, np.uint8)  # a single pixel
    yield rng.integers(0, 256, (1, 97, 3), dtype=np.uint8)  # a single row: no row above to filter against
    yield np.ascontiguousarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)[:, ::-1])  # from a flipped view


@pytest.mark.parametrize("index", range(5))
def test_png_round_trips_through_pillow_and_opencv(index):
    frame = list(_frames())[index]
    data = encode_rgb_png(frame)
    assert data.startswith(PNG_SIGNATURE)
    image = Image.open(io.BytesIO(data))
    assert image.mode == "RGB" and image.size == (frame.shape[1], frame.shape[0])
    assert np.array_equal(np.asarray(image), frame)
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(bgr[..., ::-1], frame)


def test_png_with_the_standard_library_zlib_has_the_same_pixels(monkeypatch):
    """Without isal the stream comes from zlib: another file, the same image."""
    frame = list(_frames())[1]
    fast = encode_rgb_png(frame)
    monkeypatch.setattr(png_encode, "_deflate", zlib)
    monkeypatch.setattr(png_encode, "DEFLATE_LEVEL", 1)
    plain = encode_rgb_png(frame)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(plain))), np.asarray(Image.open(io.BytesIO(fast))))


def test_png_chunks_have_valid_crcs():
    data = encode_rgb_png(list(_frames())[0])
    pos, kinds = len(PNG_SIGNATURE), []
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        crc = int.from_bytes(data[pos + 8 + length : pos + 12 + length], "big")
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        kinds.append(kind)
        pos += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


@pytest.mark.parametrize("bad", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 4), np.uint8),
                                 np.zeros((4, 4, 3), np.float32), np.zeros((0, 4, 3), np.uint8)])
def test_png_rejects_what_is_not_an_rgb_frame(bad):
    with pytest.raises(ValueError, match="uint8 RGB frame"):
        encode_rgb_png(bad)

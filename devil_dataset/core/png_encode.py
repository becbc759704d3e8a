"""Fast lossless PNG encoding of uint8 RGB frames (the demo's predictions: thousands of 832x480 frames).

A PNG is a signature and three chunks: ``IHDR`` (size, 8-bit RGB), ``IDAT`` (the zlib stream of the rows, each
row prefixed by its filter type) and ``IEND`` (PNG specification, ISO/IEC 15948, sections 5 and 11). Every row
uses the "Up" filter (byte minus the byte above), which suits natural images and costs one numpy subtraction.
The zlib stream comes from Intel ISA-L (``isal``, igzip level 2) when installed: about 3x faster than zlib's
level 1 (OpenCV's and Pillow's encoders) at the same size (measured on 832x480 demo frames: 7 ms vs 22 ms,
~375 KB each); without it the standard library's zlib at level 1 gives the same pixels, a little slower.

    >>> import numpy as np, io
    >>> from PIL import Image
    >>> frame = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    >>> bool((np.asarray(Image.open(io.BytesIO(encode_rgb_png(frame)))) == frame).all())
    True
"""
from __future__ import annotations

import struct
import types
import zlib

import numpy as np

_deflate: types.ModuleType  # isal.isal_zlib, else zlib: the same compress() interface
try:  # ISA-L's zlib-compatible deflate (optional speed-up; same decoded pixels)
    from isal import isal_zlib as _deflate

    # igzip level 2: the fastest level that matches zlib level 1's size here (levels 0-3; 3 is slower)
    DEFLATE_LEVEL = 2
except ImportError:  # pragma: no cover - isal is a dependency; kept for platforms without its wheel
    _deflate = zlib
    DEFLATE_LEVEL = 1

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# IHDR: bit depth 8, colour type 2 (truecolour RGB), compression 0, filter method 0, no interlace.
_IHDR_TAIL = bytes([8, 2, 0, 0, 0])
# Filter type byte of every row: 2 = "Up".
FILTER_UP = 2


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_rgb_png(frame: np.ndarray) -> bytes:
    """The PNG file bytes of one uint8 RGB frame [H, W, 3] (lossless)."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
        raise ValueError(f"expected a non-empty uint8 RGB frame [H, W, 3], got {frame.dtype} {frame.shape}")
    height, width = frame.shape[:2]
    rows = np.ascontiguousarray(frame).reshape(height, width * 3)
    filtered = np.empty((height, width * 3 + 1), np.uint8)
    filtered[:, 0] = FILTER_UP
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # modulo 256, as the filter defines
    header = struct.pack(">II", width, height) + _IHDR_TAIL
    return (PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", _deflate.compress(filtered.tobytes(), DEFLATE_LEVEL)) + _chunk(b"IEND", b""))


__all__ = ["encode_rgb_png"]

"""The row schema of a DEVIL dataset repository and the per-frame codecs it uses.

One row = one video-mask pair of a slice. Frames are stored as a list of per-frame JPEG (quality 95, the
release's clip format) or PNG images; the hole mask as a list of 1-bit PNGs (mode '1', white =
hole), so the mask is lossless and every path (``datasets`` map-style, streaming, torch format, our own
iterators) decodes it with Pillow alone: no torchcodec, no system FFmpeg.

    >>> import numpy as np
    >>> hole = np.zeros((2, 4, 6), bool); hole[:, 1, 2] = True
    >>> bool((decode_hole(encode_hole(hole)) == hole).all())
    True
    >>> sorted(FEATURES)[:3]
    ['attribution', 'bg_scene_motion_label', 'bg_scene_motion_score']
"""
from __future__ import annotations

import io
from typing import Sequence

import numpy as np
from PIL import Image

# The release stored clip frames as JPEG quality 95.
JPEG_QUALITY = 95
FRAME_FORMATS: tuple[str, ...] = ("jpeg", "png")


def _features():
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    return Features(
        {
            "clip_id": Value("string"),
            "mask_id": Value("string"),
            "frames": List(HFImage()),
            "hole": List(HFImage()),
            "num_frames": Value("int32"),
            "height": Value("int32"),
            "width": Value("int32"),
            "fps": Value("float32"),
            "preset": Value("string"),
            "mask_index": Value("int32"),
            "mask_seed": Value("int64"),
            "reversed": Value("bool"),
            "source": Value("string"),
            "source_first_frame": Value("int32"),
            "attribution": Value("string"),
            "license": Value("string"),
            "camera_motion_score": Value("float64"),
            "camera_motion_label": Value("string"),
            "bg_scene_motion_score": Value("float64"),
            "bg_scene_motion_label": Value("string"),
            "fg_displacement_label": Value("string"),
            "fg_motion_label": Value("string"),
            "fg_size_label": Value("string"),
            "mask_mean_area": Value("float32"),
            "mask_centroid_speed": Value("float32"),
            "mask_pose_motion": Value("float32"),
            "mask_union_coverage": Value("float32"),
            "release_index": Value("int32"),
        }
    )


class _LazyFeatures:
    """``datasets.Features`` built on first use, so importing this module does not import ``datasets``."""

    _value = None

    def get(self):
        if self._value is None:
            self._value = _features()
        return self._value

    def __iter__(self):
        return iter(self.get())

    def __getitem__(self, key):
        return self.get()[key]

    def __len__(self) -> int:
        return len(self.get())


FEATURES = _LazyFeatures()

# Column documentation, rendered into the dataset card (one line each).
COLUMN_DOCS: dict[str, str] = {
    "clip_id": "source clip name, `<source>-<clip index, 5 digits>` (the release's clip names)",
    "mask_id": "mask name `devil_<preset>_<mask index, 5 digits>` (release naming); empty when unknown",
    "frames": "ground-truth video: list of T frames, each an RGB image (JPEG q95 by default) -> uint8 [T, H, W, 3]",
    "hole": "occlusion mask: list of T 1-bit PNGs, white/True = hole (missing pixel) -> bool [T, H, W]",
    "num_frames": "T, the number of frames (45-90 in the release)",
    "height": "frame height in pixels (480 after cover-cropping)",
    "width": "frame width in pixels (832 after cover-cropping)",
    "fps": "frame rate of the source video",
    "preset": "mask preset, e.g. `fgs-h_fgm-l_fgd-h` (the release's preset names)",
    "mask_index": "mask index 0..999 within its preset; -1 when unknown (imported release data)",
    "mask_seed": "RandomState seed that rendered the mask (`mask_seed(mask_index)`); -1 when unknown",
    "reversed": "True when the mask is played backwards in time (frame k -> 89 - k, as the release reverses masks)",
    "source": "source video the clip was cut from",
    "source_first_frame": "index of the clip's first frame in its source video; -1 when unknown",
    "attribution": "credit line for the source video (author, title, URL) as its licence requires",
    "license": "licence of the source video (SPDX id or URL)",
    "camera_motion_score": "camera-motion score (+inf = alignment failed); NaN when not computed",
    "camera_motion_label": "`low`, `high` or empty: the clip's camera-motion rank-tail label",
    "bg_scene_motion_score": "background-scene-motion score; NaN when no segment / not computed",
    "bg_scene_motion_label": "`low`, `high` or empty: background-scene-motion label (manual labels win)",
    "fg_displacement_label": "`low`/`high` from the mask preset (fgd); empty when unknown",
    "fg_motion_label": "`low`/`high` from the mask preset (fgm, pose motion); empty when unknown",
    "fg_size_label": "`low`/`high` from the mask preset (fgs); empty when unknown",
    "mask_mean_area": "measured on this row's mask: mean hole fraction per frame (checks fg_size)",
    "mask_centroid_speed": "measured: mean per-frame hole-centroid displacement / frame diagonal "
                           "(checks fg_displacement)",
    "mask_pose_motion": "measured: mean 1 - IoU of consecutive frames after aligning centroids (checks fg_motion)",
    "mask_union_coverage": "measured: fraction of pixels that are a hole in at least one frame",
    "release_index": "row i of the slice is the release's folder `{i:05d}`; -1 when unknown",
}


def encode_frame(frame: np.ndarray, fmt: str = "jpeg") -> bytes:
    """Encode one uint8 RGB frame [H, W, 3] as JPEG q95 or PNG bytes (deterministic)."""
    buf = io.BytesIO()
    image = Image.fromarray(np.ascontiguousarray(frame, dtype=np.uint8))
    if fmt == "jpeg":
        image.save(buf, format="JPEG", quality=JPEG_QUALITY)
    elif fmt == "png":
        image.save(buf, format="PNG", compress_level=6)
    else:
        raise ValueError(f"unknown frame format {fmt!r}; valid: {', '.join(FRAME_FORMATS)}")
    return buf.getvalue()


def encode_frames(frames: np.ndarray, fmt: str = "jpeg") -> list[dict]:
    """Encode frames [T, H, W, 3] into the ``List(Image())`` storage (``{"bytes", "path"}`` per frame)."""
    return [{"bytes": encode_frame(f, fmt), "path": None} for f in frames]


def encode_hole(hole: np.ndarray) -> list[dict]:
    """Encode a bool hole mask [T, H, W] as 1-bit PNGs (white = hole), the ``List(Image())`` storage."""
    out = []
    for m in np.asarray(hole, dtype=bool):
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(m)).save(buf, format="PNG", compress_level=9)
        out.append({"bytes": buf.getvalue(), "path": None})
    return out


def _bytes_of(item) -> bytes:
    if isinstance(item, dict):
        return item["bytes"]
    return item


def decode_frames(items: Sequence) -> np.ndarray:
    """Decode stored frames (dicts with ``bytes`` or raw bytes) into uint8 RGB [T, H, W, 3] with Pillow."""
    frames = []
    for item in items:
        with Image.open(io.BytesIO(_bytes_of(item))) as im:
            frames.append(np.asarray(im.convert("RGB")))
    return np.stack(frames)


def hole_of_bilevel_image(image: Image.Image) -> np.ndarray:
    """bool [H, W] (True = hole = nonzero) of a mask image, with canonical bools.

    Pillow's mode-"1" arrays are bool arrays whose True bytes are 255, not 1: logical operations treat them as True,
    but anything that reads the bytes (sums through a uint8 view, SIMD paths of some numpy/OpenCV calls) sees 255.

    >>> from PIL import Image
    >>> m = hole_of_bilevel_image(Image.fromarray(np.array([[0, 255]], np.uint8)))
    >>> m.tolist(), m.view(np.uint8).tolist()
    ([[False, True]], [[0, 1]])
    """
    return np.asarray(image.convert("1")).view(np.uint8) != 0


def decode_hole(items: Sequence) -> np.ndarray:
    """Decode stored 1-bit mask PNGs into bool [T, H, W] (True = hole)."""
    masks = []
    for item in items:
        with Image.open(io.BytesIO(_bytes_of(item))) as im:
            masks.append(hole_of_bilevel_image(im))
    return np.stack(masks)


def to_numpy_frames(value) -> np.ndarray:
    """Normalise a decoded ``frames`` value from any ``datasets`` path to uint8 [T, H, W, 3].

    Accepts a list of PIL images (python format), a numpy array, or a torch tensor [T, 3, H, W] (torch format
    gives channels first).
    """
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], Image.Image):
            return np.stack([np.asarray(im.convert("RGB")) for im in value])
        return decode_frames(value)
    arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    if arr.ndim == 4 and arr.shape[1] == 3 and arr.shape[-1] != 3:
        arr = arr.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(arr, dtype=np.uint8)


def to_numpy_hole(value) -> np.ndarray:
    """Normalise a decoded ``hole`` value from any ``datasets`` path to bool [T, H, W]."""
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], Image.Image):
            return np.stack([hole_of_bilevel_image(im) for im in value])
        return decode_hole(value)
    arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    if arr.ndim == 4 and arr.shape[1] == 1:
        arr = arr[:, 0]
    return arr.astype(bool)

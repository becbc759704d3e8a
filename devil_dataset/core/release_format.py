"""The original release's on-disk conventions: per-video folders of PNG frames.

- ground truth ``frame_%04d_gt.png`` (RGB), masks ``frame_%04d_mask.png`` (mode '1', 1 = known, 0 = hole),
  predictions ``frame_%04d_pred.png`` (RGB).

In memory, masks are bool [T, H, W] with True = hole (the package-wide convention); these helpers convert.

    >>> import numpy as np, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> hole = np.zeros((3, 8, 8), bool); hole[:, 2:4, 2:4] = True
    >>> _ = write_mask_pngs(hole, d)
    >>> bool((read_mask_pngs(d) == hole).all())
    True
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from PIL import Image

from .atomic import atomic_path
from .errors import DevilError
from .png_encode import encode_rgb_png

GT_PATTERN = "frame_{:04d}_gt.png"
MASK_PATTERN = "frame_{:04d}_mask.png"
PRED_PATTERN = "frame_{:04d}_pred.png"
_KIND_RE = {kind: re.compile(rf"^frame_(\d{{4}})_{kind}\.png$") for kind in ("gt", "mask", "pred")}


def _save_png(image: Image.Image, path: Path) -> None:
    with atomic_path(path) as tmp:
        image.save(tmp, format="PNG")


def write_mask_pngs(hole: np.ndarray, directory: str | Path) -> list[Path]:
    """Write a bool hole mask [T, H, W] as release mask PNGs (mode '1', 1 = known)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for t, frame in enumerate(hole):
        path = directory / MASK_PATTERN.format(t)
        _save_png(Image.fromarray(~frame), path)  # bool array -> mode '1'; True (white) = known
        paths.append(path)
    return paths


def write_frame_pngs(frames: np.ndarray, directory: str | Path, kind: str = "gt") -> list[Path]:
    """Write uint8 RGB frames [T, H, W, 3] as ``frame_%04d_<kind>.png`` (kind: gt or pred), each atomically.

    RGB frames go through :func:`devil_dataset.core.png_encode.encode_rgb_png` (~3x faster than OpenCV's or Pillow's
    encoder at the same size); anything else through Pillow.
    """

    pattern = {"gt": GT_PATTERN, "pred": PRED_PATTERN}[kind]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for t, frame in enumerate(frames):
        path = directory / pattern.format(t)
        if frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.size:
            with atomic_path(path) as tmp:
                tmp.write_bytes(encode_rgb_png(frame))
        else:
            _save_png(Image.fromarray(np.ascontiguousarray(frame)), path)
        paths.append(path)
    return paths


def list_frames(directory: str | Path, kind: str) -> list[Path]:
    """The ``frame_%04d_<kind>.png`` files of a folder in frame order; an error names any gap in the numbering."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DevilError(f"{directory}: not a directory")
    found = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := _KIND_RE[kind].match(p.name)))
    indices = [i for i, _ in found]
    if indices != list(range(len(indices))):
        missing = sorted(set(range(max(indices, default=-1) + 1)) - set(indices))
        raise DevilError(f"{directory}: {kind} frames are not numbered 0..N-1 (missing {missing[:5]})")
    return [p for _, p in found]


def read_frame_pngs(directory: str | Path, kind: str = "gt") -> np.ndarray:
    """Read ``frame_%04d_<kind>.png`` as uint8 RGB [T, H, W, 3]."""
    paths = list_frames(directory, kind)
    if not paths:
        raise DevilError(f"{directory}: no frame_%04d_{kind}.png files")
    frames = []
    for p in paths:
        try:
            with Image.open(p) as im:
                frames.append(np.asarray(im.convert("RGB")))
        except OSError as exc:
            raise DevilError(f"{p}: unreadable image ({exc})") from None
    return np.stack(frames)


def read_mask_pngs(directory: str | Path) -> np.ndarray:
    """Read release mask PNGs as bool [T, H, W] with True = hole (file convention: 1/white = known)."""
    paths = list_frames(directory, "mask")
    if not paths:
        raise DevilError(f"{directory}: no frame_%04d_mask.png files")
    masks = []
    for p in paths:
        try:
            with Image.open(p) as im:
                masks.append(~np.asarray(im.convert("1"), dtype=bool))
        except OSError as exc:
            raise DevilError(f"{p}: unreadable image ({exc})") from None
    return np.stack(masks)

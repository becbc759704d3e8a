"""Stored occlusion masks: the benchmark's 832x480 masks in one call, time reversal, and the two file formats.

The benchmark's path for a mask (the release's masks and slices): render at 1920x1080 with the release's generator,
cover-crop to 832x480 (resize to 854x480 nearest, crop 11 px from the left), optionally reverse in time (frame k ->
T-1-k). :func:`stored_mask` does all of it in memory, frame by frame (the 1080p frames are never held together).

Formats (both carry the same metadata: preset, index, seed, reversed, size, statistics):

- ``npz``: ``hole_packed`` = ``np.packbits(hole, axis=-1)``, ``shape`` (T, H, W), ``seed`` (uint64) — the layout of
  the release fixtures — plus ``preset``, ``index``, ``reversed`` and ``meta_json`` (the metadata and the
  :class:`~devil_dataset.core.mask_stats.MaskStats` as JSON). Written byte-deterministically (fixed zip
  timestamps) and atomically.
- ``release-png``: a folder of ``frame_%04d_mask.png`` (mode '1', 1 = known, :mod:`devil_dataset.core.release_format`)
  plus ``mask.json`` with the metadata; the folder appears complete or not at all.

    >>> hole = stored_mask("fgs-l_fgm-l_fgd-l", 0, num_frames=2)
    >>> hole.shape
    (2, 480, 832)
    >>> bool((stored_mask("fgs-l_fgm-l_fgd-l", 0, reverse=True, num_frames=2) == hole[::-1]).all())
    True
"""
from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .atomic import atomic_directory, atomic_write_bytes, atomic_write_text
from .cover_crop import cover_crop_geometry
from .errors import DevilError
from .mask_stats import MaskStats, mask_stats
from .masks import RELEASE_NUM_FRAMES, RELEASE_SIZE, get_preset, iter_mask_images, mask_seed
from .release_format import read_mask_pngs, write_mask_pngs
from .slices import EVAL_SIZE

FORMATS: tuple[str, ...] = ("release-png", "npz")
META_FILE = "mask.json"  # metadata beside the PNGs of a release-png mask folder
FORMAT_VERSION = 1
# Refuse renders whose arrays would not fit in memory (an absurd size or frame count gave a
# MemoryError). The release's masks are 90 frames at 1920x1080, ~0.2 GB per size here.
MAX_RENDER_BYTES = 4 << 30  # bool arrays held for one mask: frames x pixels of every requested size, x2 while stacked
MAX_RENDER_SIDE = 8192  # pixels per side of a requested mask size (8K)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamp: identical inputs give byte-identical npz files


def time_reverse(hole: np.ndarray) -> np.ndarray:
    """Frame k -> T-1-k (the release's slices), as a new contiguous array.

        >>> time_reverse(np.arange(3)[:, None, None]).ravel().tolist()
        [2, 1, 0]
    """
    return np.ascontiguousarray(hole[::-1])


def check_render_budget(sizes: list[tuple[int, int]], num_frames: int, *, label: str = "mask") -> None:
    """Raise :class:`DevilError` when rendering ``num_frames`` at ``sizes`` exceeds :data:`MAX_RENDER_BYTES` or a
    side exceeds :data:`MAX_RENDER_SIDE`, before anything is allocated.

        >>> check_render_budget([(832, 480)], 90)
        >>> check_render_budget([(100000, 480)], 1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.DevilError: mask: size 100000x480 is above the limit of 8192 pixels per side ...
    """
    for w, h in sizes:
        if max(w, h) > MAX_RENDER_SIDE:
            raise DevilError(f"{label}: size {w}x{h} is above the limit of {MAX_RENDER_SIDE} pixels per side "
                             "(--resolution)")
    need = 2 * int(num_frames) * (sum(w * h for w, h in sizes) + RELEASE_SIZE[0] * RELEASE_SIZE[1] // 8)
    if need > MAX_RENDER_BYTES:
        shown = ", ".join(f"{w}x{h}" for w, h in sizes)
        raise DevilError(
            f"{label}: {num_frames} frames at {shown} need {need / (1 << 30):.1f} GiB of memory, above the limit of "
            f"{MAX_RENDER_BYTES >> 30} GiB; ask for fewer frames (--num-frames) or a smaller size (--resolution)"
        )


def render_masks_at(preset: str, index: int, sizes: list[tuple[int, int]], *,
                    num_frames: int = RELEASE_NUM_FRAMES) -> list[np.ndarray]:
    """Render mask ``index`` of ``preset`` at 1920x1080 once and return it cover-cropped to each size.

    Each 1080p frame is cropped as soon as it is drawn (equal to ``cover_crop_mask(render_mask(...), size)``).
    A size of 1920x1080 returns the raw render.

        >>> [m.shape for m in render_masks_at("fgs-l_fgm-l_fgd-l", 0, [(832, 480), (1920, 1080)], num_frames=1)]
        [(1, 480, 832), (1, 1080, 1920)]
        >>> render_masks_at("fgs-l_fgm-l_fgd-l", 0, [(832, 480)], num_frames=10**6)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.DevilError: mask fgs-l_fgm-l_fgd-l #0: 1000000 frames at 832x480 need 1226.7 GiB ...
    """
    get_preset(preset)
    check_render_budget(sizes, num_frames, label=f"mask {preset} #{index}")
    geometry = [None if tuple(size) == RELEASE_SIZE else cover_crop_geometry(RELEASE_SIZE, size) for size in sizes]
    outs: list[list[np.ndarray]] = [[] for _ in sizes]
    for image in iter_mask_images(preset, mask_seed(index), num_frames=num_frames, reuse=True):
        for out, size, geo in zip(outs, sizes, geometry):
            if geo is not None:
                # Pillow's NEAREST resize + crop: the release's own operation, and equal to cover_crop_mask
                # (tests/core/test_cover_crop.py); on the mode '1' image it is ~7x faster than indexing a NumPy copy.
                (rw, rh), (left, top) = geo
                image_out = image.resize((rw, rh), Image.Resampling.NEAREST)
                image_out = image_out.crop((left, top, left + size[0], top + size[1]))
            else:
                image_out = image
            known = np.asarray(image_out)  # one byte per pixel (0 = hole): Pillow's view of a mode '1' image
            out.append((known.view(np.uint8) if known.dtype == bool else known) == 0)
    return [np.stack(out) for out in outs]


def stored_mask(preset: str, index: int, reverse: bool = False, *, size: tuple[int, int] = EVAL_SIZE,
                num_frames: int = RELEASE_NUM_FRAMES) -> np.ndarray:
    """The benchmark's mask (preset, index, reverse) in one call: bool [T, 480, 832], True = hole.

    Equal to ``cover_crop_mask(render_mask(preset, mask_seed(index)))`` (reversed in time if ``reverse``).
    """
    hole = render_masks_at(preset, index, [size], num_frames=num_frames)[0]
    return time_reverse(hole) if reverse else hole


def mask_metadata(preset: str, index: int, hole: np.ndarray, *, reverse: bool, stats: MaskStats) -> dict[str, Any]:
    """The metadata stored with a mask (JSON-ready; nan statistics become null)."""
    t, h, w = hole.shape
    return {
        "format_version": FORMAT_VERSION,
        "preset": preset,
        "index": int(index),
        "seed": mask_seed(index),
        "reversed": bool(reverse),
        "width": int(w),
        "height": int(h),
        "num_frames": int(t),
        "labels": get_preset(preset).labels,
        "stats": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in stats.to_dict().items()},
    }


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``np.load``-able npz (deflate) with fixed timestamps, so equal arrays give equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def write_mask_npz(path: str | Path, hole: np.ndarray, meta: dict[str, Any]) -> Path:
    """Write a bool mask [T, H, W] and its metadata as npz (fixture layout plus metadata), atomically."""
    arrays = {
        "hole_packed": np.packbits(hole, axis=-1),
        "shape": np.array(hole.shape, dtype=np.int64),
        "seed": np.uint64(meta["seed"]),
        "preset": np.array(meta["preset"]),
        "index": np.int64(meta["index"]),
        "reversed": np.bool_(meta["reversed"]),
        "meta_json": np.array(json.dumps(meta, sort_keys=True)),
    }
    return atomic_write_bytes(path, _npz_bytes(arrays))


def read_mask_npz(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """Read an npz mask (ours or a release fixture): bool [T, H, W] and its metadata (``{}`` if none)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            t, h, w = (int(v) for v in f["shape"])
            hole = np.unpackbits(f["hole_packed"], axis=-1, count=w).view(bool)
            meta = json.loads(str(f["meta_json"])) if "meta_json" in f.files else {"seed": int(f["seed"])}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise DevilError(f"{path}: not a mask npz ({exc})") from None
    if hole.shape != (t, h, w):
        raise DevilError(f"{path}: hole_packed does not match shape {(t, h, w)}")
    return hole, meta


def write_mask_folder(directory: str | Path, hole: np.ndarray, meta: dict[str, Any]) -> Path:
    """Write release PNGs and ``mask.json`` into a new folder that appears only once complete."""
    directory = Path(directory)
    with atomic_directory(directory, overwrite=True) as tmp:
        write_mask_pngs(hole, tmp)
        atomic_write_text(tmp / META_FILE, json.dumps(meta, sort_keys=True, indent=1) + "\n")
    return directory


def read_mask_folder(directory: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a release-png mask folder: bool [T, H, W] and the metadata of ``mask.json`` (``{}`` if absent)."""
    directory = Path(directory)
    hole = read_mask_pngs(directory)
    meta_path = directory / META_FILE
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    except ValueError as exc:
        raise DevilError(f"{meta_path}: invalid JSON ({exc})") from None
    return hole, meta


def read_stored(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a stored mask in either format (an ``.npz`` file or a folder of mask PNGs)."""
    path = Path(path)
    if path.is_dir():
        return read_mask_folder(path)
    if path.suffix == ".npz":
        return read_mask_npz(path)
    raise DevilError(f"{path}: expected a .npz mask or a folder of frame_%04d_mask.png files")


def output_path(out_dir: str | Path, preset: str, index: int, fmt: str, reverse: bool = False) -> Path:
    """Where ``devil masks render`` stores a mask.

    release-png: ``OUT/devil_<preset>/<index:05d>/`` (the release's folder names); npz:
    ``OUT/devil_<preset>_<index:05d>.npz``. A time-reversed mask gets ``-reversed`` after the index.

        >>> output_path("out", "fgs-l_fgm-l_fgd-l", 7, "npz").as_posix()
        'out/devil_fgs-l_fgm-l_fgd-l_00007.npz'
        >>> output_path("out", "fgs-l_fgm-l_fgd-l", 7, "release-png", reverse=True).as_posix()
        'out/devil_fgs-l_fgm-l_fgd-l/00007-reversed'
    """
    suffix = "-reversed" if reverse else ""
    if fmt == "npz":
        return Path(out_dir) / f"devil_{preset}_{index:05d}{suffix}.npz"
    if fmt == "release-png":
        return Path(out_dir) / f"devil_{preset}" / f"{index:05d}{suffix}"
    raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")


def _stored_meta(path: Path, fmt: str) -> dict[str, Any] | None:
    """Metadata of an existing complete output, or None when there is none."""
    if path.exists() and path.is_dir() != (fmt == "release-png"):
        raise DevilError(f"{path}: exists and is not a {'folder' if fmt == 'release-png' else 'file'}")
    if fmt == "npz":
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                return json.loads(str(f["meta_json"]))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):
            return {}
    meta = path / META_FILE
    if not path.is_dir():
        return None
    try:
        return json.loads(meta.read_text())
    except (OSError, ValueError):
        return {}


def store_mask(out_dir: str | Path, preset: str, index: int, *, fmt: str = "npz", reverse: bool = False,
               size: tuple[int, int] = EVAL_SIZE, num_frames: int = RELEASE_NUM_FRAMES) -> tuple[Path, bool]:
    """Render, crop, (reverse,) measure and store one mask; return (path, written).

    An existing output with the same metadata is kept (``written`` False: interrupted runs resume); one with other
    settings is an error. Statistics are always measured on the 832x480 benchmark mask.

        >>> import tempfile
        >>> out = tempfile.mkdtemp()
        >>> p, written = store_mask(out, "fgs-l_fgm-l_fgd-l", 0, num_frames=2)
        >>> written, store_mask(out, "fgs-l_fgm-l_fgd-l", 0, num_frames=2)[1]
        (True, False)
    """
    path = output_path(out_dir, preset, index, fmt, reverse)
    size = (int(size[0]), int(size[1]))
    existing = _stored_meta(path, fmt)
    if existing is not None:
        same = {k: existing.get(k) for k in ("preset", "index", "reversed", "width", "height", "num_frames")}
        if same == {"preset": preset, "index": index, "reversed": reverse, "width": size[0], "height": size[1],
                    "num_frames": num_frames}:
            return path, False
        raise DevilError(f"{path}: already exists with other settings ({same}); choose another --out")
    sizes = [size] if size == EVAL_SIZE else [size, EVAL_SIZE]
    holes = render_masks_at(preset, index, sizes, num_frames=num_frames)
    stats = mask_stats(holes[-1])
    hole = time_reverse(holes[0]) if reverse else holes[0]
    meta = mask_metadata(preset, index, hole, reverse=reverse, stats=stats)
    if fmt == "npz":
        write_mask_npz(path, hole, meta)
    else:
        write_mask_folder(path, hole, meta)
    return path, True

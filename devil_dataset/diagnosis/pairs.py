"""The (video, mask) pairs a diagnosis covers, from any input ``devil evaluate`` reads, and how to read one.

- a built DEVIL dataset (:func:`dataset_pairs`): every distinct (clip_id, mask) pair over its configs (or the
  configs named); a mask played backwards (the row's ``reversed`` flag) is its own mask, ``<mask_id>-reversed``;
- DEVIL directory mode (:func:`directory_pairs`): ``GT/<clip>/frame_%04d_gt.png`` with ``frame_%04d_mask.png``
  (mask 1 = known); one pair per clip, its mask named after the clip;
- the DAVIS / YouTube-VOS layout (:func:`davis_pairs`, :mod:`devil_dataset.eval.protocols.propainter.layout`):
  ``GT/JPEGImages/<video>/*.jpg`` with ``MASKS/<video>/00000.png ...``; one pair per video, read at the attributes'
  scoring size.

A :class:`PairSource` says where one pair's frames and hole are (picklable: an engine's worker reads them itself).

    >>> PairSource("directory", "GT/bear").kind
    'directory'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.errors import DevilError
from ..core.release_format import list_frames, read_frame_pngs, read_mask_pngs
from ..core.slices import SLICES
from ..data import iter_slice
from ..data.load import read_manifest, resolve_config
from ..eval.protocols.propainter.layout import DavisVideo, list_davis_videos, read_davis_video, read_protocol_mask
from .attributes import canonical_hole

REVERSED_SUFFIX = "-reversed"


@dataclass(frozen=True)
class PairSource:
    """Where a pair is read: ``kind`` ``dataset`` (``path`` the dataset, ``config`` and ``row_clip`` its row),
    ``directory`` (``path`` the clip folder) or ``davis`` (``video``, read at ``size``)."""

    kind: str
    path: str
    config: str = ""
    row_clip: str = ""
    video: DavisVideo | None = None
    size: tuple[int, int] | None = None


@dataclass(frozen=True)
class Pair:
    """One (video, mask) pair: its ids, where it is read, and the dataset configs that hold it."""

    clip_id: str
    mask_id: str
    source: PairSource
    configs: tuple[str, ...] = field(default=())


def dataset_configs(dataset: str | Path, configs: Sequence[str] | None = None) -> list[str]:
    """The configs to read: ``configs`` checked, else every config of the build with rows (its manifest), else
    every ``data/<config>`` folder; in the order of :data:`devil_dataset.core.slices.SLICES`."""
    root = Path(dataset)
    if configs:
        return [resolve_config(c) for c in dict.fromkeys(configs)]
    manifest = read_manifest(root)
    if manifest is not None and manifest.get("configs"):
        have = {c for c, meta in manifest["configs"].items() if int(meta.get("rows", 0)) > 0}
    else:
        have = {p.name for p in (root / "data").glob("*") if p.is_dir()}
    found = [c for c in SLICES if c in have]
    if not found:
        raise DevilError(f"{root}: no configs with rows (is it a dataset built by `devil build`?)")
    return found


def dataset_pairs(dataset: str | Path, configs: Sequence[str] | None = None) -> list[Pair]:
    """Every distinct (clip_id, mask) pair of ``configs`` (default: all) of a built dataset, in config order then
    row order; only the id columns are read."""
    by_key: dict[tuple[str, str], Pair] = {}
    for config in dataset_configs(dataset, configs):
        for row in iter_slice(dataset, config, columns=["clip_id", "mask_id", "reversed"]):
            clip, mask = str(row["clip_id"]), str(row.get("mask_id") or "")
            key = (clip, mask + (REVERSED_SUFFIX if bool(row.get("reversed")) else ""))
            old = by_key.get(key)
            if old is None:
                by_key[key] = Pair(clip, key[1], PairSource("dataset", str(dataset), config, clip), (config,))
            else:
                by_key[key] = Pair(clip, key[1], old.source, old.configs + (config,))
    return list(by_key.values())


def directory_pairs(gt_dir: str | Path) -> list[Pair]:
    """One pair per clip folder of a release-layout directory (or the folder itself when it holds the frames)."""
    root = Path(gt_dir)
    if not root.is_dir():
        raise DevilError(f"{root}: ground-truth folder does not exist")
    if list_frames(root, "gt"):
        folders = [root]
    else:
        folders = [p for p in sorted(root.iterdir()) if p.is_dir() and list_frames(p, "gt")]
    if not folders:
        raise DevilError(f"{root}: no frame_%04d_gt.png files and no video folders holding them")
    return [Pair(p.resolve().name, p.resolve().name, PairSource("directory", str(p))) for p in folders]


def davis_pairs(gt_dir: str | Path, mask_dir: str | Path, size: tuple[int, int]) -> list[Pair]:
    """One pair per video of a DAVIS / YouTube-VOS layout (its mask named after the video), read at ``size``."""
    return [Pair(v.name, v.name, PairSource("davis", str(gt_dir), video=v, size=size))
            for v in list_davis_videos(gt_dir, mask_dir)]


def _dataset_row(source: PairSource, columns: list[str]) -> dict:
    for row in iter_slice(source.path, source.config, columns=columns, clip_ids=[source.row_clip]):
        return row
    raise DevilError(f"{source.path}: clip {source.row_clip} is not in config {source.config}")


def read_pair(source: PairSource) -> tuple[np.ndarray, np.ndarray]:
    """A pair's frames (uint8 [T, H, W, 3]) and hole (bool [T, H, W], True = hole)."""
    if source.kind == "dataset":
        row = _dataset_row(source, ["clip_id", "frames", "hole"])
        return np.asarray(row["frames"]), canonical_hole(row["hole"])
    if source.kind == "directory":
        return read_frame_pngs(source.path), read_mask_pngs(source.path)
    if source.kind == "davis" and source.video is not None:
        return read_davis_video(source.video, size=source.size or (854, 480))
    raise DevilError(f"unknown pair source {source.kind!r}")


def read_hole(source: PairSource) -> np.ndarray:
    """A pair's hole only (bool [T, H, W])."""
    if source.kind == "dataset":
        return canonical_hole(_dataset_row(source, ["clip_id", "hole"])["hole"])
    if source.kind == "directory":
        return read_mask_pngs(source.path)
    if source.kind == "davis" and source.video is not None:
        size = source.size or (854, 480)
        return np.stack([read_protocol_mask(p, size) for p in source.video.mask_paths])
    raise DevilError(f"unknown pair source {source.kind!r}")


__all__ = ["Pair", "PairSource", "REVERSED_SUFFIX", "dataset_configs", "dataset_pairs", "davis_pairs",
           "directory_pairs", "read_hole", "read_pair"]

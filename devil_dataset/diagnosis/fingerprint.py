"""Fingerprints of where a pair's frames and hole are stored, so a warm run finds its cached scores without decoding
a single frame: the cache maps a fingerprint to the content hash of the decoded array
(:meth:`~devil_dataset.diagnosis.cache.AttributeCache.load_hash`).

- release directory / DAVIS layouts: sha256 over the files' names and bytes (frames or masks) and the read size;
- built dataset: the sha256 its ``manifest.json`` records for every shard of the config, with the config and the
  clip id (no manifest: no fingerprint, the frames are decoded and hashed).

    >>> from devil_dataset.diagnosis.pairs import PairSource
    >>> source_fingerprint(PairSource("dataset", "/nonexistent", "all", "c"), "frames") is None
    True
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from ..core.release_format import list_frames
from ..data.load import read_manifest
from .pairs import PairSource


def _files_digest(paths: list[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _dataset_digest(source: PairSource, what: str) -> str | None:
    try:
        manifest = read_manifest(source.path)
    except Exception:  # noqa: BLE001 - an unreadable manifest only turns the shortcut off
        return None
    if manifest is None:
        return None
    prefix = f"data/{source.config}/"
    shards = sorted((rel, meta.get("sha256", "")) for rel, meta in manifest["files"].items() if rel.startswith(prefix))
    if not shards or not all(sha for _, sha in shards):
        return None
    text = f"dataset|{what}|{source.config}|{source.row_clip}|" + "|".join(f"{r}={s}" for r, s in shards)
    return hashlib.sha256(text.encode()).hexdigest()


def source_fingerprint(source: PairSource, what: str) -> str | None:
    """A fingerprint of the stored ``what`` (``"frames"`` or ``"hole"``) of ``source``; ``None`` when there is none."""
    if source.kind == "dataset":
        return _dataset_digest(source, what)
    if source.kind == "directory":
        return _files_digest(list_frames(source.path, "gt" if what == "frames" else "mask"), f"directory|{what}")
    if source.kind == "davis" and source.video is not None:
        paths = source.video.frame_paths if what == "frames" else source.video.mask_paths
        return _files_digest(list(paths), f"davis|{what}|{source.size}")
    return None


__all__ = ["source_fingerprint"]

"""Many masks at once: the steps of ``devil masks render`` and ``devil masks stats`` as library calls.

- :func:`render_masks`: render and store (preset, index) masks in a folder
  (:func:`~devil_dataset.core.mask_store.store_mask` each); masks already stored with the same settings are kept,
  so a second run resumes.
- :func:`mask_stats_document`: the statistics of rendered or stored masks (:func:`~devil_dataset.core.mask_stats.
  mask_stats`), one record per mask and per preset the median and quartiles, as a JSON-ready document.
- :func:`nan_to_none`: NaN -> None through dicts and lists (strict JSON; the tables print ``-``).

    >>> doc = mask_stats_document([("fgs-l_fgm-l_fgd-l", 0)], num_frames=2, progress=False)
    >>> doc["masks"][0]["seed"] == mask_seed(0), doc["summary"]["fgs-l_fgm-l_fgd-l"]["mean_area"]["n"]
    (True, 1)
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from .atomic import remove_stale_temporaries
from .errors import DevilError
from .mask_stats import MaskStats, mask_stats, summarize
from .mask_store import read_stored, store_mask, stored_mask
from .masks import mask_seed
from .progress import progress_bar

# A mask to measure: a stored one (an .npz file or a release-png mask folder), or (preset, index) to render.
MaskSource = Union[Path, tuple[str, int]]


def _progress(total: int, progress: bool, desc: str):
    """A bar of ``total`` masks; never for a single mask."""
    return progress_bar(total=total, unit="mask", desc=desc, enabled=progress and total != 1)


def render_masks(out: Path, jobs: Sequence[tuple[str, int]], *, fmt: str, reverse: bool, size: tuple[int, int],
                 num_frames: int, progress: bool = True) -> int:
    """Render and store each (preset, index) mask in ``out`` (created when missing; leftovers of interrupted
    writes removed first); returns how many were written (the others were already stored with the same settings).

    A folder that cannot be created or written raises :class:`DevilError` naming it (and the mask).
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DevilError(f"{out}: cannot create the output folder ({exc})") from None
    remove_stale_temporaries(out)
    written = 0
    with _progress(len(jobs), progress, "render") as bar:
        for preset, index in jobs:
            if fmt == "release-png":
                remove_stale_temporaries(out / f"devil_{preset}")
            try:
                _, new = store_mask(out, preset, index, fmt=fmt, reverse=reverse, size=size, num_frames=num_frames)
            except (NotADirectoryError, FileExistsError, PermissionError) as exc:
                raise DevilError(f"{out}: cannot write mask {preset}/{index:05d} ({exc})") from None
            written += new
            bar.update(1)
    return written


def _mask_and_record(source: MaskSource, num_frames: int) -> tuple[np.ndarray, dict[str, Any]]:
    """The mask of ``source`` and its record: where it comes from (path or preset, index, seed, reversed)."""
    if isinstance(source, tuple):
        preset, index = source
        hole = stored_mask(preset, index, num_frames=num_frames)
        return hole, {"preset": preset, "index": index, "seed": mask_seed(index), "reversed": False}
    hole, meta = read_stored(source)
    return hole, {"path": str(source), "preset": meta.get("preset"), "index": meta.get("index"),
                  "seed": meta.get("seed"), "reversed": meta.get("reversed")}


def mask_stats_document(masks: Sequence[MaskSource], *, num_frames: int, summary_only: bool = False,
                        progress: bool = True) -> dict[str, Any]:
    """The statistics of ``masks`` (stored paths, or (preset, index) rendered with ``num_frames`` frames) as one
    JSON-ready document (NaN as None): ``{"summary": {preset: {statistic: {median, q25, q75, n}}}, "masks":
    [{..., "stats": {...}}]}`` with presets sorted and masks in order; ``summary_only`` leaves ``masks`` out.
    A stored mask without a preset counts under ``unknown``."""
    records: list[dict] = []
    by_preset: dict[str, list[MaskStats]] = {}
    with _progress(len(masks), progress, "stats") as bar:
        for source in masks:
            hole, record = _mask_and_record(source, num_frames)
            stats = mask_stats(hole)
            record["stats"] = stats.to_dict()
            records.append(record)
            by_preset.setdefault(record["preset"] or "unknown", []).append(stats)
            bar.update(1)
    doc: dict = {"summary": {p: summarize(s) for p, s in sorted(by_preset.items())}}
    if not summary_only:
        doc["masks"] = records
    return nan_to_none(doc)


def nan_to_none(value: Any) -> Any:
    """A copy with every float NaN replaced by None, through dicts and lists (other values as they are).

    >>> nan_to_none({"a": [1.5, float("nan")], "b": float("nan"), "c": "x"})
    {'a': [1.5, None], 'b': None, 'c': 'x'}
    """
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nan_to_none(v) for v in value]
    return value


__all__ = ["MaskSource", "mask_stats_document", "nan_to_none", "render_masks"]

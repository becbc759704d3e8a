"""Write a Hub-ready dataset repository: parquet shards per config, the dataset card and a checksum manifest.

Layout (one file format, parquet, for every data file)::

    DATASET_DIR/
      README.md                                  dataset card; YAML ``configs:`` for ``all`` + the ten slices
      manifest.json                              sha256 + bytes of every published file, rows and bytes per config
      data/<config>/test-00000-of-0000N.parquet  one row per video-mask pair, one row per parquet row group

Every shard is written to a temporary name and renamed when complete (:mod:`devil_dataset.core.atomic`), so an
interrupted build leaves only whole shards, and a re-run skips them. Output is deterministic: rows in plan order,
Pillow's deterministic JPEG/PNG encoders, no timestamps in parquet metadata, sorted JSON.

    >>> shard_ranges(5)
    [range(0, 2), range(2, 5)]
"""
from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..core.atomic import atomic_path, atomic_write_text, file_sha256, remove_stale_temporaries
from ..core.dataset_schema import FEATURES
from ..core.errors import DevilError
from .dataset_card import (  # noqa: F401  (re-exported: the writer's public names before the card had a module)
    CARD_NAME,
    CITATION,
    DATA_DIR,
    LICENSE_NAME,
    PREVIEW_CONFIG,
    SPLIT,
    license_file,
    render_card,
    size_category,
)
from .preview import PREVIEW_ROWS, write_preview

# Parquet layout. One clip per row group keeps streaming memory at one clip; at least two shards per config lets
# a streaming DataLoader use two workers (a streaming dataset splits work by file); at most 8 rows (~100 MB of
# 832x480x90 JPEG q95 frames) per shard bounds streaming memory (pyarrow pre-buffers a shard) and suits the Hub.
ROWS_PER_ROW_GROUP = 1
MIN_SHARDS = 2
MAX_ROWS_PER_SHARD = 8
# Shard counts are rounded up to 2, 4, 8 or a multiple of 8 (never above the row count), so that they divide evenly
# by the usual DDP world sizes 1, 2, 4 and 8: `datasets.distributed.split_dataset_by_node` then gives every rank
# whole shards and the same number of them (a 150-video slice: 24 shards of 6-7 rows, not 19).
SHARD_COUNT_STEPS = (2, 4, 8)
# A config with 0 rows is left out of the card: `datasets` cannot load a split without data. The reason is recorded
# in manifest.json (the package's loaders and commands name it) and in the card's build notes.
EMPTY_CONFIG_REASON = ("0 rows in this build (too few clips); left out of the card (an empty split cannot be "
                       "loaded)")
MANIFEST_NAME = "manifest.json"
BUILD_DIR = ".devil-build"  # the builder's work files (clips, scores, masks); never published
SHARD_RECORDS = "shards"  # BUILD_DIR/shards/<config>/<shard>.sha256: each written shard's hash, checked on resume
# Parquet is written the way `datasets` 5.x writes it for the Hub (datasets.config.DEFAULT_CDC_OPTIONS and
# `ParquetWriter(use_content_defined_chunking=..., write_page_index=True)`): data pages are cut where the content
# says, not at fixed sizes, so a clip's frames encode to the same pages in every config and every rebuild, and
# Xet storage (64 KiB content-defined chunks) uploads them once; the page index lets readers seek to a page.
PARQUET_CDC_OPTIONS = {"min_chunk_size": 256 * 1024, "max_chunk_size": 1024 * 1024, "norm_level": 0}




def prepare_output_dir(out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Make ``out_dir`` and its work folder (:data:`BUILD_DIR`), clearing leftovers of interrupted atomic writes.

    Returns ``(out, work)``; a path that exists and is not a folder is an error naming it.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    work = out / BUILD_DIR
    work.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    for d in [work, *(p for p in work.rglob("*") if p.is_dir() and not p.name.startswith(".tmp-"))]:
        remove_stale_temporaries(d)  # .devil-build/masks, clips, frames...: a kill can leave .tmp-* anywhere
    return out, work


def shard_count(num_rows: int) -> int:
    """Shards of a config of ``num_rows`` rows: ``ceil(n / 8)``, at least 2, rounded up to 2, 4, 8 or a multiple
    of 8 (DDP world sizes 1, 2, 4, 8 divide it), capped at ``n``.

    >>> [shard_count(n) for n in (1, 5, 16, 17, 40, 150, 1250)]
    [1, 2, 2, 4, 8, 24, 160]
    """
    if num_rows <= 0:
        return 1
    n = max(MIN_SHARDS, math.ceil(num_rows / MAX_ROWS_PER_SHARD))
    step = next((s for s in SHARD_COUNT_STEPS if n <= s), None)
    n = step if step is not None else SHARD_COUNT_STEPS[-1] * math.ceil(n / SHARD_COUNT_STEPS[-1])
    return min(num_rows, n)


def shard_ranges(num_rows: int) -> list[range]:
    """Contiguous row ranges of a config's shards (:func:`shard_count` of them), sizes differing by <= 1.

    An empty config gets one empty range here; :func:`write_config` writes no shard for it.
    """
    if num_rows <= 0:
        return [range(0, 0)]
    n = shard_count(num_rows)
    bounds = [i * num_rows // n for i in range(n + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(n)]


def shard_path(out_dir: str | os.PathLike, config: str, index: int, count: int) -> Path:
    """``data/<config>/test-0000i-of-0000N.parquet`` (the Hub's naming)."""
    return Path(out_dir) / DATA_DIR / config / f"{SPLIT}-{index:05d}-of-{count:05d}.parquet"


def _arrow_schema():
    feats = FEATURES.get()
    meta = {"huggingface": json.dumps({"info": {"features": feats.to_dict()}}, sort_keys=True)}
    return feats.arrow_schema.with_metadata(meta)


def write_shard(
    path: str | os.PathLike,
    rows: Iterable[Mapping],
    *,
    content_defined_chunking: Mapping | None = PARQUET_CDC_OPTIONS,
) -> Path:
    """Write rows (already encoded, see :mod:`devil_dataset.core.dataset_schema`) as one parquet file, atomically.

    One row per row group; no statistics or dictionaries on the image columns; no compression (JPEG/PNG bytes do
    not compress); content-defined data pages and a page index (see :data:`PARQUET_CDC_OPTIONS`; ``None`` writes
    fixed-size pages, the layout before datasets 5.x, kept for ``benchmarks/publish_dedup.py``). Deterministic:
    the same rows give the same bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    with atomic_path(path) as tmp:
        writer = pq.ParquetWriter(
            tmp,
            schema,
            compression="NONE",
            use_dictionary=["clip_id", "mask_id", "preset", "source", "attribution", "license"],
            write_statistics=["num_frames", "mask_index", "camera_motion_score", "bg_scene_motion_score"],
            write_page_index=True,
            use_content_defined_chunking=dict(content_defined_chunking) if content_defined_chunking else False,
        )
        if content_defined_chunking:  # recorded as datasets does, so a later writer can use the same options
            writer.add_key_value_metadata({"content_defined_chunking": json.dumps(dict(content_defined_chunking))})
        try:
            for row in rows:
                table = pa.Table.from_pylist([dict(row)], schema=schema)
                writer.write_table(table, row_group_size=ROWS_PER_ROW_GROUP)
        finally:
            writer.close()
    return Path(path)


def shard_record_path(out_dir: str | os.PathLike, shard: str | os.PathLike) -> Path:
    """Where the sha256 of a written shard is recorded (in the build's work folder, never published)."""
    rel = Path(shard).relative_to(Path(out_dir) / DATA_DIR)
    return Path(out_dir) / BUILD_DIR / SHARD_RECORDS / rel.with_name(rel.name + ".sha256")


def shard_is_intact(out_dir: str | os.PathLike, shard: str | os.PathLike) -> bool:
    """True when ``shard`` exists and its sha256 equals the one recorded when it was written."""
    shard = Path(shard)
    record = shard_record_path(out_dir, shard)
    if not shard.is_file() or not record.is_file():
        return False
    return file_sha256(shard) == record.read_text(encoding="utf-8").strip()


def write_config(
    out_dir: str | os.PathLike,
    config: str,
    num_rows: int,
    make_row: Callable[[int], Mapping],
    *,
    on_shard: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Write config ``config`` (rows ``make_row(0..num_rows-1)``) as shards; existing intact shards are kept.

    A shard is kept only when its sha256 equals the one recorded when this plan wrote it (under
    ``.devil-build/shards``); a truncated, damaged or unrecorded shard is written again. A config with 0 rows
    writes no shard (it could not be loaded; :func:`finish_repository` leaves it out of the card). ``on_shard``
    is called after each shard is in place (the build uses it for progress and tests use it to simulate an
    interruption).
    """
    out_dir = Path(out_dir)
    ranges = shard_ranges(num_rows) if num_rows > 0 else []
    cfg_dir = out_dir / DATA_DIR / config
    remove_stale_temporaries(cfg_dir)
    expected = {shard_path(out_dir, config, i, len(ranges)).name for i in range(len(ranges))}
    if cfg_dir.is_dir():  # shards of another layout (an older plan) would be read as part of this config
        for p in cfg_dir.iterdir():
            if p.name not in expected:
                p.unlink()
        if not expected:
            cfg_dir.rmdir()
    paths = []
    for i, rng in enumerate(ranges):
        path = shard_path(out_dir, config, i, len(ranges))
        if not shard_is_intact(out_dir, path):
            write_shard(path, (make_row(r) for r in rng))
            record = shard_record_path(out_dir, path)
            record.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(record, file_sha256(path) + "\n")
        paths.append(path)
        if on_shard is not None:
            on_shard(path)
    return paths


# ----------------------------------------------------------------------------------------------- manifest




def published_files(out_dir: str | os.PathLike) -> list[Path]:
    """Files that belong to the repository (relative paths, sorted): everything but hidden/temporary entries."""
    out_dir = Path(out_dir)
    files = []
    for p in sorted(out_dir.rglob("*")):
        rel = p.relative_to(out_dir)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            files.append(rel)
    return files


def config_bytes(out_dir: str | os.PathLike) -> dict[str, int]:
    """Bytes on disk per config (sum of its parquet shards)."""
    base = Path(out_dir) / DATA_DIR
    if not base.is_dir():
        return {}
    return {d.name: sum(p.stat().st_size for p in d.glob("*.parquet")) for d in sorted(base.iterdir()) if d.is_dir()}


def write_manifest(out_dir: str | os.PathLike, info: Mapping) -> Path:
    """Write ``manifest.json``: ``info`` plus sha256/bytes of every published file (the manifest itself excluded)."""
    out_dir = Path(out_dir)
    files = {
        str(rel.as_posix()): {"sha256": file_sha256(out_dir / rel), "bytes": (out_dir / rel).stat().st_size}
        for rel in published_files(out_dir)
        if rel.as_posix() != MANIFEST_NAME
    }
    doc = dict(info)
    doc["files"] = files
    return atomic_write_text(out_dir / MANIFEST_NAME, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def verify_manifest(out_dir: str | os.PathLike) -> dict:
    """Check every file listed in ``manifest.json`` against its sha256; raise :class:`DevilError` on a mismatch."""
    out_dir = Path(out_dir)
    path = out_dir / MANIFEST_NAME
    if not path.is_file():
        raise DevilError(f"{path}: missing; is {out_dir} a dataset built by `devil build`?")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DevilError(f"{path}: not valid JSON ({exc})") from None
    bad = []
    for rel, meta in doc.get("files", {}).items():
        p = out_dir / rel
        if not p.is_file():
            bad.append(f"{rel} (missing)")
        elif p.stat().st_size != meta["bytes"] or file_sha256(p) != meta["sha256"]:
            bad.append(f"{rel} (checksum mismatch)")
    if bad:
        raise DevilError(f"{out_dir}: files do not match {MANIFEST_NAME}: {', '.join(bad)}")
    return doc


def finish_repository(
    out_dir: str | os.PathLike,
    *,
    configs: Mapping[str, Mapping],
    license: str,
    pretty_name: str,
    build_notes: str,
    attributions: Sequence[str],
    info: Mapping,
    template: str | os.PathLike | None = None,
    preview_rows: int = PREVIEW_ROWS,
) -> dict[str, int]:
    """Write the preview, the card (and ``LICENSE.md`` for per-clip licences) and the manifest once every config's
    shards are in place; return bytes per config.

    ``configs`` maps each written config to {"rows", "description"}; bytes are measured here. ``preview_rows``
    rows of ``all`` (or the first config) become the ``preview`` config's mp4 clips (0: no preview).
    """
    out_dir = Path(out_dir)
    sizes = config_bytes(out_dir)
    full = {name: {**c, "bytes": sizes.get(name, 0)} for name, c in configs.items()}
    loadable = {name: c for name, c in full.items() if int(c["rows"]) > 0}
    preview = None
    if preview_rows > 0 and loadable:
        preview = write_preview(out_dir, "all" if "all" in loadable else next(iter(loadable)), rows=preview_rows)
    elif (out_dir / PREVIEW_CONFIG).is_dir():
        shutil.rmtree(out_dir / PREVIEW_CONFIG)
    license_path = out_dir / LICENSE_NAME
    if license == "other":
        atomic_write_text(license_path, license_file(attributions, license))
    elif license_path.is_file():
        license_path.unlink()
    omitted = [name for name in full if name not in loadable]
    if omitted:  # plain `datasets.load_dataset(DIR, name)` can only say "not found": the card says why
        build_notes = (f"{build_notes.rstrip()}\n\nConfigs left out of this build: {', '.join(omitted)}: "
                       f"{EMPTY_CONFIG_REASON}. A slice takes the tails of a ranking of the clips, so a build of "
                       "few clips has no rows for some slices; build from more videos to get them.")
    card = render_card(configs=loadable, license=license, pretty_name=pretty_name, build_notes=build_notes,
                       attributions=attributions, template=template, preview=preview, dataset_dir=out_dir)
    atomic_write_text(out_dir / CARD_NAME, str(card))
    manifest = dict(info)
    manifest["configs"] = {name: {"rows": int(c["rows"]), "bytes": int(c["bytes"])} for name, c in full.items()}
    for name, c in full.items():
        if "clip_ids" in c:  # row order; loaders check a slice against it
            manifest["configs"][name]["clip_ids"] = [str(x) for x in c["clip_ids"]]
        if int(c["rows"]) == 0:
            manifest["configs"][name]["omitted"] = EMPTY_CONFIG_REASON
    write_manifest(out_dir, manifest)
    return {name: int(c["bytes"]) for name, c in full.items()}

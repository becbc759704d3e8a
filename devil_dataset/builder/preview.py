"""The ``preview`` config: a few rows as H.264 mp4 so that the Hub's dataset viewer can play them.

The evaluation configs store per-frame JPEG/PNG (decoded with Pillow alone); the viewer cannot play those as
video. This writes the first rows of a config as small mp4 clips (the hole tinted, so the occlusion shows) into
one parquet file ``preview/test-00000-of-00001.parquet`` whose ``video`` column has the ``datasets`` ``Video()``
feature (the mp4 bytes); parquet like every other data file, so the repository keeps one builder. Decoding the
``Video()`` column needs torchcodec, an optional extra; nothing else depends on it.

    >>> PREVIEW_ROWS, PREVIEW_HEIGHT
    (8, 240)
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from ..core.atomic import atomic_path
from ..core.dataset_schema import decode_frames, decode_hole
from ..core.video_io import write_video
from .dataset_card import DATA_DIR, PREVIEW_CONFIG, SPLIT

PREVIEW_ROWS = 8  # clips in the preview config: enough to browse, ~1 MB in all
PREVIEW_HEIGHT = 240  # half the DEVIL clip height (832x480), keeps every clip ~100 kB
HOLE_TINT = np.array([0, 255, 0], np.float32)  # the hole is shown blended with green
HOLE_ALPHA = 0.5
DEFAULT_FPS = 25.0  # for rows whose fps is unknown (imported release archives store none)
PREVIEW_FILE = f"{SPLIT}-00000-of-00001.parquet"


def tint_hole(frames: np.ndarray, hole: np.ndarray, alpha: float = HOLE_ALPHA) -> np.ndarray:
    """Frames uint8 [T, H, W, 3] with hole pixels (bool [T, H, W]) blended towards green.

    >>> tint_hole(np.zeros((1, 1, 2, 3), np.uint8), np.array([[[True, False]]]))[0, 0].tolist()
    [[0, 128, 0], [0, 0, 0]]
    """
    out = frames.astype(np.float32)
    out[hole] = out[hole] * (1 - alpha) + HOLE_TINT * alpha
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _resize(frames: np.ndarray, height: int) -> np.ndarray:
    t, h, w = frames.shape[:3]
    if h <= height:
        return frames
    nw = max(2, int(round(w * height / h / 2)) * 2)
    return np.stack([np.asarray(Image.fromarray(f).resize((nw, height), Image.Resampling.BILINEAR)) for f in frames])


def preview_features():
    """The preview config's ``datasets.Features``: the mp4 (``Video()``) and which row it shows."""
    from datasets import Features, Value, Video

    return Features({"video": Video(), "clip_id": Value("string"), "mask_id": Value("string"),
                     "num_frames": Value("int32"), "source_config": Value("string")})


def write_preview(
    out_dir: str | os.PathLike,
    config: str = "all",
    *,
    rows: int = PREVIEW_ROWS,
    height: int = PREVIEW_HEIGHT,
) -> dict | None:
    """Write ``preview/`` from the first ``rows`` rows of ``config``; return ``{"rows", "bytes"}`` (None: no rows).

    Deterministic (the encoder settings of :func:`devil_dataset.core.video_io.write_video`, no timestamps in
    parquet) and atomic; an older preview is replaced.
    """

    import pyarrow as pa
    import pyarrow.parquet as pq


    out_dir = Path(out_dir)
    shards = sorted((out_dir / DATA_DIR / config).glob(f"{SPLIT}-*.parquet"))
    target = out_dir / PREVIEW_CONFIG
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="devil-preview-") as tmp:
        for shard in shards:
            pf = pq.ParquetFile(shard)
            for g in range(pf.num_row_groups):
                if len(records) >= rows:
                    break
                table = pf.read_row_group(g, columns=["clip_id", "mask_id", "frames", "hole", "fps", "num_frames"])
                for row in table.to_pylist()[: rows - len(records)]:
                    frames = tint_hole(decode_frames(row["frames"]), decode_hole(row["hole"]))
                    fps = float(row["fps"] or 0.0)
                    mp4 = write_video(Path(tmp) / f"{len(records):05d}.mp4", _resize(frames, height),
                                      fps=fps if math.isfinite(fps) and fps > 0 else DEFAULT_FPS)
                    records.append({"video": {"bytes": mp4.read_bytes(), "path": None}, "clip_id": row["clip_id"],
                                    "mask_id": row["mask_id"], "num_frames": int(row["num_frames"]),
                                    "source_config": config})
    if target.is_dir():
        for p in target.iterdir():
            if p.name != PREVIEW_FILE:
                p.unlink()
    if not records:
        if (target / PREVIEW_FILE).exists():
            (target / PREVIEW_FILE).unlink()
            target.rmdir()
        return None
    feats = preview_features()
    schema = feats.arrow_schema.with_metadata(
        {"huggingface": json.dumps({"info": {"features": feats.to_dict()}}, sort_keys=True)})
    path = target / PREVIEW_FILE
    with atomic_path(path) as tmp_path:
        pq.write_table(pa.Table.from_pylist(records, schema=schema), tmp_path, compression="NONE",
                       row_group_size=1, write_page_index=True)
    return {"rows": len(records), "bytes": path.stat().st_size}

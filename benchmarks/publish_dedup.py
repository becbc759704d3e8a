"""Bytes a Hub upload sends: content-defined parquet pages (datasets 5.x layout) vs fixed-size pages.

The Hub stores files in Xet: files are cut into content-defined chunks (~64 KiB on average) and only chunks it does
not hold yet are uploaded. This script writes the same synthetic dataset twice per layout (``all`` plus two slices
that share its clips, as DEVIL's configs do), the second time with one clip changed (one frame re-encoded, as a
re-labelled or re-cropped clip would be), and estimates with a Xet-like chunker (our own: a rolling sum of random
64-bit values over a 64-byte window, cut where its top 16 bits are zero; 8 KiB minimum, 128 KiB maximum chunk):

1. the bytes of the first upload (the configs share clips: how much dedups within one build);
2. the bytes a re-upload of the rebuild sends.

Ratios compare the two layouts measured in the same run. The chunker approximates Xet's (same chunk sizes, a
different rolling hash), so the numbers are an estimate of the Hub's, not the Hub's own accounting.

    python benchmarks/publish_dedup.py            # 12 clips x 45 frames at 832x480, ~2 min on 2 cores
    python benchmarks/publish_dedup.py --clips 4  # quick
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.builder import dataset_writer as writer  # noqa: E402
from devil_dataset.core.dataset_schema import encode_frames, encode_hole  # noqa: E402

WINDOW = 64
MIN_CHUNK, MAX_CHUNK = 8 * 1024, 128 * 1024
CUT_BITS = 16  # one cut per 2**16 bytes on average: 64 KiB chunks (Xet's target)
GEAR = np.random.default_rng(20240501).integers(0, 2**63, 256, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def chunk_hashes(data: bytes) -> list[tuple[bytes, int]]:
    """Content-defined chunks of ``data`` as ``(digest, length)``."""
    n = len(data)
    if n == 0:
        return []
    g = GEAR[np.frombuffer(data, np.uint8)]
    c = np.cumsum(g, dtype=np.uint64)
    h = c.copy()
    h[WINDOW:] -= c[:-WINDOW]
    cand = np.flatnonzero((h >> np.uint64(64 - CUT_BITS)) == 0) + 1  # cut after the byte that completes the window
    del g, c, h
    out, pos = [], 0
    while pos < n:
        i = np.searchsorted(cand, pos + MIN_CHUNK)
        end = int(cand[i]) if i < len(cand) and cand[i] <= pos + MAX_CHUNK else pos + MAX_CHUNK
        end = min(end, n)
        out.append((hashlib.blake2b(data[pos:end], digest_size=16).digest(), end - pos))
        pos = end
    return out


def folder_chunks(root: Path) -> list[tuple[bytes, int]]:
    chunks = []
    for p in sorted(root.rglob("*.parquet")):
        chunks += chunk_hashes(p.read_bytes())
    return chunks


def upload_bytes(chunks: list[tuple[bytes, int]], held: set[bytes]) -> int:
    """Bytes of the chunks not in ``held`` (each new chunk counted once)."""
    sent, seen = 0, set(held)
    for digest, size in chunks:
        if digest not in seen:
            seen.add(digest)
            sent += size
    return sent


def synthetic_clips(count: int, frames: int, size: tuple[int, int], seed: int = 0) -> list[np.ndarray]:
    """Smooth random clips (natural-image-like JPEG sizes): low-resolution noise upsampled, drifting per frame."""
    from PIL import Image

    w, h = size
    rng = np.random.default_rng(seed)
    clips = []
    for _ in range(count):
        base = rng.random((h // 16 + 2, w // 16 + 2, 3)) * 255
        out = []
        for t in range(frames):
            small = np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)
            big = np.asarray(Image.fromarray(small).resize((w + 32, h + 32), Image.Resampling.BICUBIC))
            out.append(big[t % 16: t % 16 + h, 8: 8 + w])
            base = base * 0.98 + small * 0.02
        clips.append(np.stack(out))
    return clips


def make_rows(clips: list[np.ndarray]) -> list[dict]:
    rows = []
    for i, clip in enumerate(clips):
        t, h, w = clip.shape[:3]
        hole = np.zeros((t, h, w), bool)
        hole[:, h // 3: h // 2, w // 3: w // 2] = True
        rows.append({
            "clip_id": f"clip-{i:03d}", "mask_id": f"mask-{i:03d}", "frames": encode_frames(clip),
            "hole": encode_hole(hole),
            "num_frames": t, "height": h, "width": w, "fps": 25.0, "preset": "", "mask_index": i, "mask_seed": 0,
            "reversed": False, "source": f"s{i}.mp4", "source_first_frame": 0, "attribution": "", "license": "",
            "camera_motion_score": 0.0, "camera_motion_label": "", "bg_scene_motion_score": 0.0,
            "bg_scene_motion_label": "", "fg_displacement_label": "", "fg_motion_label": "", "fg_size_label": "",
            "mask_mean_area": 0.0, "mask_centroid_speed": 0.0, "mask_pose_motion": 0.0, "mask_union_coverage": 0.0,
        })
    return rows


def write_build(root: Path, rows: list[dict], cdc) -> None:
    n = len(rows)
    configs = {"all": list(range(n)), "slice_a": list(range(0, n, 2)), "slice_b": list(range(n - 1, -1, -3))}
    for name, order in configs.items():
        ranges = writer.shard_ranges(len(order))
        for i, rng in enumerate(ranges):
            path = writer.shard_path(root, name, i, len(ranges))
            writer.write_shard(path, (rows[order[r]] for r in rng), content_defined_chunking=cdc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clips", type=int, default=12)
    ap.add_argument("--frames", type=int, default=45)
    ap.add_argument("--size", default="832x480")
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    t0 = time.perf_counter()
    clips = synthetic_clips(args.clips, args.frames, (w, h))
    rows = make_rows(clips)
    changed = [dict(r) for r in rows]
    k = len(rows) // 2
    edited = clips[k].copy()
    edited[args.frames // 2] = 255 - edited[args.frames // 2]  # one frame of one clip differs
    changed[k] = make_rows([edited])[0] | {"clip_id": rows[k]["clip_id"], "mask_id": rows[k]["mask_id"],
                                            "mask_index": k, "source": rows[k]["source"]}
    print(f"{args.clips} clips x {args.frames} frames at {w}x{h}; configs all + 2 slices sharing its clips; "
          f"clip {k} changed in frame {args.frames // 2} for the rebuild "
          f"(data prepared in {time.perf_counter() - t0:.0f} s)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="devil-dedup-") as tmp:
        for label, cdc in (("fixed-size pages (before)", None), ("content-defined pages", writer.PARQUET_CDC_OPTIONS)):
            a, b = Path(tmp) / f"{len(results)}a", Path(tmp) / f"{len(results)}b"
            write_build(a, rows, cdc)
            write_build(b, changed, cdc)
            total = sum(p.stat().st_size for p in a.rglob("*.parquet"))
            chunks_a = folder_chunks(a)
            first = upload_bytes(chunks_a, set())
            again = upload_bytes(folder_chunks(b), {d for d, _ in chunks_a})
            results[label] = (total, first, again)
            print(f"  {label:<28} files {total / 1e6:8.1f} MB   first upload {first / 1e6:8.1f} MB "
                  f"({first / total:5.1%})   rebuild re-upload {again / 1e6:7.2f} MB ({again / total:6.2%})")
    (t_a, f_a, r_a), (t_b, f_b, r_b) = results.values()
    print(f"ratio content-defined / fixed: first upload {f_b / f_a:.3f}x, re-upload after one changed clip "
          f"{r_b / max(r_a, 1):.3f}x  (total {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

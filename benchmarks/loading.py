"""Loading speed and memory of a built DEVIL dataset.

1. Throughput: frames/s through a torch DataLoader with 2 workers (``datasets`` map-style and streaming, torch
   format, default collate) against plain single-process decoding of the same parquet shards in the same run
   (pyarrow + Pillow, no ``datasets``). Goal: ratio >= 0.8.
2. Training masks: masks/s of the training dataset's mask step (``InpaintingTrainDataset.window_mask``) with the
   default ``masks="scaled"`` (drawn directly at the clip size) against ``masks="release"`` (1080p render + cover
   crop, the previous default) for the same draws, at 832x480, in a few training set-ups. Goal: >= 10x. Also the
   preset statistics (area, centroid speed, pose motion) of both paths over the same masks. Goal: within 10 %.
3. Memory: peak RSS (``VmHWM`` from /proc, in a fresh process per measurement) while streaming a whole slice,
   for a slice and a slice four times larger. Goal: flat (ratio close to 1).

The data is synthetic but shaped like the benchmark: 832x480 clips of 45 frames, per-frame JPEG q95 of smooth
moving content, 1-bit PNG masks, written by the package's own writer.

    python benchmarks/loading.py            # 16 clips vs 64 clips of 45 frames
    python benchmarks/loading.py --quick    # 16 clips vs 64 clips of 10 frames
    python benchmarks/loading.py --masks-only   # only section 2
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np

W, H = 832, 480


def synthetic_clip(i: int, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Smooth textured frames with a moving camera-like shift, and a moving blob mask."""
    yy, xx = np.mgrid[0:H, 0 : W + 2 * num_frames].astype(np.float32)
    rng = np.random.default_rng(i)
    base = np.zeros((H, W + 2 * num_frames, 3), np.float32)
    for c in range(3):
        for _ in range(4):
            fx, fy, ph = rng.uniform(0.005, 0.05), rng.uniform(0.005, 0.05), rng.uniform(0, 6.3)
            base[..., c] += np.sin(xx * fx + yy * fy + ph) * 30
    base += rng.normal(0, 6, base.shape).astype(np.float32)  # fine texture, as in natural footage
    base = np.clip(base + 128, 0, 255).astype(np.uint8)
    frames = np.stack([base[:, 2 * t : 2 * t + W] for t in range(num_frames)])
    hole = np.zeros((num_frames, H, W), bool)
    for t in range(num_frames):
        cx, cy = 200 + 5 * t + 30 * (i % 5), 240
        hole[t] = (xx[:, :W] - cx) ** 2 / 90**2 + (yy[:, :W] - cy) ** 2 / 60**2 < 1
    return frames, hole


def write_synthetic(out: Path, num_clips: int, num_frames: int) -> int:
    """A dataset folder with config ``all`` of ``num_clips`` rows; returns its bytes."""
    from devil_dataset.builder import dataset_writer as writer
    from devil_dataset.core.dataset_schema import encode_frames, encode_hole

    cache: dict[int, tuple[list, list]] = {}

    def row(i: int) -> dict:
        key = i % 4  # 4 distinct clips, repeated: rows are as large as real ones, the data is cheap to make
        if key not in cache:
            f, h = synthetic_clip(key, num_frames)
            cache[key] = (encode_frames(f, "jpeg"), encode_hole(h))
        frames, hole = cache[key]
        return {"clip_id": f"synthetic-{i:05d}", "mask_id": f"devil_fgs-h_fgm-h_fgd-h_{i:05d}", "frames": frames,
                "hole": hole, "num_frames": num_frames, "height": H, "width": W, "fps": 30.0,
                "preset": "fgs-h_fgm-h_fgd-h", "mask_index": i, "mask_seed": 0, "reversed": False,
                "source": f"synthetic-{key}", "source_first_frame": 0, "attribution": "", "license": "",
                "camera_motion_score": 0.1, "camera_motion_label": "", "bg_scene_motion_score": 0.1,
                "bg_scene_motion_label": "", "fg_displacement_label": "high", "fg_motion_label": "high",
                "fg_size_label": "high", "mask_mean_area": 0.05, "mask_centroid_speed": 0.01,
                "mask_pose_motion": 0.01, "mask_union_coverage": 0.2}

    writer.write_config(out, "all", num_clips, row)
    writer.finish_repository(out, configs={"all": {"rows": num_clips, "description": "synthetic"}}, license="mit",
                             pretty_name="synthetic", build_notes="", attributions=[], info={})
    return writer.config_bytes(out)["all"]


def plain_decode(directory: Path) -> tuple[int, float]:
    """Frames decoded by a plain single-process loop over the shards (pyarrow + Pillow)."""
    from devil_dataset.data import iter_slice

    t0 = time.perf_counter()
    n = 0
    for row in iter_slice(directory, "all", columns=["frames", "hole"]):
        n += len(row["frames"])
    return n, time.perf_counter() - t0


def loader_decode(directory: Path, cache: str, streaming: bool, fast: bool, batch_size: int | None = 1,
                  workers: int = 2) -> tuple[int, float]:
    """Frames through ``DataLoader(..., num_workers=2)`` over ``load_dataset``.

    ``fast``: rows from :func:`devil_dataset.data.as_torch` (channels last, zero-copy); else the stock
    ``.with_format("torch")`` (channels first). ``batch_size=1`` uses the default collate (one more copy of each
    clip, into shared memory); ``None`` hands each clip over as it is (one clip per step).
    """
    import datasets
    import torch

    from devil_dataset.data import as_torch

    if streaming:
        ds = datasets.load_dataset(str(directory), "all", split="test", streaming=True)
    else:
        ds = datasets.load_dataset(str(directory), "all", split="test", cache_dir=cache)
    ds = ds.select_columns(["frames", "hole"])
    ds = as_torch(ds) if fast else ds.with_format("torch")
    loader = torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers, persistent_workers=False)
    t0 = time.perf_counter()
    n = 0
    for batch in loader:
        n += batch["frames"].shape[0 if batch_size is None else 1]
    return n, time.perf_counter() - t0


def _peak_rss_child(directory: str, mode: str) -> None:
    """Child process: stream the slice and print peak RSS (kB) and the baseline before streaming."""
    import datasets  # noqa: F401  (imported before the baseline so library memory is not counted as data)
    import torch  # noqa: F401

    from devil_dataset.data import iter_slice

    def hwm() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    base = hwm()
    frames = 0
    if mode == "iter_slice":
        for row in iter_slice(directory, "all"):
            frames += len(row["frames"])
    elif mode == "as_torch":
        from devil_dataset.data import as_torch

        for row in as_torch(datasets.load_dataset(directory, "all", split="test", streaming=True)):
            frames += len(row["frames"])
    else:
        ds = datasets.load_dataset(directory, "all", split="test", streaming=True).with_format("torch")
        for row in ds:
            frames += len(row["frames"])
    print(json.dumps({"base_kb": base, "peak_kb": hwm(), "frames": frames}))


def peak_rss(directory: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(directory), mode], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def mask_rates(rounds: int, masks_per_setup: int) -> None:
    """Section 2: masks/s of both mask paths of the training dataset, same draws, interleaved rounds."""
    from devil_dataset.core.mask_stats import mask_stats
    from devil_dataset.core.masks import PRESETS
    from devil_dataset.data import InpaintingTrainDataset

    setups = {  # (num_frames, reverse_prob, crop)
        "T=10, full 832x480 frame (defaults)": (10, 0.0, None),
        "T=10, half reversed": (10, 0.5, None),
        "T=5, crop 432x240": (5, 0.0, (432, 240)),
        "T=45, full frame": (45, 0.0, None),
    }
    with tempfile.TemporaryDirectory(prefix="devil-masks-") as tmp:
        write_synthetic(Path(tmp), 2, 45)
        print(f"\ntraining masks/s at {W}x{H}, {masks_per_setup} masks per set-up, best of {rounds} interleaved rounds "
              f"(load average {os.getloadavg()[0]:.1f}):")
        for name, (frames, reverse_prob, crop) in setups.items():
            rng = np.random.default_rng(0)
            draws = []
            for _ in range(masks_per_setup):
                preset = list(PRESETS)[int(rng.integers(len(PRESETS)))]
                window = None
                if crop is not None:
                    window = (int(rng.integers(0, W - crop[0] + 1)), int(rng.integers(0, H - crop[1] + 1))) + crop
                draws.append((preset, int(rng.integers(1000)), bool(rng.random() < reverse_prob), (W, H), window))
            best = {}
            for _ in range(rounds):
                for mode in ("release", "scaled"):
                    ds = InpaintingTrainDataset(tmp, num_frames=frames, masks=mode)
                    t0 = time.perf_counter()
                    for d in draws:
                        ds.window_mask(*d)
                    best[mode] = max(best.get(mode, 0.0), len(draws) / (time.perf_counter() - t0))
            print(f"  {name:38s} release path {best['release']:7.1f} masks/s   scaled path {best['scaled']:7.1f} "
                  f"masks/s   ratio {best['scaled'] / best['release']:5.1f}x")
        print("\npreset statistics, scaled vs release path (mean over the same masks, 30 frames each, 832x480):")
        for preset in PRESETS:
            stats = {}
            for mode in ("release", "scaled"):
                ds = InpaintingTrainDataset(tmp, num_frames=30, masks=mode)
                stats[mode] = [mask_stats(ds.window_mask(preset, i, False, (W, H)))
                               for i in range(masks_per_setup // 2)]
            diffs = []
            for key in ("mean_area", "centroid_speed", "pose_motion"):
                a = np.nanmean([getattr(s, key) for s in stats["release"]])
                b = np.nanmean([getattr(s, key) for s in stats["scaled"]])
                diffs.append(f"{key} {a:.5f} -> {b:.5f} ({100 * (b / a - 1):+5.1f} %)")
            print(f"  {preset}: " + "   ".join(diffs))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="16 vs 64 clips of 10 frames")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds per method (best kept; default 3)")
    p.add_argument("--child", nargs=2, metavar=("DIR", "MODE"), help=argparse.SUPPRESS)
    p.add_argument("--masks-only", action="store_true", help="only the training-mask section")
    p.add_argument("--masks", type=int, default=48, help="masks per set-up in the training-mask section (default 48)")
    args = p.parse_args(argv)
    if args.child:
        _peak_rss_child(*args.child)
        return 0
    mask_rates(args.rounds, args.masks)
    if args.masks_only:
        return 0
    clips, frames = (16, 10) if args.quick else (16, 45)  # >= 16: both slices exceed one shard (8 rows)
    with tempfile.TemporaryDirectory(prefix="devil-loading-") as tmp:
        tmp = Path(tmp)
        small, large = tmp / "small", tmp / "large"
        t0 = time.perf_counter()
        size_small = write_synthetic(small, clips, frames)
        size_large = write_synthetic(large, 4 * clips, frames)
        print(f"data: {clips} and {4 * clips} clips of {frames} frames at {W}x{H}: {size_small / 1e6:.1f} MB and "
              f"{size_large / 1e6:.1f} MB ({size_small / clips / frames / 1e3:.0f} kB per frame incl. mask; "
              f"written in {time.perf_counter() - t0:.0f} s)")

        cache = str(tmp / "hf-cache")
        loader_decode(small, cache, streaming=False, fast=True)  # warm-up: builds the datasets arrow cache once
        load0 = os.getloadavg()[0]
        # Rounds interleave the methods and keep each one's best: on a shared machine other processes come and go,
        # and the best of several runs is the least disturbed one.
        methods = {"plain decode, 1 process (iter_slice)": lambda: plain_decode(small)}
        for streaming in (False, True):
            for fast, bs in ((True, None), (True, 1), (False, 1)):
                name = (f"DataLoader(2 workers), {'streaming' if streaming else 'map-style'}, "
                        f"{'as_torch' if fast else 'with_format(torch)'}, batch_size={bs}")
                methods[name] = lambda streaming=streaming, fast=fast, bs=bs: loader_decode(
                    small, cache, streaming=streaming, fast=fast, batch_size=bs)
        results: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, run in methods.items():
                n, dt = run()
                results[name] = max(results.get(name, 0.0), n / dt)
        base = results["plain decode, 1 process (iter_slice)"]
        print(f"\nthroughput on {os.cpu_count()} cores, best of {args.rounds} interleaved rounds ({clips} clips, {n} "
              f"frames + masks each; load average "
              f"{load0:.1f} -> {os.getloadavg()[0]:.1f}):")
        for name, fps in results.items():
            print(f"  {name:72s} {fps:8.1f} frames/s   ratio {fps / base:.2f}")

        print("\npeak RSS while streaming the whole slice (fresh process each):")
        for mode in ("streaming", "as_torch", "iter_slice"):
            a, b = peak_rss(small, mode), peak_rss(large, mode)
            da, db = a["peak_kb"] - a["base_kb"], b["peak_kb"] - b["base_kb"]
            print(f"  {mode:10s} {clips:3d} clips: peak {a['peak_kb'] / 1024:7.1f} MB (+{da / 1024:6.1f} MB over "
                  f"imports)   {4 * clips:3d} clips: peak {b['peak_kb'] / 1024:7.1f} MB (+{db / 1024:6.1f} MB)   "
                  f"ratio of peaks {b['peak_kb'] / a['peak_kb']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

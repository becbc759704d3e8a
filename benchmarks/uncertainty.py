"""Cost of the uncertainty stage (issue 28) relative to the pixel-metric evaluation it annotates.

    python benchmarks/uncertainty.py [--quick] [--videos 150] [--frames 90] [--set-level]

1. Pixel metrics (PSNR, SSIM, PCons) are timed on a few 832x480 videos (CPU seconds per frame, this run) and
   scaled to a slice of ``--videos`` videos x ``--frames`` frames x 3 methods (the evaluation is linear in frames).
2. The uncertainty stage of that slice is run for real on synthetic per-video values: the per-(method, metric)
   summaries of every results file (:func:`results_uncertainty`) and the paired comparisons with Holm
   (:func:`compare_methods`). Printed: its CPU seconds and the ratio to (1) (goal: under 5 %).
3. ``--set-level``: the grouped jackknife of FID (2048-d) and VFID (1024-d) over 10 groups of videos with random
   features: CPU seconds and the memory of the group statistics per (slice, method) (the issue's limit: 60 CPU s).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.eval.uncertainty import (  # noqa: E402
    JACKKNIFE_GROUPS,
    compare_methods,
    grouped_jackknife_frechet,
    results_uncertainty,
)

W, H = 832, 480  # SPEC section 6: evaluation size
METHODS = ("telea", "aligned-copy", "flow-propagation")
KEYS = ("psnr", "ssim", "pcons_psnr_mask", "warp_error_mask")


def pixel_cpu_per_frame(videos: int, frames: int) -> float:
    from devil_dataset.eval.evaluate import build_metrics, evaluate
    from devil_dataset.eval.protocol import EvalOptions, VideoSample

    rng = np.random.default_rng(0)
    samples = []
    for i in range(videos):
        gt = rng.integers(0, 256, (frames, H, W, 3), dtype=np.uint8)
        pred = np.clip(gt.astype(np.int16) + rng.integers(-20, 21, gt.shape, dtype=np.int16), 0, 255).astype(np.uint8)
        hole = np.zeros((frames, H, W), bool)
        hole[:, 150:330, 300:520] = True
        samples.append(VideoSample(f"v{i}", gt, pred, hole))
    metrics, _ = build_metrics(["psnr", "ssim", "pcons"], EvalOptions(device="cpu"))
    t0 = time.process_time()
    evaluate(samples, metrics, progress=False)
    return (time.process_time() - t0) / (videos * frames)


def uncertainty_cpu(videos: int) -> float:
    rng = np.random.default_rng(1)
    values = {m: {f"clip{i:03d}": {k: float(rng.normal(30 + j, 3)) for k in KEYS} for i in range(videos)}
              for j, m in enumerate(METHODS)}
    docs = [{"slice": "fg_size_high", "method": m, "videos": v} for m, v in values.items()]
    t0 = time.process_time()
    for v in values.values():
        results_uncertainty(v)
    compare_methods(docs)
    return time.process_time() - t0


def set_level(videos: int, frames: int, dim: int, clips_per_video: int | None) -> tuple[float, float, float]:
    """(CPU s of the jackknife, CPU s of the plain Frechet distance, MiB of the group statistics)."""
    from devil_dataset.eval.frechet import GaussianStats, frechet_of
    from devil_dataset.eval.uncertainty import video_group

    rng = np.random.default_rng(2)
    gts = [GaussianStats() for _ in range(JACKKNIFE_GROUPS)]
    comps = [GaussianStats() for _ in range(JACKKNIFE_GROUPS)]
    rows = frames if clips_per_video is None else clips_per_video
    for i in range(videos):
        g = video_group(f"clip{i:03d}")
        x = rng.normal(size=(rows, dim))
        gts[g].add(x)
        comps[g].add(x + rng.normal(0.1, 0.5, size=(rows, dim)))
    t0 = time.process_time()
    pooled_a, pooled_b = GaussianStats(), GaussianStats()
    for a, b in zip(gts, comps):
        pooled_a, pooled_b = pooled_a.merged(a), pooled_b.merged(b)
    frechet_of(pooled_a, pooled_b)
    plain = time.process_time() - t0
    t0 = time.process_time()
    grouped_jackknife_frechet(gts, comps)
    jack = time.process_time() - t0
    mib = 2 * JACKKNIFE_GROUPS * (dim * dim + 2 * dim) * 8 / 2**20
    return jack, plain, mib


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames timed for the pixel metrics")
    ap.add_argument("--videos", type=int, default=150, help="videos per slice (release: 150)")
    ap.add_argument("--frames", type=int, default=90, help="frames per video (release: ~90)")
    ap.add_argument("--set-level", action="store_true", help="also time the FID/VFID grouped jackknife")
    args = ap.parse_args(argv)

    per_frame = pixel_cpu_per_frame(2, 4 if args.quick else 10)
    eval_cpu = per_frame * args.videos * args.frames * len(METHODS)
    unc = uncertainty_cpu(args.videos)
    print(f"pixel metrics (psnr, ssim, pcons) at {W}x{H}: {per_frame * 1000:.1f} ms CPU per frame -> "
          f"{eval_cpu:.0f} CPU s for {args.videos} videos x {args.frames} frames x {len(METHODS)} methods")
    print(f"uncertainty stage ({len(METHODS)} methods x {len(KEYS)} metrics: intervals + paired tests + Holm): "
          f"{unc:.2f} CPU s")
    print(f"ratio uncertainty / pixel evaluation: {100 * unc / eval_cpu:.2f} % (goal: < 5 %)")
    if args.set_level:
        for name, dim, clips in (("FID", 2048, None), ("VFID", 1024, 1)):
            jack, plain, mib = set_level(args.videos, 16 if args.quick else args.frames, dim, clips)  # rows > dim
            print(f"{name} ({dim}-d) grouped jackknife over {JACKKNIFE_GROUPS} groups: {jack:.1f} CPU s "
                  f"(plain distance {plain:.1f} CPU s, ratio {jack / max(plain, 1e-9):.1f}x), "
                  f"group statistics {mib:.0f} MiB per (slice, method)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

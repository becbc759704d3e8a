"""A DAVIS-sized run of ``devil evaluate --protocol propainter`` without networks: wall time on this
machine, and the paper-style table of the generated run.

    python benchmarks/propainter_run.py                      # 50 videos, 3,455 frames at 432x240, 2 workers
    python benchmarks/propainter_run.py --quick              # 5 videos
    python benchmarks/propainter_run.py --workers 1 --keep /tmp/davis-synthetic

Generates a DAVIS-shaped test set once (``--keep`` reuses it): 50 videos with DAVIS's frame counts (25 to 104, 3,455
in all, the split ProPainter and E2FGVI ship), ground truth ``JPEGImages/<video>/%05d.jpg`` at 432x240 (as their
``JPEGImages_432_240``), masks ``<video>/%05d.png`` (a drifting, rotating ellipse, about 10% of the frame) and a
method's output ``<video>/%05d.png`` (the ground truth shifted and noisy). Then times ``evaluate_propainter`` with PSNR,
SSIM, hole-only PSNR and SSIM (the pixel metrics; VFID and E_warp need networks) and prints the table
(``devil_dataset.eval.report.paper_table``). Goal: under 2 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.engines.local import shutdown_pools  # noqa: E402
from devil_dataset.eval.protocols.propainter.run import evaluate_propainter  # noqa: E402
from devil_dataset.eval.report.paper_table import paper_table_markdown  # noqa: E402

SIZE = (432, 240)
# Frame counts of a DAVIS-like split: 50 videos, 25 to 104 frames, 3,455 frames in all (the DAVIS test split of
# ProPainter / E2FGVI has these totals; the per-video counts here are generated, not theirs).
DAVIS_VIDEOS, DAVIS_FRAMES, DAVIS_MIN, DAVIS_MAX = 50, 3455, 25, 104


def frame_counts(videos: int, total: int, seed: int = 0) -> list[int]:
    """``videos`` counts in [25, 104] summing to ``total`` (when possible)."""
    rng = np.random.default_rng(seed)
    counts = np.clip(rng.normal(total / videos, 18, videos).round().astype(int), DAVIS_MIN, DAVIS_MAX)
    i = 0
    while counts.sum() != total and DAVIS_MIN * videos <= total <= DAVIS_MAX * videos:
        step = 1 if counts.sum() < total else -1
        if DAVIS_MIN <= counts[i % videos] + step <= DAVIS_MAX:
            counts[i % videos] += step
        i += 1
    return [int(c) for c in counts]


def generate(root: Path, counts: list[int], seed: int = 0) -> tuple[Path, Path, Path]:
    gt_dir, mask_dir, pred_dir = root / "GT", root / "MASKS", root / "PRED"
    if (root / "done").exists():
        return gt_dir, mask_dir, pred_dir
    rng = np.random.default_rng(seed)
    w, h = SIZE
    for v, t in enumerate(counts):
        name = f"video{v:02d}"
        for d in (gt_dir / "JPEGImages" / name, mask_dir / name, pred_dir / name):
            d.mkdir(parents=True, exist_ok=True)
        canvas = cv2.GaussianBlur(rng.integers(0, 256, (h + 16, w + 2 * t + 16, 3), dtype=np.uint8), (0, 0), 3)
        for i in range(t):
            frame = canvas[8:8 + h, 8 + 2 * i:8 + 2 * i + w]
            pred = np.clip(canvas[5:5 + h, 10 + 2 * i:10 + 2 * i + w].astype(np.int16)
                           + rng.integers(-10, 11, (h, w, 3)), 0, 255).astype(np.uint8)
            mask = np.zeros((h, w), np.uint8)
            cv2.ellipse(mask, (120 + (2 * i) % 200, 120), (70, 45), 3 * i, 0, 360, 255, -1)
            cv2.imwrite(str(gt_dir / "JPEGImages" / name / f"{i:05d}.jpg"), frame)
            Image.fromarray(mask).save(mask_dir / name / f"{i:05d}.png")
            cv2.imwrite(str(pred_dir / name / f"{i:05d}.png"), pred)
    (root / "done").write_text("generated\n")
    return gt_dir, mask_dir, pred_dir


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="5 videos of 25-40 frames")
    ap.add_argument("--keep", type=Path, help="generate into (and reuse) this folder")
    ap.add_argument("--metrics", nargs="+", default=["psnr", "ssim", "hole_psnr", "hole_ssim"])
    args = ap.parse_args(argv)
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    counts = frame_counts(5, 160) if args.quick else frame_counts(DAVIS_VIDEOS, DAVIS_FRAMES)
    root = args.keep or Path(tempfile.mkdtemp(prefix="davis-synthetic-"))
    t0 = time.perf_counter()
    gt_dir, mask_dir, pred_dir = generate(root, counts)
    print(f"data: {len(counts)} videos, {sum(counts)} frames at {SIZE[0]}x{SIZE[1]} in {root} "
          f"({time.perf_counter() - t0:.1f} s to generate or find)")
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    doc = evaluate_propainter(gt_dir, mask_dir, pred_dir, args.metrics, method="synthetic", workers=args.workers)
    wall = time.perf_counter() - t0
    shutdown_pools()  # the workers' CPU time is counted once they have exited
    cpu = _cpu_seconds() - cpu0
    print(f"evaluate_propainter {' '.join(args.metrics)}, {args.workers} worker(s): {wall:.1f} s wall, "
          f"{1e3 * wall / doc['num_frames']:.2f} ms per frame; {cpu:.1f} CPU s in all (this process and its "
          f"workers, start-up included); load average before: {load_before}")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")
    print()
    print(paper_table_markdown({"synthetic": {"DAVIS": doc}}, intervals=True))


if __name__ == "__main__":
    main()

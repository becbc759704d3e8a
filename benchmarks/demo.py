"""Benchmark of the demo's shared-cache evaluation against plain per-(method, slice) evaluation.

Scores one clip (832x480, textured, panning) under one hole for three "methods" (noise predictions) with the four
pixel metrics, twice: (a) as `devil evaluate` does, each method on its own (`evaluate` with the registry's
metrics; the GT flow and occlusion are recomputed for every method), (b) as `devil demo` does (GT flow and
occlusion once per clip, warp error only where it counts). Checks that both give identical values and prints the
CPU-time ratio.

    python benchmarks/demo.py [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10 frames instead of 45")
    args = ap.parse_args()
    import cv2

    from devil_dataset.demo import GroundTruthFlow, hole_warps_for, video_values
    from devil_dataset.eval.evaluate import build_metrics, evaluate
    from devil_dataset.eval.protocol import EvalOptions, VideoSample

    t_frames = 10 if args.quick else 45
    rng = np.random.default_rng(0)
    base = cv2.GaussianBlur(rng.integers(0, 256, (520, 1000, 3), dtype=np.uint8), (0, 0), 2)
    gt = np.stack([base[20:500, 10 + 2 * t : 842 + 2 * t] for t in range(t_frames)])
    hole = np.zeros(gt.shape[:3], bool)
    for t in range(t_frames):
        hole[t, 150:300, 200 + 3 * t : 400 + 3 * t] = True
    preds = {f"m{i}": rng.integers(0, 256, gt.shape, dtype=np.uint8) for i in range(3)}
    options = EvalOptions(flow="dis")
    names = ["psnr", "ssim", "pcons", "warp_error"]

    c = time.process_time()
    plain = {}
    for m, pred in preds.items():
        metrics, _ = build_metrics(names, options)
        plain[m] = evaluate([VideoSample("clip", gt, pred, hole)], metrics, progress=False).videos["clip"]
    t_plain = time.process_time() - c

    c = time.process_time()
    flow = GroundTruthFlow(gt)
    warps = hole_warps_for(hole, flow)
    shared = {m: video_values(gt, pred, hole, names, options, flow, warps) for m, pred in preds.items()}
    t_shared = time.process_time() - c

    same = all(plain[m][k] == shared[m][k] for m in preds for k in plain[m])
    print(f"{t_frames} frames at 832x480, 3 methods, metrics {' '.join(names)}")
    print(f"plain evaluation (per method): {t_plain:7.2f} s CPU")
    print(f"demo shared-cache evaluation:  {t_shared:7.2f} s CPU")
    print(f"ratio plain / shared: {t_plain / t_shared:.2f}x   identical values: {same}")
    if not same:
        raise SystemExit("values differ")


if __name__ == "__main__":
    main()

"""Timing of the reference-free and fidelity metrics on one generated clip at the evaluation size.

Prints seconds per video for each metric and its ratio against the release's PSNR on the same clip, measured in
the same run (the self-consistency paper reports its metric as 1x-10x slower than direct LPIPS per image and
second mask; here K re-inpaintings with the per-frame Telea baseline).

    python benchmarks/reference_free.py --quick
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from reference_free_validation import moving_blob_hole, panning_scene  # the sibling script

from devil_dataset.eval.metrics.fidelity import _GT_FLOWS, FFAlphaMetric, FFBetaMetric, UnchangedRegionMetric
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.pixel import PSNRMetric
from devil_dataset.eval.metrics.self_consistency import SelfConsistencyMetric


def _time(metric, video: VideoSample, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        _GT_FLOWS.frames = None  # no flow reuse between repeats: time each metric alone
        start = time.perf_counter()
        metric.update(video)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="5 frames at 416x240, K=2 (default: 10 frames at 832x480, K=10)")
    args = parser.parse_args()
    size, frames, k = ((416, 240), 5, 2) if args.quick else ((832, 480), 10, 10)
    rng = np.random.default_rng(0)
    gt = panning_scene(rng, size, frames, (2.0, 0.5))
    hole = moving_blob_hole(rng, size, frames)
    video = VideoSample("bench", gt, np.where(hole[..., None], 128, gt).astype(np.uint8), hole)
    opts = EvalOptions(flow="dis", self_consistency_submetric="psnr", self_consistency_k=k)
    base = _time(PSNRMetric(opts), video, 3)
    print(f"{size[0]}x{size[1]}, {frames} frames; baseline psnr: {base:.4f} s/video")
    for name, metric, repeat in (
        (f"self_consistency (psnr, K={k}, telea)", SelfConsistencyMetric(opts), 1),
        ("ff_alpha (DIS)", FFAlphaMetric(opts), 2),
        ("ff_beta (DIS)", FFBetaMetric(opts), 2),
        ("unchanged_region", UnchangedRegionMetric(opts), 3),
    ):
        t = _time(metric, video, repeat)
        print(f"{name:40s} {t:8.3f} s/video  ratio vs psnr: {t / base:8.1f}x")


if __name__ == "__main__":
    main()

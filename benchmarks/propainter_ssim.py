"""The ProPainter protocol's SSIM: scikit-image per frame, as their code calls it, against
:func:`devil_dataset.eval.protocols.propainter.kernels.ssim_frames`, side by side in one run, on the same frames.

    python benchmarks/propainter_ssim.py            # 40 frames at 432x240, 3 hole sizes
    python benchmarks/propainter_ssim.py --quick    # 8 frames

Frames: a smooth random texture panning 2 px per frame (432x240, the protocol's size); an elliptic hole drifting
across it, dilated as the protocol dilates it (3x3 cross x4); a prediction that is the ground truth plus noise and
a shift inside the hole; the composite is scored, as the protocol scores it. Hole sizes: small (2% of the frame),
typical (10%, a DAVIS object) and the worst case for the fast path (the whole frame differs).

Prints, per case, ms per frame for scikit-image (``structural_similarity(a, b, data_range=255, channel_axis=-1,
win_size=65)`` on float64, the reference), for the fast path given the dilated hole (the engine's call), and for the
fast path finding the differing pixels itself; the speed-up; and the largest absolute difference of the per-frame
values (goal <= 1e-9). Timings interleave the two paths frame by frame (best of ``--repeat``), so machine load hits
both alike.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import cv2
import numpy as np
from skimage.metrics import structural_similarity

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.eval.kernels.composite import composite  # noqa: E402
from devil_dataset.eval.protocols.propainter.kernels import dilate_hole, ssim_frame  # noqa: E402

SIZE = (432, 240)  # the protocol's frame size (W, H)
CASES = {"small hole (2%)": 0.02, "typical hole (10%)": 0.10, "whole frame differs": 1.0}


def video(frames: int, hole_fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gt, composite, dilated hole) of one generated video at the protocol's size."""
    rng = np.random.default_rng(seed)
    w, h = SIZE
    scene = cv2.GaussianBlur(rng.integers(0, 256, (h + 8, w + 2 * frames + 8, 3), dtype=np.uint8), (0, 0), 3)
    gt = np.stack([scene[4:4 + h, 4 + 2 * t:4 + 2 * t + w] for t in range(frames)])
    pred = np.clip(np.roll(gt, 3, axis=2).astype(np.int16) + rng.integers(-12, 13, gt.shape), 0, 255).astype(np.uint8)
    hole = np.zeros((frames, h, w), bool)
    if hole_fraction >= 1:
        hole[:] = True
    else:
        ry = np.sqrt(hole_fraction * w * h / np.pi / 1.6)
        for t in range(frames):
            cx = int(w * 0.3 + t * 2)
            mask = np.zeros((h, w), np.uint8)
            cv2.ellipse(mask, (cx, h // 2), (int(1.6 * ry), int(ry)), 0, 0, 360, 1, -1)
            hole[t] = mask > 0
    dilated = dilate_hole(hole)
    return gt, composite(pred, gt, dilated), dilated


def reference(g: np.ndarray, c: np.ndarray) -> float:
    return float(structural_similarity(g.astype(np.float64), c.astype(np.float64), data_range=255, channel_axis=-1,
                                       win_size=65))


def run_case(frames: int, fraction: float, repeat: int) -> tuple[float, float, float, float]:
    gt, comp, hole = video(frames, fraction)
    best = [np.inf, np.inf, np.inf]
    ref_values, fast_values = np.zeros(frames), np.zeros(frames)
    for _ in range(repeat):
        spent = [0.0, 0.0, 0.0]
        for t in range(frames):
            t0 = time.perf_counter()
            ref_values[t] = reference(gt[t], comp[t])
            t1 = time.perf_counter()
            fast_values[t] = ssim_frame(comp[t], gt[t], hole[t])
            t2 = time.perf_counter()
            ssim_frame(comp[t], gt[t])
            t3 = time.perf_counter()
            spent[0] += t1 - t0
            spent[1] += t2 - t1
            spent[2] += t3 - t2
        best = [min(b, s) for b, s in zip(best, spent)]
    ms = [1e3 * b / frames for b in best]
    return ms[0], ms[1], ms[2], float(np.max(np.abs(ref_values - fast_values)))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="8 frames, 2 repeats")
    args = ap.parse_args(argv)
    frames, repeat = (8, 2) if args.quick else (args.frames, args.repeat)
    print(f"SSIM (65x65 uniform window) at {SIZE[0]}x{SIZE[1]}, {frames} frames, best of {repeat}; ms per frame")
    print(f"{'case':<22} {'scikit-image':>12} {'fast+hole':>10} {'fast':>8} {'speed-up':>9} {'max |diff|':>11}")
    for name, fraction in CASES.items():
        ref_ms, fast_ms, find_ms, diff = run_case(frames, fraction, repeat)
        print(f"{name:<22} {ref_ms:>12.2f} {fast_ms:>10.2f} {find_ms:>8.2f} {ref_ms / fast_ms:>8.1f}x {diff:>11.1e}")


if __name__ == "__main__":
    main()

"""Speed (seconds per 832x480 frame) and hole PSNR of the baseline inpainters, against Telea measured in the same run.

Scenes: a generated textured video seen by a static and by a panning camera, and optionally a real clip in the
release's input layout (``--inputs``, e.g. the devkit sample, resized to 832x480). Masks: release presets rendered
at 1920x1080 and cover-cropped to 832x480 (the release's slices), small/large and low/high displacement.

    python benchmarks/inpaint_baselines.py --quick
    python benchmarks/inpaint_baselines.py --frames 45 \
        --inputs /work/shared/fixtures/release-devkit/sample-inpainting-inputs
"""
from __future__ import annotations

import argparse
import time

import cv2
import numpy as np

from devil_dataset.core.cover_crop import cover_crop_mask
from devil_dataset.core.masks import mask_seed, render_mask
from devil_dataset.inpaint import get_inpainter

METHODS = ("telea", "navier-stokes", "aligned-copy", "flow-propagation")
PRESETS = ("fgs-l_fgm-l_fgd-l", "fgs-l_fgm-l_fgd-h", "fgs-h_fgm-l_fgd-l", "fgs-h_fgm-l_fgd-h")
SIZE = (832, 480)


def texture(height: int, width: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros((height, width, 3), np.float32)
    for octave in (64, 16, 4):
        small = rng.random((height // octave + 2, width // octave + 2, 3)).astype(np.float32)
        img += cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)[:height, :width] * (octave / 84)
    img = img / img.max() * 160
    for _ in range(height * width // 1500):
        colour = rng.integers(0, 256, 3).tolist()
        x, y, r = int(rng.integers(0, width)), int(rng.integers(0, height)), int(rng.integers(4, 30))
        if rng.random() < 0.5:
            cv2.rectangle(img, (x, y), (x + r, y + int(rng.integers(4, 30))), colour, -1)
        else:
            cv2.circle(img, (x, y), r // 2 + 1, colour, -1)
    return np.clip(img, 0, 255).astype(np.uint8)


def panning_video(num_frames: int, pan: tuple[float, float]) -> np.ndarray:
    w, h = SIZE
    margin = int(np.ceil(max(map(abs, pan)) * num_frames)) + 4
    tex = texture(h + 2 * margin, w + 2 * margin)
    out = np.empty((num_frames, h, w, 3), np.uint8)
    for t in range(num_frames):
        m = np.float32([[1, 0, -margin - pan[0] * t], [0, 1, -margin - pan[1] * t]])
        out[t] = cv2.warpAffine(tex, m, (w, h), flags=cv2.INTER_LINEAR)
    return out


def real_video(directory: str, num_frames: int) -> np.ndarray:
    from devil_dataset.core.release_format import read_frame_pngs

    frames = read_frame_pngs(directory, "gt")
    frames = np.concatenate([frames, frames[::-1][1:-1]] * (num_frames // len(frames) + 1))[:num_frames]  # ping-pong
    return np.stack([cv2.resize(f, SIZE, interpolation=cv2.INTER_CUBIC) for f in frames])


def hole_psnr(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> float:
    err = np.mean((pred[hole].astype(np.float64) - gt[hole]) ** 2)
    return float(10 * np.log10(255.0**2 / max(err, 1e-10)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 frames, two presets, no real clip")
    ap.add_argument("--frames", type=int, default=45)
    ap.add_argument("--inputs", help="a clip folder in the release's input layout to add as a real scene")
    args = ap.parse_args()
    num_frames = 20 if args.quick else args.frames
    presets = PRESETS[1:3] if args.quick else PRESETS
    scenes = {"static": panning_video(num_frames, (0, 0)), "pan": panning_video(num_frames, (2.0, 0.5))}
    if args.inputs and not args.quick:
        scenes["real"] = real_video(args.inputs, num_frames)
    masks = {p: cover_crop_mask(render_mask(p, mask_seed(i), num_frames=num_frames), SIZE)
             for i, p in enumerate(presets)}
    seconds = {m: 0.0 for m in METHODS}
    cpu = {m: 0.0 for m in METHODS}
    frames_done = 0
    print(f"{num_frames} frames at {SIZE[0]}x{SIZE[1]}; hole PSNR (dB), temporal gain over telea in brackets")
    print(f"{'scene':8s} {'preset':20s} {'hole%':>6s} " + " ".join(f"{m:>22s}" for m in METHODS))
    for scene, frames in scenes.items():
        for preset, hole in masks.items():
            row = []
            base = None
            for m in METHODS:
                start, start_cpu = time.perf_counter(), time.process_time()
                pred = get_inpainter(m)(frames, hole)
                seconds[m] += time.perf_counter() - start
                cpu[m] += time.process_time() - start_cpu
                psnr = hole_psnr(pred, frames, hole)
                base = psnr if m == "telea" else base
                row.append(f"{psnr:6.2f}" + (f" ({psnr - base:+5.2f})" if m != "telea" else "        "))
            frames_done += num_frames
            print(f"{scene:8s} {preset:20s} {100 * hole.mean():6.2f} " + " ".join(f"{r:>22s}" for r in row), flush=True)
    print("\nseconds per 832x480 frame, wall clock and CPU (all threads), ratio to telea measured in this run:")
    for m in METHODS:
        print(f"  {m:18s} wall {seconds[m] / frames_done:.4f} s/frame ({seconds[m] / seconds['telea']:.2f}x telea)  "
              f"cpu {cpu[m] / frames_done:.4f} s/frame ({cpu[m] / cpu['telea']:.2f}x telea)")


if __name__ == "__main__":
    main()

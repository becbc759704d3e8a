"""The pixel metrics' torch path against the numpy path: frames/s, ratio and largest difference, one run.

    python benchmarks/pixel_torch.py --quick      # 6 frames at 320x192, CPU (and CUDA when present)
    python benchmarks/pixel_torch.py              # 16 frames at 832x480 (DEVIL's scoring size)
    python benchmarks/pixel_torch.py --threads 4 --batch-size 16 --frames 45

For PSNR, SSIM, PCons and the warp error, on one generated video (a textured scene panning 2 px per frame, a
drifting elliptic hole, a noisy prediction in it; the composite is scored), times in this invocation:

* **numpy**: the reference path as the metrics run it (:mod:`devil_dataset.eval.kernels.pixel`, PSNR and SSIM
  summing and filtering only the hole's part with the same floats; :mod:`devil_dataset.eval.kernels.warp`, the
  occlusion near the hole only);
* **torch on the CPU** and, when torch sees a GPU, **torch on CUDA** (:mod:`devil_dataset.eval.kernels.pixel_torch`,
  :mod:`devil_dataset.eval.kernels.warp_torch`), on frames already on the device (the one transfer per video is timed
  on its own line; CUDA timings synchronise before reading the clock).

The warp error's ground-truth flows (DIS on the ground truth) are computed once, untimed: the timed part is the
hole's work (occlusion, the pixels entering the mean) and the values, what each method pays. Prints frames/s per
path (best of ``--repeat``), the ratio of each torch path's frames/s to numpy's, and the largest absolute
difference of the per-frame (per-pair) values from numpy's (goal: <= 1e-9).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.flow import dis_flow  # noqa: E402
from devil_dataset.eval.kernels import pixel, pixel_torch, warp, warp_torch  # noqa: E402
from devil_dataset.eval.kernels.composite import composite  # noqa: E402
from devil_dataset.eval.kernels.warp import GroundTruthFlow  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_engine import make_clip  # noqa: E402  (the engine benchmark's clips)

#: DEVIL's scoring size (the release's slices) and the default length; --quick: small and short.
DEFAULT_SIZE, DEFAULT_FRAMES = (832, 480), 16
QUICK_SIZE, QUICK_FRAMES = (320, 192), 6
#: the torch path equals the numpy path within this (absolute, dB / SSIM units / squared error)
TOLERANCE = 1e-9


def make_video(t: int, h: int, w: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(composite, gt, hole): :func:`eval_engine.make_clip` with a prediction off by up to +-20 in the hole."""
    gt, hole = make_clip(seed, t, h, w)
    rng = np.random.default_rng(seed + 1)
    pred = np.clip(gt.astype(np.int16) + rng.integers(-20, 21, gt.shape, dtype=np.int16), 0, 255).astype(np.uint8)
    return composite(pred, gt, hole), gt, hole


def best_time(fn: Callable[[], Any], repeat: int, sync: Callable[[], None]) -> tuple[float, Any]:
    """(best wall seconds over ``repeat`` calls, the last result); ``sync`` waits for the device first."""
    best, out = math.inf, None
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best, out


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| over finite values; inf when NaN or infinities are not in the same places."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not (np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b))
            and np.array_equal(a[np.isinf(a)], b[np.isinf(b)])):
        return math.inf
    fin = np.isfinite(a)
    return float(np.abs(a[fin] - b[fin]).max(initial=0.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_FRAMES} frames at {QUICK_SIZE[0]}x{QUICK_SIZE[1]}")
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES)
    ap.add_argument("--size", type=int, nargs=2, default=DEFAULT_SIZE, metavar=("W", "H"))
    ap.add_argument("--batch-size", type=int, default=8, help="frames per torch batch (EvalOptions.batch_size)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    t, (w, h) = (QUICK_FRAMES, QUICK_SIZE) if args.quick else (args.frames, tuple(args.size))
    comp, gt, hole = make_video(t, h, w)
    flow = GroundTruthFlow([dis_flow(gt[i], gt[i + 1]) for i in range(t - 1)],
                           [dis_flow(gt[i + 1], gt[i]) for i in range(t - 1)])
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"pixel metrics, {t} frames at {w}x{h}, hole {hole.mean():.1%} of the pixels; torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads, batch {args.batch_size}; "
          + (f"GPU {torch.cuda.get_device_name()}" if "cuda" in devices else "no GPU"))

    def no_sync() -> None:
        pass

    numpy_fns: dict[str, Callable[[], np.ndarray]] = {
        "psnr": lambda: pixel.psnr_frames(comp, gt, hole),
        "ssim": lambda: pixel.ssim_frames(comp, gt, "release", changed=hole),
        "pcons": lambda: pixel.pcons_psnr_mask_pairs(comp, hole),
        "warp_error": lambda: np.array([warp.warp_error_shared(comp, hole, flow)]),
    }
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    reference: dict[str, np.ndarray] = {}
    for name, fn in numpy_fns.items():
        seconds, reference[name] = best_time(fn, args.repeat, no_sync)
        rows[name] = {"numpy": (t / seconds, 0.0)}
    for device in devices:
        def sync(device: str = device) -> None:
            if device == "cuda":
                torch.cuda.synchronize()

        move_s, (c, g, m) = best_time(lambda device=device: tuple(pixel_torch.to_device(a, device)
                                                                  for a in (comp, gt, hole)), args.repeat, sync)
        dev_flow = GroundTruthFlow(flow.fw, flow.bw, device=device, batch_size=args.batch_size)
        warp_torch.device_flows(dev_flow, device)  # the clip's flows, moved once (shared by every method)
        kw: dict[str, Any] = {"device": device, "batch_size": args.batch_size}
        torch_fns: dict[str, Callable[[], np.ndarray]] = {
            "psnr": lambda c=c, g=g, m=m, kw=kw: pixel_torch.psnr_frames(c, g, m, **kw),
            "ssim": lambda c=c, g=g, kw=kw: pixel_torch.ssim_frames(c, g, "release", **kw),
            "pcons": lambda c=c, m=m, kw=kw: pixel_torch.pcons_psnr_mask_pairs(c, m, **kw),
            # the metric's path on the device: the hole's points there, the value at them in numpy
            "warp_error": lambda f=dev_flow: np.array([warp.warp_error_at(comp, f.for_hole(hole))]),
        }
        for name, fn in torch_fns.items():
            fn()  # warm-up (kernels, allocator)
            seconds, values = best_time(fn, args.repeat, sync)
            rows[name][f"torch-{device}"] = (t / seconds, max_diff(values, reference[name]))
        print(f"  moving one video to {device} (composite, gt, hole): {1000 * move_s:.1f} ms")
    paths = ["numpy"] + [f"torch-{d}" for d in devices]
    print(f"  {'metric':<11}" + "".join(f"{p + ' fps':>16}" for p in paths)
          + "".join(f"{p + ' / numpy':>20}{'max |diff|':>12}" for p in paths[1:]))
    worst = 0.0
    for name, row in rows.items():
        line = f"  {name:<11}" + "".join(f"{row[p][0]:>16.2f}" for p in paths)
        for p in paths[1:]:
            line += f"{row[p][0] / row['numpy'][0]:>19.2f}x{row[p][1]:>12.1e}"
            worst = max(worst, row[p][1])
        print(line)
    print(f"largest difference from numpy: {worst:.1e} (goal <= {TOLERANCE:.0e})")
    if worst > TOLERANCE:
        raise SystemExit("the torch path differs from the numpy path by more than the tolerance")


if __name__ == "__main__":
    main()

"""Evaluation engine: three methods in one pass vs three separate runs, and 2 workers vs 1 (ratios, one run).

    python benchmarks/eval_engine.py [--quick] [--clips N] [--frames T] [--metrics psnr ssim pcons warp_error]

Writes generated clips (a textured panning scene, a drifting hole) and three methods' prediction folders to a
temporary folder, then times, in this invocation: one method alone, the three methods as three separate
``evaluate_dataset`` runs (the baseline), the three in one ``evaluate_slice`` pass (ground-truth work such as the
warp error's flow prepared once per clip), and one method on the local engine with 2 workers vs in-process: the
first call (it starts the workers) and a second one (the workers kept for the command, as every stage after the
first uses them). Reports wall and CPU seconds (CPU includes the worker processes, alive or exited); on a loaded
machine compare the CPU ratios. Goal: three methods in one pass for at most 1.6x the cost of one. Results of the
one-pass run must equal the separate runs, and the 2-worker results the in-process ones.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.engines import get_engine  # noqa: E402
from devil_dataset.core.progress import cpu_seconds  # noqa: E402
from devil_dataset.core.release_format import write_frame_pngs  # noqa: E402
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.eval.scoring.evaluate import evaluate_dataset, evaluate_slice  # noqa: E402


def make_clip(seed: int, t: int, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """(gt uint8 [T, H, W, 3], hole bool [T, H, W]): a blocky texture panning 2 px per frame, a drifting ellipse."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (h // 8 + 2, (w + 2 * t) // 8 + 2, 3), dtype=np.uint8)
    base = np.kron(small, np.ones((8, 8, 1), np.uint8))
    gt = np.stack([base[:h, 2 * i: 2 * i + w] for i in range(t)])
    yy, xx = np.ogrid[0:h, 0:w]
    hole = np.stack([((yy - h / 2 - i) / (h / 5)) ** 2 + ((xx - w / 2 - 2 * i) / (w / 6)) ** 2 < 1 for i in range(t)])
    return gt, hole


def timed(fn):
    """(wall s, CPU s of this process and its children, result) of ``fn()``."""
    c, t = cpu_seconds(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t, cpu_seconds() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="4 clips of 12 frames at 256x192")
    ap.add_argument("--clips", type=int, default=6)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--size", type=int, nargs=2, default=(432, 240), metavar=("W", "H"))
    ap.add_argument("--metrics", nargs="+", default=["psnr", "ssim", "pcons", "warp_error"])
    args = ap.parse_args()
    clips, frames, (w, h) = (4, 12, (256, 192)) if args.quick else (args.clips, args.frames, args.size)
    opts = EvalOptions(flow="dis")
    with tempfile.TemporaryDirectory() as tmp:
        rows, preds = [], {}
        for i in range(clips):
            gt, hole = make_clip(i, frames, h, w)
            rows.append({"clip_id": f"clip{i}", "frames": gt, "hole": hole, "num_frames": frames, "height": h,
                         "width": w})
            for k, noise in enumerate((4, 16, 48)):
                rng = np.random.default_rng(100 * i + k)
                pred = np.clip(gt.astype(np.int16) + rng.integers(-noise, noise + 1, gt.shape), 0, 255).astype(np.uint8)
                write_frame_pngs(pred, Path(tmp) / f"method{k}" / f"clip{i}", "pred")
                preds[f"method{k}"] = Path(tmp) / f"method{k}"
        run1 = lambda p, jobs=1: evaluate_dataset("bench", "all", p, args.metrics, opts, progress=False,  # noqa: E731
                                                  rows=rows, engine=get_engine("local", jobs=jobs))
        run1(preds["method0"])  # warm-up (imports, OpenCV threads)
        one = timed(lambda: run1(preds["method0"]))
        sep = timed(lambda: {m: run1(p) for m, p in preds.items()})
        together = timed(lambda: evaluate_slice("bench", "all", preds, args.metrics, opts, progress=False, rows=rows))
        assert together[2] == sep[2], "one pass must equal separate runs"
        jobs2_start = timed(lambda: run1(preds["method0"], jobs=2))  # starts the 2 workers
        jobs2 = timed(lambda: run1(preds["method0"], jobs=2))  # the same workers again
        same = all(r[2]["videos"] == one[2]["videos"] and r[2]["summary"] == one[2]["summary"]
                   for r in (jobs2_start, jobs2))
    print(f"{clips} clips x {frames} frames at {w}x{h}, metrics {' '.join(args.metrics)} (DIS flow)")
    print(f"{'run':<34}{'wall s':>9}{'CPU s':>9}{'wall x':>9}{'CPU x':>9}")
    for name, (wall, cpu, _) in (("one method", one), ("three methods, three runs", sep),
                                 ("three methods, one pass", together), ("one method, 2 workers (start)", jobs2_start),
                                 ("one method, 2 workers (kept)", jobs2)):
        print(f"{name:<34}{wall:9.2f}{cpu:9.2f}{wall / one[0]:9.2f}{cpu / one[1]:9.2f}")
    print(f"one pass vs three runs: wall {together[0] / sep[0]:.2f}x, CPU {together[1] / sep[1]:.2f}x "
          f"(goal: one pass <= 1.6x one method: wall {together[0] / one[0]:.2f}x, CPU {together[1] / one[1]:.2f}x)")
    print(f"2 workers vs in-process (jobs=2 vs jobs=1): wall {jobs2[0] / one[0]:.2f}x, CPU {jobs2[1] / one[1]:.2f}x "
          f"with the workers kept; first call (workers start) wall {jobs2_start[0] / one[0]:.2f}x, "
          f"CPU {jobs2_start[1] / one[1]:.2f}x; results identical: {same}")


if __name__ == "__main__":
    main()

"""One slice, one method, every metric that can run: cold vs warm ground-truth cache (ratios, one run).

    python benchmarks/slice_eval.py [--quick] [--videos N] [--frames T] [--size W H] [--no-disk]

Writes a generated slice (textured panning scenes with a drifting elliptic hole, in memory) and two methods'
prediction folders (PNG) to a temporary folder, then times, in this invocation:

* today's path: method A and method B, each a plain ``evaluate_dataset`` without the cache;
* method A with an empty cache (cold: the ground-truth work is computed and stored);
* method B with that cache (warm: a second method on the same slice reads the ground truth's work);
* the ground-truth work alone (``cached_prepare_clip`` into an empty cache, then read back);

and prints per-stage throughput (frames/s), the ratios warm/cold and warm/today's path, and whether every document
equals today's. Goal (issue 31): the second method with a warm cache in at most 0.5x the wall time of the first.
Unless ``--no-disk``, it also measures the cache entry of one 45- and one 90-frame 832x480 clip and extrapolates
to the 1,250 clips of DEVIL (every clip has 45-90 frames, SPEC section 1).

The default slice (150 videos x 90 frames at 832x480, the issue's GPU figure) is far too slow for a small CPU: a
default run first prints an estimate from a short calibration; ``--quick`` scores 4 videos x 20 frames at 416x240.
Only the CPU path is measured here (``--device cpu``); the GPU path of the issue is still to be built and timed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.release_format import write_frame_pngs  # noqa: E402
from devil_dataset.eval.evaluate import build_metrics, evaluate_dataset  # noqa: E402
from devil_dataset.eval.gt_cache import GroundTruthCache, cached_prepare_clip  # noqa: E402
from devil_dataset.eval.protocol import EvalOptions  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_engine import make_clip, timed  # noqa: E402  (the engine benchmark's clips and timer)

#: The issue's slice: 150 videos x 90 frames at 832x480 (DEVIL's scoring size, SPEC section 1).
DEFAULT_VIDEOS, DEFAULT_FRAMES, DEFAULT_SIZE = 150, 90, (832, 480)
QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE = 4, 20, (416, 240)
#: Clips of DEVIL (issue 31's count) for the disk extrapolation; every clip has 45-90 frames (SPEC section 1).
DEVIL_CLIPS = 1250
GOAL_WARM_OVER_COLD = 0.5


def make_slice(root: Path, videos: int, frames: int, w: int, h: int) -> tuple[list[dict], dict[str, Path]]:
    """Rows of the slice and two methods' prediction folders (noise of two strengths)."""
    rows, preds = [], {}
    for i in range(videos):
        gt, hole = make_clip(i, frames, h, w)
        rows.append({"clip_id": f"clip{i:04d}", "frames": gt, "hole": hole, "num_frames": frames, "height": h,
                     "width": w})
        for k, noise in enumerate((8, 40)):
            rng = np.random.default_rng(100 * i + k)
            pred = np.clip(gt.astype(np.int16) + rng.integers(-noise, noise + 1, gt.shape), 0, 255).astype(np.uint8)
            name = "AB"[k]
            write_frame_pngs(pred, root / f"method{name}" / f"clip{i:04d}", "pred")
            preds[name] = root / f"method{name}"
    return rows, preds


def entry_size(frames: int, w: int, h: int, names: list[str], options: EvalOptions, folder: Path) -> tuple[int, float]:
    """(bytes, seconds): the cache entries of one generated clip of ``frames`` frames at w x h, and the time to
    make them."""
    metrics, _ = build_metrics(names, options)
    gt, _ = make_clip(7, frames, h, w)
    cache = GroundTruthCache(folder / f"disk{frames}")
    wall, _, _ = timed(lambda: cached_prepare_clip(metrics, gt, cache, others=False))
    return cache.size_bytes(), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_VIDEOS} videos x {QUICK_FRAMES} frames at {QUICK_SIZE[0]}x{QUICK_SIZE[1]}")
    ap.add_argument("--videos", type=int, default=DEFAULT_VIDEOS)
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES)
    ap.add_argument("--size", type=int, nargs=2, default=DEFAULT_SIZE, metavar=("W", "H"))
    ap.add_argument("--no-disk", action="store_true", help="skip the 45/90-frame 832x480 entry measurement")
    args = ap.parse_args()
    videos, frames, (w, h) = ((QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE) if args.quick
                              else (args.videos, args.frames, tuple(args.size)))
    opts = EvalOptions(device="cpu", flow="dis")
    _, skipped = build_metrics(None, opts)
    names = list(build_metrics(None, opts)[0])
    print(f"slice: {videos} videos x {frames} frames at {w}x{h}; method: 1 (a second one for the warm cache); "
          f"metrics: {' '.join(names)} (DIS flow, CPU)")
    for name, reason in skipped.items():
        print(f"  skipped {name}: {reason.splitlines()[0][:110]}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if not args.quick:  # calibrate on one short clip before committing to the whole slice
            cal_rows, cal_preds = make_slice(root / "cal", 1, 10, w, h)
            cal = timed(lambda: evaluate_dataset("cal", "all", cal_preds["A"], names, opts, progress=False,
                                                 rows=cal_rows))[0]
            est = cal / 10 * videos * frames
            print(f"estimate on this machine: about {est / 60:.0f} min per method without the cache; the 6 runs "
                  f"below about {4.5 * est / 60:.0f} min (use --quick for a small slice)", flush=True)
        made = timed(lambda: make_slice(root, videos, frames, w, h))
        rows, preds = made[2]
        n_frames = videos * frames

        def run(method: str, cache: GroundTruthCache | None):
            return evaluate_dataset("bench", "all", preds[method], names, opts, progress=False, rows=rows,
                                    gt_cache=cache)

        evaluate_dataset("bench", "all", preds["A"], names, opts, progress=False, rows=rows[:1])  # warm-up
        plain_a = timed(lambda: run("A", None))
        plain_b = timed(lambda: run("B", None))
        cache = GroundTruthCache(root / "gt")
        cold_a = timed(lambda: run("A", cache))
        cold_stats = (cache.stats.misses, cache.stats.written_bytes)
        warm = GroundTruthCache(root / "gt")
        warm_b = timed(lambda: run("B", warm))
        metrics, _ = build_metrics(names, opts)
        gt_cache = GroundTruthCache(root / "gt-alone")
        gt_cold = timed(lambda: [cached_prepare_clip(metrics, r["frames"], gt_cache, others=False) for r in rows])
        gt_warm = timed(lambda: [cached_prepare_clip(metrics, r["frames"], gt_cache, others=False) for r in rows])
        same = (json.dumps(cold_a[2], sort_keys=True) == json.dumps(plain_a[2], sort_keys=True)  # NaN == NaN
                and json.dumps(warm_b[2], sort_keys=True) == json.dumps(plain_b[2], sort_keys=True))
        disk = {} if args.no_disk else {t: entry_size(t, *DEFAULT_SIZE, names, opts, root) for t in (45, 90)}
    print(f"{'stage':<46}{'wall s':>9}{'CPU s':>9}{'frames/s':>10}")
    for label, (wall, cpu, _) in (
            ("generate the slice and 2 prediction folders", made),
            ("method A, no cache (today's path)", plain_a), ("method B, no cache (today's path)", plain_b),
            ("method A, cold cache (computes and stores)", cold_a), ("method B, warm cache (second method)", warm_b),
            ("ground-truth work alone, computed + stored", gt_cold), ("ground-truth work alone, read + verified",
                                                                      gt_warm)):
        print(f"{label:<46}{wall:9.2f}{cpu:9.2f}{n_frames / wall:10.1f}")
    print(f"cache after the cold run: {cold_stats[0]} entries written, {cold_stats[1] / 2**20:.1f} MiB; warm run: "
          f"{warm.stats.hits} hits, {warm.stats.misses} misses")
    ratio = warm_b[0] / cold_a[0]
    verdict = "met" if ratio <= GOAL_WARM_OVER_COLD else "NOT met"
    print(f"second method, warm cache vs first method, cold cache: wall {ratio:.2f}x, CPU "
          f"{warm_b[1] / cold_a[1]:.2f}x (goal <= {GOAL_WARM_OVER_COLD}x: {verdict})")
    print(f"second method, warm cache vs today's path for it: wall {warm_b[0] / plain_b[0]:.2f}x, CPU "
          f"{warm_b[1] / plain_b[1]:.2f}x; cold cache vs today's path: wall {cold_a[0] / plain_a[0]:.2f}x")
    print(f"documents identical to today's path (cold and warm): {same}")
    if disk:
        (b45, s45), (b90, s90) = disk[45], disk[90]
        print(f"cache entries of one 832x480 clip: 45 frames {b45 / 2**20:.0f} MiB ({s45:.1f} s to compute), "
              f"90 frames {b90 / 2**20:.0f} MiB ({s90:.1f} s)")
        print(f"full DEVIL ({DEVIL_CLIPS} clips of 45-90 frames): {DEVIL_CLIPS * b45 / 2**30:.0f}-"
              f"{DEVIL_CLIPS * b90 / 2**30:.0f} GiB (all 90-frame clips: the upper bound)")
    if not same:
        sys.exit("documents differ from today's path")


if __name__ == "__main__":
    main()

"""One slice, one method, every metric that can run: cold vs warm ground-truth cache, new path vs today's (one run).

    python benchmarks/slice_eval.py --quick                   # 4 videos x 20 frames at 416x240, CPU
    python benchmarks/slice_eval.py --device cuda             # a full slice: 150 videos x 90 frames, 832x480
    python benchmarks/slice_eval.py --videos 20 --frames 45   # anything in between

Generates a slice (textured panning scenes with a drifting elliptic hole, made on the fly, never all in memory) and
one method's predictions (PNG folders, written by a thread pool), then times, in this invocation:

* **today's path** (``pixel_backend="numpy"``, no cache: ``devil evaluate`` without the ground-truth cache and the
  torch path) on the first ``--today-videos`` videos (all of them for ``--quick``; a default run extrapolates per
  video, and says so);
* **the new path, cold**: the method with an empty ground-truth cache (``--gt-cache``; the pixel metrics on torch
  when ``--device`` is a GPU: ``pixel_backend="auto"``);
* **the new path, warm**: a second method on the same slice, reading the ground truth's work from that cache;
* the ground-truth work alone, computed and stored, then read back and verified.

Prints, per run, wall and CPU seconds and frames/s; per stage (each metric's ``prepare`` and ``update``, the
prediction reads) the busy seconds and frames/s (an ``update`` includes the metric's own ``prepare`` when nothing
was prepared for it, as in today's path); the GPU busy fraction (``torch.cuda.utilization``, sampled every
0.1 s) on a GPU; the ratios warm/cold (goal <= 0.5x), warm/today's and new/today's; the largest
per-video difference between the new path and today's (0 on CPU; <= 1e-9 for the torch path); and the disk a cache
entry takes for one 45- and one 90-frame 832x480 clip, extrapolated to DEVIL's 1,250 clips.

Networks (LPIPS, FID, PVCS/VFID, RAFT): used where their weights are cached; ``--networks random`` (the default on
a GPU when weights are missing) writes random weights of the same architectures to a temporary weights cache, as
``benchmarks/networks.py`` does (speed does not depend on the values); ``--networks none`` leaves them out (the
default on CPU: I3D on a 2-core CPU takes hours for a slice).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.release_format import write_frame_pngs  # noqa: E402
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.eval.metrics.registry import (
    METRICS,  # noqa: E402
    build_metrics,  # noqa: E402
)
from devil_dataset.eval.scoring import inputs as composite_module  # noqa: E402
from devil_dataset.eval.scoring.evaluate import evaluate_dataset
from devil_dataset.eval.scoring.gt_cache import GroundTruthCache, cached_prepare_clip  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_engine import make_clip, timed  # noqa: E402  (the engine benchmark's clips and timer)

#: A full slice: 150 videos x 90 frames at 832x480 (DEVIL's scoring size).
DEFAULT_VIDEOS, DEFAULT_FRAMES, DEFAULT_SIZE = 150, 90, (832, 480)
QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE = 4, 20, (416, 240)
#: Videos today's path scores in a full-size run (it is extrapolated per video): today's numpy path takes about
#: 0.3 s per 832x480 frame on a CPU core, 40 min for a full slice.
DEFAULT_TODAY_VIDEOS = 10
#: Clips of DEVIL (the release's count) for the disk extrapolation; every clip has 45-90 frames.
DEVIL_CLIPS = 1250
GOAL_WARM_OVER_COLD = 0.5  # a second method with a warm cache in at most 0.5x the first one's wall time
GPU_SAMPLE_S = 0.1


class GeneratedSlice:
    """The slice's rows (``evaluate_dataset(rows=...)``), each clip generated when it is iterated (re-iterable)."""

    def __init__(self, videos: int, frames: int, w: int, h: int) -> None:
        self.videos, self.frames, self.w, self.h = videos, frames, w, h

    def __len__(self) -> int:
        return self.videos

    def row(self, i: int) -> dict[str, Any]:
        gt, hole = make_clip(i, self.frames, self.h, self.w)
        return {"clip_id": f"clip{i:04d}", "frames": gt, "hole": hole, "num_frames": self.frames,
                "height": self.h, "width": self.w}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.row(i) for i in range(self.videos))

    def head(self, n: int) -> list[dict[str, Any]]:
        return [self.row(i) for i in range(min(n, self.videos))]


def write_predictions(rows: GeneratedSlice, folder: Path, noise: int, threads: int) -> None:
    """One method's predictions: the ground truth plus uniform noise of +/- ``noise``, a PNG folder per clip."""
    def one(i: int) -> None:
        row = rows.row(i)
        rng = np.random.default_rng(1000 + i)
        gt = row["frames"]
        pred = np.clip(gt.astype(np.int16) + rng.integers(-noise, noise + 1, gt.shape), 0, 255).astype(np.uint8)
        write_frame_pngs(pred, folder / row["clip_id"], "pred")

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, range(len(rows))))


class StageClock:
    """Busy seconds per stage: every metric class's ``prepare`` and ``update`` and the prediction reads, wrapped
    for the benchmark's lifetime (stages overlap when reads run ahead in the prefetch thread)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def _wrap(self, owner: Any, attr: str, stage: Callable[[Any], str]) -> None:
        original = owner.__dict__[attr]
        clock = self

        def timed_call(this, *args, **kwargs):
            t = time.perf_counter()
            try:
                return original(this, *args, **kwargs)
            finally:
                with clock.lock:
                    key = stage(this)
                    clock.seconds[key] = clock.seconds.get(key, 0.0) + time.perf_counter() - t

        setattr(owner, attr, timed_call)
        self._undo.append(lambda: setattr(owner, attr, original))

    @contextmanager
    def installed(self, metric_names: list[str]) -> Iterator["StageClock"]:
        classes = {METRICS[name].load(): name for name in metric_names}
        seen: set[type] = set()
        for cls in classes:
            for klass in cls.__mro__:  # the class that defines each method (a shared base wrapped once)
                for attr in ("prepare", "update"):
                    if attr in klass.__dict__ and klass not in seen and klass.__module__.startswith("devil_dataset"):
                        self._wrap(klass, attr, lambda this, a=attr: f"{classes.get(type(this), '?')}.{a}")
                seen.add(klass)
        self._wrap(composite_module.PredictionStore, "read", lambda this: "read predictions")
        try:
            yield self
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()

    def take(self) -> dict[str, float]:
        with self.lock:
            out, self.seconds = self.seconds, {}
        return out


class GpuBusy:
    """Mean GPU utilisation while a block runs (``torch.cuda.utilization``, needs pynvml; None without a GPU)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.samples: list[float] = []

    @contextmanager
    def sampling(self) -> Iterator["GpuBusy"]:
        import torch

        self.samples = []
        if not self.device.startswith("cuda") or not torch.cuda.is_available():
            yield self
            return
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(GPU_SAMPLE_S):
                try:
                    self.samples.append(float(torch.cuda.utilization(self.device)))
                except Exception:  # pynvml missing or not permitted: no figure rather than a wrong one
                    return

        worker = threading.Thread(target=sample, daemon=True)
        worker.start()
        try:
            yield self
        finally:
            stop.set()
            worker.join()

    def fraction(self) -> float | None:
        return float(np.mean(self.samples)) / 100 if self.samples else None


def install_random_weights(folder: Path) -> None:
    """Random weights of every network's architecture in a temporary weights cache (unverified: test weights)."""
    import torch

    from devil_dataset.core.networks.i3d import random_i3d_state
    from devil_dataset.core.networks.inception import random_inception_state
    from devil_dataset.core.networks.lpips import random_alexnet_state
    from devil_dataset.core.networks.raft import random_raft_state
    from devil_dataset.core.weights import KNOWN_WEIGHTS, UNVERIFIED_ENV, WEIGHTS_DIR_ENV

    folder.mkdir(parents=True, exist_ok=True)
    for name, make in (("i3d", random_i3d_state), ("inception", random_inception_state),
                       ("alexnet", random_alexnet_state), ("raft", random_raft_state)):
        torch.save(make(), folder / KNOWN_WEIGHTS[name].filename)
    os.environ[WEIGHTS_DIR_ENV], os.environ[UNVERIFIED_ENV] = str(folder), "1"


def entry_size(frames: int, w: int, h: int, names: list[str], options: EvalOptions, folder: Path) -> tuple[int, float]:
    """(bytes, seconds): the cache entries of one generated clip of ``frames`` frames at w x h, and the time to
    make them."""
    metrics, _ = build_metrics(names, options)
    gt, hole = make_clip(7, frames, h, w)
    cache = GroundTruthCache(folder / f"disk{frames}")
    wall, _, _ = timed(lambda: cached_prepare_clip(metrics, gt, cache, others=False, hole=hole))
    return cache.size_bytes(), wall


def per_video(doc: dict) -> dict[str, dict[str, float]]:
    return {c: {k: v for k, v in row.items() if isinstance(v, (int, float))} for c, row in doc["videos"].items()}


def largest_difference(new: dict, today: dict) -> float:
    """Largest |new - today| over the videos and keys both score (NaN = NaN; inf = inf)."""
    worst = 0.0
    a, b = per_video(new), per_video(today)
    for clip in set(a) & set(b):
        for key in set(a[clip]) & set(b[clip]):
            x, y = a[clip][key], b[clip][key]
            if (math.isnan(x) and math.isnan(y)) or x == y:
                continue
            worst = max(worst, abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf)
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_VIDEOS} videos x {QUICK_FRAMES} frames at {QUICK_SIZE[0]}x{QUICK_SIZE[1]}")
    ap.add_argument("--videos", type=int, default=DEFAULT_VIDEOS)
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES)
    ap.add_argument("--size", type=int, nargs=2, default=DEFAULT_SIZE, metavar=("W", "H"))
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    ap.add_argument("--networks", choices=("auto", "none", "random"), default="auto",
                    help="network metrics: auto = cached weights, random weights on a GPU when missing, none on CPU")
    ap.add_argument("--precision", default="float32", help="the networks' precision (EvalOptions.precision)")
    ap.add_argument("--today-videos", type=int, default=None,
                    help=f"videos today's path scores (default: all for --quick, else {DEFAULT_TODAY_VIDEOS})")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads writing the predictions")
    ap.add_argument("--no-disk", action="store_true", help="skip the 45/90-frame 832x480 entry measurement")
    args = ap.parse_args()
    videos, frames, (w, h) = ((QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE) if args.quick
                              else (args.videos, args.frames, tuple(args.size)))
    today_n = min(videos, args.today_videos or (videos if args.quick else DEFAULT_TODAY_VIDEOS))
    gpu = args.device != "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        networks = args.networks
        if networks == "random" or (networks == "auto" and gpu):
            from devil_dataset.core.weights import available

            if networks == "random" or not all(available(n) for n in ("i3d", "inception", "alexnet")):
                install_random_weights(root / "weights")
                networks = "random"
        flow = "auto" if networks != "none" and gpu else "dis"
        new = EvalOptions(device=args.device, flow=flow, precision=args.precision)
        today = EvalOptions(device=args.device, flow=flow, precision=args.precision, pixel_backend="numpy")
        names, skipped = build_metrics(None, new)
        names = list(names)
        if networks == "none" or (not gpu and networks == "auto"):
            names = [n for n in names if not METRICS[n].needs_weights]
        print(f"slice: {videos} videos x {frames} frames at {w}x{h}, one method (a second one for the warm cache); "
              f"device {args.device}; pixel backend {'torch' if gpu else 'numpy'} (new) vs numpy (today); "
              f"flow {flow}; networks: {networks}; metrics: {' '.join(names)}")
        for name, reason in skipped.items():
            print(f"  skipped {name}: {reason.splitlines()[0][:110]}")
        rows = GeneratedSlice(videos, frames, w, h)
        made = timed(lambda: write_predictions(rows, root / "methodA", 8, args.threads))
        clock, busy = StageClock(), GpuBusy(args.device)
        n_frames = videos * frames

        def run(options: EvalOptions, subset: Any, cache: GroundTruthCache | None):
            with busy.sampling():
                out = timed(lambda: evaluate_dataset("bench", "all", root / "methodA", names, options,
                                                     progress=False, rows=subset, gt_cache=cache))
            return out, clock.take(), busy.fraction()

        with clock.installed(names):
            evaluate_dataset("bench", "all", root / "methodA", names, new, progress=False, rows=rows.head(1))
            clock.take()  # the warm-up (networks loaded, kernels compiled) is not counted
            today_rows = rows.head(today_n)
            today_run = run(today, today_rows, None)
            cache = GroundTruthCache(root / "gt")
            cold = run(new, rows, cache)
            cold_stats = (cache.stats.misses, cache.stats.written_bytes)
            warm_cache = GroundTruthCache(root / "gt")
            warm = run(new, rows, warm_cache)
        metrics, _ = build_metrics(names, new)
        alone = GroundTruthCache(root / "gt-alone")
        gt_cold = timed(lambda: [cached_prepare_clip(metrics, r["frames"], alone, others=False, hole=r["hole"])
                                 for r in rows])
        gt_warm = timed(lambda: [cached_prepare_clip(metrics, r["frames"], alone, others=False, hole=r["hole"])
                                 for r in rows])
        cache_names = [n for n in names if n in ("warp_error", "fid")]
        disk = {} if args.no_disk else {t: entry_size(t, *DEFAULT_SIZE, cache_names, new, root) for t in (45, 90)}
    scale = videos / today_n
    print(f"\n{'run':<52}{'wall s':>9}{'CPU s':>9}{'frames/s':>10}{'GPU busy':>10}")
    for label, (res, _, frac), count in (
            (f"today's path (numpy, no cache), {today_n} videos", today_run, today_n * frames),
            ("new path, cold cache (first method)", cold, n_frames),
            ("new path, warm cache (second method)", warm, n_frames)):
        wall, cpu, _ = res
        gpu_text = "-" if frac is None else f"{frac:.0%}"
        print(f"{label:<52}{wall:9.2f}{cpu:9.2f}{count / wall:10.1f}{gpu_text:>10}")
    for label, (wall, cpu, _), count in (
            ("write the predictions (PNG, thread pool)", made, n_frames),
            ("ground-truth work alone, computed + stored", gt_cold, n_frames),
            ("ground-truth work alone, read + verified", gt_warm, n_frames)):
        print(f"{label:<52}{wall:9.2f}{cpu:9.2f}{count / wall:10.1f}{'-':>10}")
    print(f"\n{'stage (busy seconds; frames/s)':<44}{'today':>16}{'cold':>16}{'warm':>16}")
    stages = sorted(set(today_run[1]) | set(cold[1]) | set(warm[1]))
    for stage in stages:
        cells = []
        for (_, sec, _), count in ((today_run, today_n * frames), (cold, n_frames), (warm, n_frames)):
            s = sec.get(stage)
            cells.append("-" if s is None else f"{s:7.2f} {count / s if s else math.inf:7.0f}")
        print(f"{stage:<44}" + "".join(f"{c:>16}" for c in cells))
    print(f"\ncache after the cold run: {cold_stats[0]} entries written, {cold_stats[1] / 2**20:.1f} MiB; warm run: "
          f"{warm_cache.stats.hits} hits, {warm_cache.stats.misses} misses")
    ratio = warm[0][0] / cold[0][0]
    verdict = "met" if ratio <= GOAL_WARM_OVER_COLD else "NOT met"
    print(f"second method, warm cache vs first method, cold cache: wall {ratio:.2f}x, CPU "
          f"{warm[0][1] / cold[0][1]:.2f}x (goal <= {GOAL_WARM_OVER_COLD}x: {verdict})")
    today_wall = today_run[0][0] * scale
    extrapolated = "" if scale == 1 else f" (today's path extrapolated from {today_n} videos)"
    print(f"warm cache vs today's path: wall {warm[0][0] / today_wall:.2f}x; cold cache vs today's path: wall "
          f"{cold[0][0] / today_wall:.2f}x{extrapolated}")
    diff_cold = largest_difference(cold[0][2], today_run[0][2])
    diff_warm = largest_difference(warm[0][2], today_run[0][2])
    print(f"largest per-video difference from today's path: cold {diff_cold:.3g}, warm {diff_warm:.3g} "
          f"(over the {today_n} videos both scored)")
    print("slice-level values: " + json.dumps({k: v for k, v in warm[0][2]["summary"].items()}, default=str))
    if disk:
        (b45, s45), (b90, s90) = disk[45], disk[90]
        print(f"cache entries of one 832x480 clip ({', '.join(cache_names)}): 45 frames {b45 / 2**20:.1f} MiB "
              f"({s45:.1f} s to compute), 90 frames {b90 / 2**20:.1f} MiB ({s90:.1f} s)")
        print(f"full DEVIL ({DEVIL_CLIPS} clips of 45-90 frames): {DEVIL_CLIPS * b45 / 2**30:.1f}-"
              f"{DEVIL_CLIPS * b90 / 2**30:.1f} GiB (all 90-frame clips: the upper bound)")
    tolerance = 1e-9 if gpu else 0.0
    if max(diff_cold, diff_warm) > tolerance:
        sys.exit(f"values differ from today's path by more than {tolerance}")


if __name__ == "__main__":
    main()

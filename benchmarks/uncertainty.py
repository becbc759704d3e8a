"""Cost of the uncertainty stage relative to the pixel-metric evaluation it annotates.

    python benchmarks/uncertainty.py [--quick] [--videos 150] [--frames 90] [--set-level]

1. Pixel metrics (PSNR, SSIM, PCons) are timed on a few 832x480 videos (CPU seconds per frame, this run) and
   scaled to a slice of ``--videos`` videos x ``--frames`` frames x 3 methods (the evaluation is linear in frames).
2. The uncertainty stage of that slice is run for real on synthetic per-video values: the per-(method, metric)
   summaries of every results file (:func:`results_uncertainty`) and the paired comparisons with Holm
   (:func:`compare_methods`). Printed: its CPU seconds and the ratio to (1) (goal: under 5 %).
3. ``--set-level``: ``EvalOptions(set_level_ci=True)`` on the real metric classes (:class:`FIDMetric`, 2048-d
   per frame; :class:`I3DMetric`, VFID 1024-d per video and VFID (clips) 1024-d per 10-frame window) fed random
   features for a ``--videos`` x ``--frames`` slice (the networks replaced by stand-ins: the features' values do not
   change the cost). Printed per (slice, method): the memory of the per-group state (exact array bytes) and the
   jackknife's extra peak (tracemalloc), the CPU seconds of ``uncertainty()`` (the jackknife) against ``compute()``
   (the plain distance, ``sqrtm``) and against the network passes of the evaluation it annotates (Inception / I3D
   with random weights on a few 832x480 frames here, scaled to the slice), and the extra CPU of keeping the groups
   in ``update``. The goal: at most 60 CPU s per (slice, method).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.eval.stats.intervals import results_uncertainty
from devil_dataset.eval.stats.significance import compare_methods  # noqa: E402

W, H = 832, 480  # the release's evaluation size
METHODS = ("telea", "aligned-copy", "flow-propagation")
KEYS = ("psnr", "ssim", "pcons_psnr_mask", "warp_error_mask")


def pixel_cpu_per_frame(videos: int, frames: int) -> float:
    from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
    from devil_dataset.eval.metrics.registry import build_metrics
    from devil_dataset.eval.scoring.one_pass import evaluate

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


class _FeatureNet:
    """Stand-in FID network: seeded random 2048-d features per frame (the metric's cost does not depend on them)."""

    def __init__(self, dim: int, seed: int) -> None:
        self.rng, self.dim = np.random.default_rng(seed), dim

    def features(self, frames: np.ndarray) -> np.ndarray:
        return self.rng.normal(size=(len(frames), self.dim)).astype(np.float32)


def _state_mib(metric, names) -> float:
    """Exact bytes of the GaussianStats arrays in the metric's per-group states ``names``, in MiB."""
    total = 0
    for name in names:
        for stats in getattr(metric, name).values():
            total += sum(a.nbytes for a in (stats.shift, stats.s1, stats.s2) if a is not None)
    return total / 2**20


def _timed(fn):
    """(result, CPU s of this process (every BLAS thread), extra peak MiB traced while ``fn`` ran)."""
    import tracemalloc

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.process_time()
    out = fn()
    cpu = time.process_time() - t0
    peak = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    tracemalloc.stop()
    return out, cpu, peak


def _tiny_video(clip_id: str, frames: int):
    from devil_dataset.eval.metrics.metric import VideoSample

    gt = np.zeros((frames, 2, 2, 3), np.uint8)
    return VideoSample(clip_id, gt, gt, np.zeros((frames, 2, 2), bool))


def fid_set_level(videos: int, frames: int, timed_videos: int = 15) -> dict[str, float]:
    """FIDMetric with set_level_ci on random features: state memory, jackknife vs plain distance; and the extra CPU
    of keeping the groups in ``update`` (default batch size, with vs without groups on ``timed_videos`` videos,
    scaled to ``videos``)."""
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.metrics.perceptual import FIDMetric

    out: dict[str, float] = {}
    timed = min(videos, timed_videos)
    for grouped in (False, True):
        metric = FIDMetric(EvalOptions(set_level_ci=grouped), network=_FeatureNet(2048, 3))
        t0 = time.process_time()
        for i in range(timed):
            metric.update(_tiny_video(f"clip{i:03d}", frames))
        out["update_grouped" if grouped else "update"] = (time.process_time() - t0) * videos / timed
    # the slice's state (one network batch per video: the same statistics, filled faster)
    metric = FIDMetric(EvalOptions(set_level_ci=True, batch_size=frames), network=_FeatureNet(2048, 3))
    for i in range(videos):
        metric.update(_tiny_video(f"clip{i:03d}", frames))
    out["state_mib"] = _state_mib(metric, ("gt_groups", "comp_groups"))
    computed, out["compute"], _ = _timed(metric.compute)
    jack, out["jackknife"], out["peak_mib"] = _timed(lambda: metric.uncertainty(computed))
    out["fid"], out["se"] = computed["fid"], jack["fid"]["se"]
    return out


class _WindowPass:
    """What :func:`~devil_dataset.eval.metrics.i3d.video_pass` keeps on a sample: random 1024-d window and video
    features (the I3D network's part is timed separately)."""

    def __init__(self, net, rng: np.random.Generator, windows: int) -> None:
        self.net = net
        self.pvcs = rng.random(windows)
        self.gt_windows = rng.normal(size=(windows, 1024))
        self.comp_windows = self.gt_windows + rng.normal(0.1, 0.5, size=(windows, 1024))
        self._video = (rng.normal(size=1024), rng.normal(0.1, 1.0, size=1024))

    def video_features(self):
        return self._video


def vfid_set_level(videos: int, frames: int) -> dict[str, float]:
    """I3DMetric (vfid, vfid_clips) with set_level_ci on random features: state and jackknife costs."""
    from devil_dataset.eval.metrics.i3d import PVCS_WINDOW, VFIDMetric
    from devil_dataset.eval.metrics.metric import EvalOptions

    opts = EvalOptions(set_level_ci=True)
    net = object()
    metric = VFIDMetric(opts, network=net)
    rng = np.random.default_rng(4)
    windows = max(1, frames - PVCS_WINDOW + 1)
    t0 = time.process_time()
    for i in range(videos):
        v = _tiny_video(f"clip{i:03d}", frames)
        v.cache[("i3d", id(net), opts.batch_size, opts.pvcs_mode)] = _WindowPass(net, rng, windows)
        metric.update(v)
    out = {"update_grouped": time.process_time() - t0, "windows": float(windows)}
    out["state_video_mib"] = _state_mib(metric, ("gt_video_groups", "comp_video_groups"))
    out["state_clips_mib"] = _state_mib(metric, ("gt_clips_groups", "comp_clips_groups"))
    computed, out["compute"], _ = _timed(metric.compute)
    jack, out["jackknife"], out["peak_mib"] = _timed(lambda: metric.uncertainty(computed))
    for key in ("vfid", "vfid_clips"):
        out[key], out[f"{key}_se"] = computed[key], jack[key]["se"]
    return out


def network_cpu(frames: int) -> tuple[float, float]:
    """(CPU s per 832x480 frame of the FID Inception, CPU s per 10-frame 832x480 window of I3D), random weights."""
    import torch

    from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
    from devil_dataset.core.networks.inception import FIDInception, random_inception_state

    torch.manual_seed(0)
    x = np.random.default_rng(5).integers(0, 256, (frames, H, W, 3), dtype=np.uint8)
    inception = FIDInception(state=random_inception_state(seed=0))
    inception.features(x[:1])  # warm-up
    t0 = time.process_time()
    inception.features(x)
    per_frame = (time.process_time() - t0) / frames
    i3d = load_i3d(state=random_i3d_state(seed=1))
    window = torch.rand(1, 3, 10, H, W)
    from devil_dataset.core.networks.i3d import VFID_ENDPOINT

    with torch.inference_mode():
        t0 = time.process_time()
        i3d.endpoints(window, (VFID_ENDPOINT,))
        per_window = time.process_time() - t0
    return per_frame, per_window


def set_level_report(videos: int, frames: int, timed_frames: int) -> list[str]:
    """The printed lines of ``--set-level``."""
    from devil_dataset.eval.stats.jackknife import JACKKNIFE_GROUPS

    fid = fid_set_level(videos, frames)
    vfid = vfid_set_level(videos, frames)
    inc, i3d = network_cpu(timed_frames)
    fid_eval = inc * videos * frames * 2  # GT and composite frames through Inception
    windows = vfid["windows"]
    vfid_eval = i3d * videos * 2 * (windows + frames / 10)  # windows (PVCS, clips) + whole videos (~frames/10)
    import os

    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    lines = [
        f"set-level intervals ({JACKKNIFE_GROUPS} groups; {videos} videos x {frames} frames per (slice, method); "
        f"OPENBLAS_NUM_THREADS={threads}):",
        f"  FID (2048-d, {videos * frames} frames): per-group state {fid['state_mib']:.0f} MiB (+{fid['peak_mib']:.0f}"
        f" MiB while the jackknife runs); jackknife {fid['jackknife']:.1f} CPU s vs the plain FID {fid['compute']:.1f}"
        f" CPU s (sqrtm); keeping the groups in update +{fid['update_grouped'] - fid['update']:.1f} CPU s "
        f"({fid['update']:.1f} -> {fid['update_grouped']:.1f} at batch size 8); Inception {inc:.2f} CPU s/frame -> "
        f"evaluation "
        f"~{fid_eval:.0f} CPU s, jackknife = {100 * fid['jackknife'] / fid_eval:.1f} % of it",
        f"  VFID + VFID (clips) (1024-d, {videos} videos, {videos * int(windows)} windows): per-group state "
        f"{vfid['state_video_mib']:.0f} + {vfid['state_clips_mib']:.0f} MiB (+{vfid['peak_mib']:.0f} MiB while the "
        f"jackknife runs); jackknife (both keys) {vfid['jackknife']:.1f} CPU s vs the plain distances "
        f"{vfid['compute']:.1f} CPU s (sqrtm); I3D {i3d:.1f} CPU s/window -> evaluation ~{vfid_eval:.0f} CPU s, "
        f"jackknife = {100 * vfid['jackknife'] / vfid_eval:.2g} % of it",
        f"  (values on random features: FID {fid['fid']:.2f} +/- {fid['se']:.3f}, VFID {vfid['vfid']:.2f} +/- "
        f"{vfid['vfid_se']:.3f}, VFID (clips) {vfid['vfid_clips']:.3f} +/- {vfid['vfid_clips_se']:.4f})",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames timed for the pixel metrics and networks")
    ap.add_argument("--videos", type=int, default=150, help="videos per slice (release: 150)")
    ap.add_argument("--frames", type=int, default=90, help="frames per video (release: ~90)")
    ap.add_argument("--set-level", action="store_true",
                    help="also measure the FID/VFID jackknife (EvalOptions.set_level_ci) on the metric classes")
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
        for line in set_level_report(args.videos, args.frames, 2 if args.quick else 8):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Evaluation speed: pixel-metric fps at 832x480, PCons vectorised vs the release's direct loop, network fps.

    python benchmarks/eval.py [--quick] [--device cpu|cuda] [--no-networks]

Prints frames per second for PSNR, SSIM and PCons (CPU, 832x480), SSIM (around the hole and whole frames) against
scikit-image on float64 frames (the release's arithmetic; baseline in the same run, values within 1e-13), the PCons
speed-up of our vectorised search
over a direct double loop written like the release's (baseline measured in the same run; goal >= 50x; values
must be identical), and frames per second of the network metrics with random weights (LPIPS, FID, PVCS+VFID,
warp error with DIS flow, and RAFT) when their modules are installed.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.eval.kernels.pixel import pcons_psnr_mask_pairs, pcons_release_loop, psnr_frames, ssim_frames  # noqa: E402
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample  # noqa: E402

W, H = 832, 480  # the release's evaluation size


def make_video(t: int, seed: int = 0) -> VideoSample:
    """A textured scene panning 2 px/frame, a drifting elliptical hole, a noisy prediction inside it."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (H // 8 + 4, (W + 2 * t) // 8 + 4, 3), dtype=np.uint8)
    import cv2

    base = cv2.resize(small, (small.shape[1] * 8, small.shape[0] * 8), interpolation=cv2.INTER_CUBIC)
    base = np.clip(base.astype(np.int16) + rng.integers(-10, 11, base.shape, dtype=np.int16), 0, 255).astype(np.uint8)
    gt = np.stack([base[:H, 2 * i : 2 * i + W] for i in range(t)])
    pred = np.empty_like(gt)
    for i in range(t):  # frame by frame: the generator must not dominate the memory measurement
        noise = rng.integers(-20, 21, gt.shape[1:], dtype=np.int16)
        pred[i] = np.clip(gt[i].astype(np.int16) + noise, 0, 255).astype(np.uint8)
    yy, xx = np.ogrid[0:H, 0:W]
    hole = np.stack([((yy - 200 - i) / 80.0) ** 2 + ((xx - 380 - 3 * i) / 120.0) ** 2 < 1 for i in range(t)])
    return VideoSample("bench", gt, pred, hole)




def timed(fn, repeat: int = 1) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench_ssim_vs_release(comp: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> None:
    """SSIM from exact window sums (around the hole; whole frames) vs scikit-image on float64 frames, as the
    release's scikit-image 0.17.2 computes: time per frame, ratio, largest relative difference."""
    from skimage.metrics import structural_similarity

    def as64(a: np.ndarray) -> np.ndarray:
        return (a.astype(np.float32) / np.float32(255)).astype(np.float64)

    frames = min(len(gt), 8)
    t_ref, ref = timed(lambda: np.array([structural_similarity(as64(gt[i]), as64(comp[i]), win_size=7, data_range=2,
                                                               channel_axis=-1) for i in range(frames)]))
    t_hole, near = timed(lambda: ssim_frames(comp[:frames], gt[:frames], "release", hole[:frames]), repeat=2)
    t_whole, whole = timed(lambda: ssim_frames(comp[:frames], gt[:frames], "release"), repeat=2)
    rel = float(np.max(np.abs(near - ref) / ref))
    print(f"SSIM on {frames} frames, ms/frame: scikit-image float64 {1000 * t_ref / frames:.1f}, ours around the "
          f"hole {1000 * t_hole / frames:.1f} ({t_ref / t_hole:.1f}x), whole frames {1000 * t_whole / frames:.1f} "
          f"({t_ref / t_whole:.1f}x); largest relative difference {rel:.1e} (tolerance 1e-13); around the hole == "
          f"whole frames: {near.tolist() == whole.tolist()}")
    if not rel <= 1e-13 or near.tolist() != whole.tolist():
        raise SystemExit("SSIM values differ from scikit-image's float64 result, or around the hole from whole frames")


def bench_pixel(video: VideoSample, loop_pairs: int) -> None:
    comp, gt, hole = video.composite, video.gt, video.hole
    n = video.num_frames
    print(f"pixel metrics on CPU, {W}x{H}, {n} frames")
    for name, fn in (("psnr", lambda: psnr_frames(comp, gt)), ("ssim", lambda: ssim_frames(comp, gt)),
                     ("pcons", lambda: pcons_psnr_mask_pairs(comp, hole))):
        s, _ = timed(fn, repeat=2)
        print(f"  {name:<6} {n / s:8.1f} frames/s")
    s, _ = timed(lambda: (psnr_frames(comp, gt), ssim_frames(comp, gt), pcons_psnr_mask_pairs(comp, hole)))
    print(f"  all 3  {n / s:8.1f} frames/s")
    bench_ssim_vs_release(comp, gt, hole)
    sub, sub_hole = comp[: loop_pairs + 1], hole[: loop_pairs + 1]
    t_vec, vec = timed(lambda: pcons_psnr_mask_pairs(sub, sub_hole), repeat=3)
    t_loop, ref = timed(lambda: pcons_release_loop(sub, sub_hole))
    same = np.array_equal(np.asarray(vec), np.asarray(ref))
    diff = float(np.nanmax(np.abs(np.asarray(vec) - np.asarray(ref))))
    print(f"PCons on {loop_pairs} pairs: direct loop {1000 * t_loop / loop_pairs:.1f} ms/pair, "
          f"vectorised {1000 * t_vec / loop_pairs:.2f} ms/pair -> speed-up {t_loop / t_vec:.0f}x (goal >= 50x); "
          f"identical values: {same} (max |diff| {diff:.1e})")
    if not same:
        raise SystemExit("PCons values differ from the direct loop")


def bench_networks(video: VideoSample, device: str) -> None:
    try:
        import torch

        from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
        from devil_dataset.core.networks.inception import FIDInception, random_inception_state
        from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state
        from devil_dataset.eval import metrics as M  # the metric classes and the Frechet kernels
    except ImportError as exc:
        print(f"network metrics: not installed ({exc}); skipped")
        return
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    opts = EvalOptions(device=device, batch_size=8)
    n = video.num_frames
    print(f"network metrics on {device} with random weights, {W}x{H}, {n} frames (torch threads "
          f"{torch.get_num_threads()})")
    i3d = load_i3d(device, random_i3d_state())
    cases = [
        ("lpips", lambda: M.LPIPSMetric(opts, network=LPIPSNetwork(device, random_alexnet_state()))),
        ("fid", lambda: M.FIDMetric(opts, network=FIDInception(device, random_inception_state()))),
        ("pvcs+vfid", lambda: _I3DPair(opts, i3d)),
        ("warp_dis", lambda: M.WarpErrorMetric(EvalOptions(device=device, flow="dis"))),
    ]
    try:
        from devil_dataset.core.networks.raft import RAFTFlow, random_raft_state

        raft = RAFTFlow(device, random_raft_state())
        cases.append(("warp_raft", lambda: _RaftWarp(opts, raft)))
    except ImportError:
        pass
    for name, make in cases:
        metric = make()
        metric.update(VideoSample("warm", video.gt[:2], video.pred[:2], video.hole[:2]))  # warm-up
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        metric.update(video)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # random features: singular covariances
            metric.compute()
        c = time.perf_counter() - t0
        print(f"  {name:<10} {n / s:8.2f} frames/s  (compute() once per slice: {c:.2f} s)")


class _I3DPair:
    """PVCS and VFID share one I3D pass over a video in the evaluator; time them together."""

    def __init__(self, opts, net):
        from devil_dataset.eval import metrics as M  # the metric classes and the Frechet kernels

        self.pvcs, self.vfid = M.PVCSMetric(opts, network=net), M.VFIDMetric(opts, network=net)

    def update(self, video):
        return {**self.pvcs.update(video), **self.vfid.update(video)}

    def compute(self):
        return {**self.pvcs.compute(), **self.vfid.compute()}


class _RaftWarp:
    def __init__(self, opts, raft):
        from devil_dataset.eval import metrics as M  # the metric classes and the Frechet kernels

        self.m = M.WarpErrorMetric(opts, flow_fn=lambda a, b: raft.flow_batch(a[None], b[None])[0])

    def update(self, video):
        return self.m.update(video)

    def compute(self):
        return self.m.compute()


def bench_memory(clips: int, frames: int = 90) -> None:
    """Peak RSS of the one-pass evaluator over synthetic 90-frame 832x480 clips (psnr + pcons; one clip at a time)."""
    import resource

    from devil_dataset.eval.metrics.registry import build_metrics
    from devil_dataset.eval.scoring.one_pass import evaluate

    def videos():
        for i in range(clips):
            v = make_video(frames, seed=i)
            yield VideoSample(f"clip{i}", v.gt, v.pred, v.hole)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    metrics, _ = build_metrics(["psnr", "pcons"], EvalOptions())
    t0 = time.perf_counter()
    evaluate(videos(), metrics, progress=False)
    s = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"memory: {clips} clips x {frames} frames at {W}x{H} (psnr+pcons, incl. generating them): peak RSS "
          f"{peak:.0f} MiB (before {before:.0f} MiB), {clips * frames / s:.1f} frames/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames and loop pairs")
    ap.add_argument("--device", default="cpu", help="device for the network metrics (cpu or cuda)")
    ap.add_argument("--no-networks", action="store_true", help="pixel metrics only")
    args = ap.parse_args()
    video = make_video(12 if args.quick else 30)
    bench_memory(2 if args.quick else 4)  # first, so that the peak RSS is the evaluator's
    bench_pixel(video, loop_pairs=2 if args.quick else 5)
    if not args.no_networks:
        bench_networks(make_video(12), args.device)


if __name__ == "__main__":
    main()

"""Network speed at 832x480 with random weights: LPIPS, FID Inception (vs pytorch-fid's own pass), I3D windows.

    python benchmarks/networks.py            # 8 frames per 2-D network, 2 I3D window pairs, + a 2048-d Frechet
    python benchmarks/networks.py --quick    # 4 frames, 1 window pair, no Frechet timing
    python benchmarks/networks.py --device cuda --batch 32 --video-frames 90

Figures are frames per second of one video's composite-vs-GT work:
- LPIPS: frame pairs per second (both frames through AlexNet);
- FID: frames per second of our feature pass, and the ratio to pytorch-fid's ``InceptionV3`` forward on the
  same frames with the same weights in the same run (features are asserted equal);
- I3D: PVCS windows per second (one GT + one composite 10-frame window, four layers compared, Mixed_5c means
  kept for VFID clips); a 90-frame clip needs 81 windows (stride 1), so fps = windows/s;
- VFID whole-video pass: frames per second of one T-frame clip through I3D (``--video-frames``).
Weights are random (no real weights offline); speed does not depend on their values.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state  # noqa: E402
from devil_dataset.core.networks.inception import FIDInception, random_inception_state  # noqa: E402
from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state  # noqa: E402
from devil_dataset.eval import metrics as M  # noqa: E402
from devil_dataset.eval.protocol import VideoSample  # noqa: E402

W, H = 832, 480  # SPEC section 7: evaluation size


def _run(fn) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call. CPU seconds (all threads) are robust to other
    processes sharing the machine; wall seconds are what a user waits on an idle machine with as many threads."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    w, c = time.perf_counter(), time.process_time()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - w, time.process_time() - c


def _timed(fn, reps: int = 1) -> tuple[float, float]:
    fn()  # warm-up (oneDNN primitive creation, allocations)
    runs = [_run(fn) for _ in range(reps)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _best_interleaved(fn_a, fn_b, reps: int) -> tuple[tuple[float, float], tuple[float, float]]:
    fn_a(), fn_b()  # warm-up both
    a, b = [], []
    for _ in range(reps):
        a.append(_run(fn_a))
        b.append(_run(fn_b))
    best = lambda rs: (min(r[0] for r in rs), min(r[1] for r in rs))  # noqa: E731
    return best(a), best(b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames/windows, skip the Frechet timing")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--video-frames", type=int, default=0, help="also time a whole-video VFID pass of this many frames")
    ap.add_argument("--batch", type=int, default=0,
                    help="frames per 2-D network batch and 4x the I3D window pairs (default 8 / 2, as EvalOptions)")
    args = ap.parse_args()
    n = args.batch or (4 if args.quick else 8)
    pairs = max(1, args.batch // 4) if args.batch else (1 if args.quick else 2)
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (max(n, pairs + 9), H, W, 3), dtype=np.uint8)
    comp = gt.copy()
    comp[:, 160:320, 300:500] = rng.integers(0, 256, (len(gt), 160, 200, 3), dtype=np.uint8)
    print(f"device {args.device}, {W}x{H}, torch {torch.__version__}, threads {torch.get_num_threads()}")

    # LPIPS
    lp = LPIPSNetwork(args.device, random_alexnet_state())
    dt, cpu = _timed(lambda: lp.distance(gt[:n], comp[:n]))
    print(f"LPIPS (AlexNet v0.1)      : {n / dt:8.2f} frame pairs/s   {cpu / n:7.2f} CPU-s per pair (batch {n})")

    # FID features: ours vs pytorch-fid's InceptionV3 forward with the same weights
    state = random_inception_state()
    ours = FIDInception(args.device, state)
    from pytorch_fid import inception as pfi

    orig = pfi.load_state_dict_from_url
    pfi.load_state_dict_from_url = lambda *a, **k: state
    try:
        ref = pfi.InceptionV3([3]).eval().to(args.device)
    finally:
        pfi.load_state_dict_from_url = orig

    def ref_pass() -> np.ndarray:
        with torch.no_grad():
            x = torch.from_numpy(gt[:n]).to(args.device).permute(0, 3, 1, 2).float() / 255.0
            return ref(x)[0].flatten(1).cpu().numpy()

    # interleaved repetitions, best of each: robust to other processes sharing the CPU
    (dt_ours, cpu_ours), (dt_ref, cpu_ref) = _best_interleaved(lambda: ours.features(gt[:n]), ref_pass,
                                                                reps=1 if args.quick else 2)
    np.testing.assert_allclose(ours.features(gt[:n]), ref_pass(), rtol=1e-4, atol=1e-5)
    print(f"FID Inception features    : {n / dt_ours:8.2f} frames/s        {cpu_ours / n:7.2f} CPU-s per frame; "
          f"pytorch-fid {n / dt_ref:.2f} frames/s, {cpu_ref / n:.2f} CPU-s per frame; ratio (CPU time) "
          f"{cpu_ref / cpu_ours:.2f}x, (wall) {dt_ref / dt_ours:.2f}x; features equal")

    # I3D windows (PVCS + VFID clips share one pass)
    net = load_i3d(args.device, random_i3d_state())
    video = VideoSample("bench", gt[: pairs + 9], comp[: pairs + 9], np.zeros(gt[: pairs + 9].shape[:3], bool))
    dt, cpu = _timed(lambda: M.I3DVideoPass(net, video, args.device, pairs))
    print(f"I3D PVCS windows          : {pairs / dt:8.3f} windows/s  {cpu / pairs:7.1f} CPU-s per window pair "
          f"(= per frame of a clip; {pairs} GT+composite pairs per batch)")
    if args.video_frames:
        clip = np.resize(gt, (args.video_frames, H, W, 3))
        v = VideoSample("long", clip, clip, np.zeros(clip.shape[:3], bool))
        p = M.I3DVideoPass.__new__(M.I3DVideoPass)
        p.net, p.device = net, torch.device(args.device)
        p.gt_u8 = torch.as_tensor(v.gt).to(p.device)
        dt, cpu = _timed(lambda: p._video_feature(p.gt_u8))
        print(f"I3D whole-video (VFID)    : {args.video_frames / dt:8.2f} frames/s  {cpu / args.video_frames:7.2f} "
              f"CPU-s per frame ({args.video_frames} frames)")

    if not args.quick:
        x = rng.normal(size=(4000, 2048))
        y = x[:, ::-1] * 1.1 + 0.1
        stats = (x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
        dt, cpu = _run(lambda: M.frechet_distance(*stats))
        print(f"Frechet distance 2048-d   : {dt:8.2f} s wall, {cpu:.1f} CPU-s (scipy.linalg.sqrtm, as the release)")


if __name__ == "__main__":
    main()

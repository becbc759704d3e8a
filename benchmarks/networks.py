"""Network speed at 832x480 with random weights: LPIPS, FID Inception (vs pytorch-fid's own pass), I3D windows.

    python benchmarks/networks.py            # 8 frames per 2-D network, 2 I3D window pairs, + a 2048-d Frechet
    python benchmarks/networks.py --quick    # 4 frames, 1 window pair, no Frechet timing
    python benchmarks/networks.py --device cuda

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

from devil_dataset.eval import metrics as M  # noqa: E402
from devil_dataset.eval.networks.i3d import load_i3d, random_i3d_state  # noqa: E402
from devil_dataset.eval.networks.inception import FIDInception, random_inception_state  # noqa: E402
from devil_dataset.eval.networks.lpips import LPIPSNetwork, random_alexnet_state  # noqa: E402
from devil_dataset.eval.protocol import VideoSample  # noqa: E402

W, H = 832, 480  # SPEC section 7: evaluation size


def _timed(fn, reps: int = 1) -> float:
    fn()  # warm-up (oneDNN primitive creation, allocations)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames/windows, skip the Frechet timing")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--video-frames", type=int, default=0, help="also time a whole-video VFID pass of this many frames")
    args = ap.parse_args()
    n = 4 if args.quick else 8
    pairs = 1 if args.quick else 2
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (max(n, pairs + 9), H, W, 3), dtype=np.uint8)
    comp = gt.copy()
    comp[:, 160:320, 300:500] = rng.integers(0, 256, (len(gt), 160, 200, 3), dtype=np.uint8)
    print(f"device {args.device}, {W}x{H}, torch {torch.__version__}, threads {torch.get_num_threads()}")

    # LPIPS
    lp = LPIPSNetwork(args.device, random_alexnet_state())
    dt = _timed(lambda: lp.distance(gt[:n], comp[:n]))
    print(f"LPIPS (AlexNet v0.1)      : {n / dt:8.2f} frame pairs/s   (batch {n})")

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

    dt_ours = _timed(lambda: ours.features(gt[:n]))
    dt_ref = _timed(ref_pass)
    np.testing.assert_allclose(ours.features(gt[:n]), ref_pass(), rtol=1e-4, atol=1e-5)
    print(f"FID Inception features    : {n / dt_ours:8.2f} frames/s        pytorch-fid {n / dt_ref:.2f} frames/s, "
          f"ratio {dt_ref / dt_ours:.2f}x (features equal)")

    # I3D windows (PVCS + VFID clips share one pass)
    net = load_i3d(args.device, random_i3d_state())
    video = VideoSample("bench", gt[: pairs + 9], comp[: pairs + 9], np.zeros(gt[: pairs + 9].shape[:3], bool))
    dt = _timed(lambda: M.I3DVideoPass(net, video, args.device, pairs))
    print(f"I3D PVCS windows          : {pairs / dt:8.3f} windows/s (= frames/s; {pairs} GT+composite pairs per batch, "
          f"{dt / pairs:.1f} s per window pair)")
    if args.video_frames:
        clip = np.resize(gt, (args.video_frames, H, W, 3))
        v = VideoSample("long", clip, clip, np.zeros(clip.shape[:3], bool))
        p = M.I3DVideoPass.__new__(M.I3DVideoPass)
        p.net, p.device = net, torch.device(args.device)
        p.gt_u8 = torch.as_tensor(v.gt)
        dt = _timed(lambda: p._video_feature(p.gt_u8))
        print(f"I3D whole-video (VFID)    : {args.video_frames / dt:8.2f} frames/s ({args.video_frames} frames)")

    if not args.quick:
        x = rng.normal(size=(4000, 2048))
        y = x[:, ::-1] * 1.1 + 0.1
        stats = (x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
        t = time.perf_counter()
        M.frechet_distance(*stats)
        print(f"Frechet distance 2048-d   : {time.perf_counter() - t:8.2f} s (scipy.linalg.sqrtm, as the release)")


if __name__ == "__main__":
    main()

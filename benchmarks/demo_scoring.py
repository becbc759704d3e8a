"""The demo's per-video speed-ups of issue 17, each against the code path it replaced, in one invocation.

On a generated 832x480 clip (smooth texture plus noise, a moving hole; ``--frames``, ``--hole`` sets the hole's
side as a fraction of the frame) it times, and checks equal:

- SSIM around the hole vs the whole frame (exact window sums: the same floats);
- PSNR over the hole's box vs the whole frame;
- the hole's backward warp near the hole vs the whole frame;
- the warp error's points per hole (occlusion evaluated near the hole) vs the whole-frame occlusion masks that the
  ground-truth preparation computed before;
- PNG writing with ``png_encode`` vs OpenCV at level 1 with the Up filter (the demo's previous writer).

    python benchmarks/demo_scoring.py                 # 45 frames, holes of 1/4 and 1/2 of the frame side
    python benchmarks/demo_scoring.py --quick
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devil_dataset.core.png_encode import encode_rgb_png  # noqa: E402
from devil_dataset.eval.kernels.pixel import psnr_frames, ssim_frames  # noqa: E402
from devil_dataset.eval.kernels.warp import (
    GroundTruthFlow,
    hole_points_for,
    hole_warps_for,
    occlusion_mask,
    warp_backward,
    warp_hole_backward,
)


def make_clip(frames: int, side: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(gt, composite, hole, flows): a textured clip, a square hole moving right, a noisy fill, small flows."""
    rng = np.random.default_rng(seed)
    h, w = 480, 832
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) % 256], -1)
    gt = np.clip(base[None] + rng.normal(0, 6, (frames, h, w, 3)), 0, 255).astype(np.uint8)
    hole = np.zeros((frames, h, w), bool)
    hh, hw = int(h * side), int(w * side)
    for t in range(frames):
        x0 = int((w - hw) * t / max(1, frames - 1))
        hole[t, (h - hh) // 2 : (h - hh) // 2 + hh, x0 : x0 + hw] = True
    fill = np.clip(gt.astype(int) + rng.integers(-20, 21, gt.shape), 0, 255).astype(np.uint8)
    comp = np.where(hole[..., None], fill, gt)
    flows = rng.normal(0, 2, (frames, h, w, 2)).astype(np.float32)
    return gt, comp, hole, flows


def whole_frame_points(hole: np.ndarray, flow: GroundTruthFlow) -> list:
    """The warp error's points as computed before: whole-frame occlusion masks (prepared per clip), then per hole."""
    occluded = [occlusion_mask(fw, bw) for fw, bw in zip(flow.fw, flow.bw)]
    warps = hole_warps_for(hole, flow)
    points = []
    for k, t in enumerate(range(1, len(hole))):
        valid = ((hole[t - 1].astype(np.float32) + warps[k]) > 0) & ~occluded[k]
        points.append(np.nonzero(valid) if valid.any() else None)
    return points


def _equal(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, tuple):
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b)


def compared_paths(gt: np.ndarray, comp: np.ndarray, hole: np.ndarray, flows: np.ndarray) -> list:
    """(what, new path, the path it replaced) per compared computation, on one clip."""
    gt_flow = GroundTruthFlow(list(flows[1:]), list(-flows[:-1] + np.float32(0.3)))
    return [
        ("SSIM per video", lambda: ssim_frames(comp, gt, changed=hole), lambda: ssim_frames(comp, gt)),
        ("PSNR per video", lambda: psnr_frames(comp, gt, hole), lambda: psnr_frames(comp, gt)),
        ("hole backward warps per video", lambda: [warp_hole_backward(m, f) for m, f in zip(hole, flows)],
         lambda: [warp_backward(m.astype(np.float32), f) for m, f in zip(hole, flows)]),
        ("warp-error points per video", lambda: hole_points_for(hole, gt_flow),
         lambda: whole_frame_points(hole, gt_flow)),
    ]


def timed(fn, repeat: int = 1):
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    return (time.perf_counter() - start) / repeat, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=45)
    ap.add_argument("--hole", type=float, nargs="+", default=[0.25, 0.5], help="hole side / frame side")
    ap.add_argument("--quick", action="store_true", help="10 frames, one hole size")
    args = ap.parse_args()
    frames, sides = (10, [0.25]) if args.quick else (args.frames, args.hole)
    print(f"{'what':34s} {'hole':>5s} {'before s':>9s} {'after s':>8s} {'ratio':>6s}  same")
    for side in sides:
        gt, comp, hole, flows = make_clip(frames, side)
        for name, after, before in compared_paths(gt, comp, hole, flows):
            t_before, v_before = timed(before)
            t_after, v_after = timed(after)
            same = all(_equal(a, b) for a, b in zip(v_after, v_before)) if isinstance(v_after, list) \
                else v_after.tolist() == v_before.tolist()
            print(f"{name:34s} {side:5.2f} {t_before:9.3f} {t_after:8.3f} {t_before / t_after:6.2f}  {same}")
    import cv2

    params = [cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_UP]
    t_before, old = timed(lambda: [cv2.imencode(".png", np.ascontiguousarray(f[..., ::-1]), params)[1] for f in comp])
    t_after, new = timed(lambda: [encode_rgb_png(f) for f in comp])
    same = all(np.array_equal(cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)[..., ::-1], f)
               for b, f in zip(new, comp))
    size = sum(len(b) for b in new) / max(1, sum(len(b) for b in old))
    print(f"{'PNG writing per video':34s} {'':5s} {t_before:9.3f} {t_after:8.3f} {t_before / t_after:6.2f}  {same}"
          f"  (size after/before {size:.2f})")


if __name__ == "__main__":
    main()

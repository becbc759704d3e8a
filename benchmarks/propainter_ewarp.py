"""What "E_warp" comes to under the definitions in use (``docs/propainter-protocol.md``): the same generated
videos scored several ways, side by side.

    python benchmarks/propainter_ewarp.py            # 4 videos of 12 frames at 432x240, OpenCV DIS flow

Columns (each the mean over videos of the mean over consecutive pairs):

* ``lai, flow on GT``: the protocol's ``ewarp`` (Lai et al.: every non-occluded pixel, per-channel mean, [0, 1]
  scale), flow on the ground truth;
* ``lai, flow on output``: the same, flow computed on the composite itself;
* ``DEVIL warp_error_mask``: DEVIL's variant (only pixels whose flow starts or ends in the hole);
* the protocol's value printed as papers do: x10^3, and on the [0, 255] scale.

A good method (small noise in the hole) and a poor one (a wrong, flickering fill) are scored.
"""
from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.flow import dis_flow  # noqa: E402
from devil_dataset.eval.kernels.composite import composite  # noqa: E402
from devil_dataset.eval.kernels.warp import GroundTruthFlow, warp_error_at  # noqa: E402
from devil_dataset.eval.protocols.propainter.kernels import dilate_hole, ewarp_video  # noqa: E402

SIZE = (432, 240)


def video(seed: int, frames: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w, h = SIZE
    canvas = cv2.GaussianBlur(rng.integers(0, 256, (h + 16, w + 3 * frames + 16, 3), dtype=np.uint8), (0, 0), 3)
    gt = np.stack([canvas[8:8 + h, 8 + 3 * t:8 + 3 * t + w] for t in range(frames)])
    hole = np.zeros((frames, h, w), bool)
    for t in range(frames):
        m = np.zeros((h, w), np.uint8)
        cv2.ellipse(m, (150 + 4 * t, 120), (60, 40), 0, 0, 360, 1, -1)
        hole[t] = m > 0
    if method == "good":
        pred = np.clip(gt.astype(np.int16) + rng.integers(-6, 7, gt.shape), 0, 255).astype(np.uint8)
    else:
        pred = rng.integers(60, 200, (frames, 1, 1, 3), dtype=np.uint8) + np.zeros_like(gt)
    return gt, composite(pred, gt, dilate_hole(hole))


def flows(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fw = np.stack([dis_flow(frames[t], frames[t + 1]) for t in range(len(frames) - 1)])
    bw = np.stack([dis_flow(frames[t + 1], frames[t]) for t in range(len(frames) - 1)])
    return fw, bw


def main() -> None:
    print(f"{'method':<8} {'lai, flow on GT':>16} {'lai, flow on output':>20} {'DEVIL warp_error_mask':>22} "
          f"{'x10^3':>8} {'[0,255] scale':>14}")
    for method in ("good", "poor"):
        rows = []
        for seed in range(4):
            gt, comp = video(seed, 12, method)
            fw, bw = flows(gt)
            on_gt = ewarp_video(comp, fw, bw)
            on_out = ewarp_video(comp, *flows(comp))
            hole = (comp != gt).any(-1)
            devil = warp_error_at(comp, GroundTruthFlow(list(fw), list(bw)).for_hole(dilate_hole(hole)))
            rows.append((on_gt, on_out, devil))
        a, b, c = np.nanmean(np.array(rows), axis=0)
        print(f"{method:<8} {a:>16.6f} {b:>20.6f} {c:>22.6f} {a * 1e3:>8.3f} {a * 255 ** 2:>14.2f}")


if __name__ == "__main__":
    main()

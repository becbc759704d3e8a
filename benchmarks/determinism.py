"""Cost of the CPU-independent code paths: each pinned path vs the library's dispatched one.

OpenCV: ``cv2.setUseOptimized(False)`` (:func:`devil_dataset.core.cv_determinism.pin_opencv`) vs ``True`` on the calls
whose results depend on the CPU's SIMD (DIS flow, SIFT, warpAffine, resize, remap, Telea inpainting) at the
benchmark's 832x480 size, and on the package's label and baseline paths. swscale: YUV -> RGB and RGB -> YUV with
``SWS_BITEXACT | SWS_ACCURATE_RND`` vs PyAV's default flags. x264: ``cpu-independent=1`` vs its own CPU
detection. The networks' pins are measured by ``benchmarks/networks.py --arithmetic``. One run each, in the same
process, same inputs; the ratio is pinned / dispatched time (> 1.20 would keep the fast path as the default-off
option ``DEVIL_FAST_SIMD=1``).

    python benchmarks/determinism.py           # 832x480 frames
    python benchmarks/determinism.py --quick   # 416x240 frames

Measured (AMD EPYC, 2 cores shared with other jobs, AVX2; table in docs/reliability.md): CPU-time ratios 0.98-1.18
for DIS, SIFT and the label and baseline paths, 1.35 for warpAffine, 2.1 for load_clip (swscale's exact YUV -> RGB);
wall times vary by up to +-30 % between runs on that machine.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.builder.camera_motion import camera_motion_score  # noqa: E402
from devil_dataset.builder.samples import render_scene, scene  # noqa: E402
from devil_dataset.builder.scene_motion import scene_motion_score  # noqa: E402
from devil_dataset.core.alignment import detect_features, warp_frame  # noqa: E402
from devil_dataset.core.cv_determinism import FAST_SIMD_ENV, SWS_EXACT_FLAGS, pin_opencv  # noqa: E402
from devil_dataset.core.flow import dis_flow  # noqa: E402
from devil_dataset.inpaint import get_inpainter  # noqa: E402

CPU_SECONDS: list[str] = []  # CPU seconds of each timed run, for the CPU-time ratio beside the wall-time one


def _timed(fn: Callable[[], object]) -> float:
    """Wall seconds of ``fn`` (the pinned SIFT runs on one thread: CPU time alone would hide that); its CPU seconds
    go to the next report line."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    CPU_SECONDS.append(f"{time.process_time() - cpu:.6f}")
    return time.perf_counter() - start


def report(name: str, fast: float, pinned: float) -> None:
    """One line: both wall times, the ratio pinned / dispatched and the same ratio of CPU times."""
    cpu_fast, cpu_pinned = (float(t) for t in CPU_SECONDS[-2:])
    print(f"{name:38s} dispatched {fast * 1000:8.1f} ms   pinned {pinned * 1000:8.1f} ms   ratio {pinned / fast:5.2f}"
          f"   (CPU time {cpu_pinned / max(cpu_fast, 1e-9):5.2f})")


def compare(name: str, fn: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds of ``fn`` with OpenCV dispatched (``DEVIL_FAST_SIMD=1``), then pinned; prints the ratio."""
    fn()  # warm-up (first-call allocations, lazy imports)
    os.environ[FAST_SIMD_ENV] = "1"
    pin_opencv()
    fast = _timed(fn)
    del os.environ[FAST_SIMD_ENV]
    pin_opencv()
    pinned = _timed(fn)
    report(name, fast, pinned)
    return fast, pinned


def compare_sws(name: str, fn: Callable[[int], object]) -> None:
    """Wall seconds of a swscale conversion with PyAV's default flags (bilinear), then exact flags."""
    fn(2)
    fast, exact = _timed(lambda: fn(2)), _timed(lambda: fn(2 | SWS_EXACT_FLAGS))
    report(name, fast, exact)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="416x240 frames instead of 832x480")
    args = ap.parse_args()
    size = (416, 240) if args.quick else (832, 480)
    frames = render_scene(scene("handheld_static"), size=size, num_frames=16, seed=3)
    water = render_scene(scene("jitter_water"), size=size, num_frames=14, seed=2)
    hole = np.zeros(frames.shape[:3], bool)
    hole[:, size[1] // 3: size[1] // 2, size[0] // 3: size[0] // 2] = True
    matrix = np.array([[1.01, 0.02, 1.3], [-0.02, 1.01, 0.7]])
    flow = dis_flow(frames[0], frames[1])
    gx, gy = np.meshgrid(np.arange(size[0], dtype=np.float32), np.arange(size[1], dtype=np.float32))
    print(f"frames {size[0]}x{size[1]}; wall time, one run each, {cv2.getNumThreads()} OpenCV threads")
    compare("DIS flow (8 pairs)", lambda: [dis_flow(frames[i], frames[i + 1]) for i in range(8)])
    compare("SIFT detect (8 frames)", lambda: [detect_features(frames[i], "sift") for i in range(8)])
    compare("warpAffine (16 frames)", lambda: [warp_frame(f, matrix) for f in frames])
    compare("resize area (16 frames)", lambda: [cv2.resize(f, (size[0] // 2, size[1] // 2),
                                                           interpolation=cv2.INTER_AREA) for f in frames])
    compare("resize linear float flow (16)", lambda: [cv2.resize(flow, (size[0] * 2, size[1] * 2)) for _ in frames])
    compare("remap float (16 frames)", lambda: [cv2.remap(f.astype(np.float32), gx + flow[..., 0], gy + flow[..., 1],
                                                          cv2.INTER_LINEAR) for f in frames])
    compare("camera_motion_score (16 frames)", lambda: camera_motion_score(frames, detector="sift", scoring_size=None))
    compare("scene_motion_score (14 frames)", lambda: scene_motion_score(water, detector="sift", scoring_size=None))
    for name in ("telea", "aligned-copy", "flow-propagation"):
        compare(f"baseline {name} (16 frames)", functools.partial(get_inpainter(name), frames, hole))
    import av

    decoded = [av.VideoFrame.from_ndarray(f, format="rgb24").reformat(format="yuv420p") for f in frames]
    compare_sws("swscale YUV -> RGB (16 frames)",
                lambda flags: [d.reformat(format="rgb24", interpolation=flags) for d in decoded])
    from devil_dataset.core.video_io import load_clip, write_video

    path = write_video(Path(tempfile.mkdtemp()) / "clip.mp4", frames, fps=25)
    os.environ[FAST_SIMD_ENV] = "1"
    fast = _timed(lambda: load_clip(path))
    del os.environ[FAST_SIMD_ENV]
    exact = _timed(lambda: load_clip(path))
    report("load_clip (decode + RGB, 16 frames)", fast, exact)
    rgb = [av.VideoFrame.from_ndarray(f, format="rgb24") for f in frames]
    compare_sws("swscale RGB -> YUV (16 frames)",
                lambda flags: [d.reformat(format="yuv420p", interpolation=flags) for d in rgb])
    os.environ[FAST_SIMD_ENV] = "1"
    fast = _timed(lambda: write_video(path, frames, fps=25))
    del os.environ[FAST_SIMD_ENV]
    exact = _timed(lambda: write_video(path, frames, fps=25))
    report("write_video (RGB -> YUV + x264, 16)", fast, exact)
    from devil_dataset.core import video_io

    def encode_x264(params: str) -> float:  # x264 alone: its own CPU detection vs cpu-independent=1
        saved, video_io.X264_CPU_INDEPENDENT = video_io.X264_CPU_INDEPENDENT, params
        try:
            return _timed(lambda: write_video(path, frames, fps=25))
        finally:
            video_io.X264_CPU_INDEPENDENT = saved

    encode_x264("")  # warm-up
    cpu_dependent = encode_x264("")
    independent = encode_x264(video_io.X264_CPU_INDEPENDENT)
    report("x264 cpu-independent=1 (16 frames)", cpu_dependent, independent)


if __name__ == "__main__":
    main()

"""Where the motion labellers spend their CPU time: the profile behind docs/labelling.md, in one command.

Scores the generated videos of ``benchmarks/diagnose.py`` (a textured scene filmed by a camera panning at its own
speed, still for every fifth video, flowing "water" in every other one) with
:func:`devil_dataset.builder.motion_scores.motion_scores` (release mode, DIS flow, the default detector), cold, and
counts the thread CPU time and the calls of each leaf the labellers spend their time in:

    SIFT (or ORB/SURF)   core/alignment.detect_features        every distinct frame once
    matcher              core/alignment.match_features         every unordered pair once
    RANSAC + refinement  core/alignment.similarity_from_matches every ordered pair once
    DIS flow             the flow function of scene_motion      every consecutive pair of a segment
    warps                core/alignment.warp_frame / warp_valid_mask (as the two scorers call them)

"everything else" is the process's CPU time minus those (AffineScore sums, the flow check, reductions, hashing,
Python). Each leaf runs on one thread at a time (OpenCV on one thread, one BLAS thread), so its thread CPU time is its
cost at any ``--threads``. The wrappers only time calls; the scores printed are those of an unwrapped run.

    python benchmarks/labellers_profile.py                          # 4 videos x 30 frames at 854x480, 2 threads
    python benchmarks/labellers_profile.py --threads 1
    python benchmarks/labellers_profile.py --videos 2 --frames 12 --size 320x180    # a quick look

Measured (``lscpu``: ``AMD EPYC`` (Zen 4, AVX-512 VNNI), 2 cores; docs/labelling.md, "Where the floor is"): 12.7 s
wall, 24.2 CPU s at ``--threads 2``: SIFT 14.2 s (91 x 156 ms), matcher 3.5 s (281 x 12.3 ms, int8 products), DIS
3.9 s, warps 1.5 s (an earlier matcher: 15.6 s wall, 29.2 CPU s, the matcher 8.0 s at 28 ms a pair); the machine in a
slow phase: 15.3 s wall, 29.1 CPU s, SIFT 17.7 s (91 x 194 ms), RANSAC + refinement 0.5 s (416 x 1.2 ms). With the
compiled pass (core/cross_check_scan.py), quiet: 12.6 s wall, 24.3 CPU s, SIFT 15.0 s (91 x 165 ms), matcher 2.6 s
(281 x 9.1 ms: int8 products and the compiled pass).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


class LeafTimes:
    """Thread CPU seconds and calls per leaf, from wrappers put around module attributes (restored on exit)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._undo: list[tuple[Any, str, Any]] = []

    def timed(self, leaf: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                with self._lock:
                    self.seconds[leaf] = self.seconds.get(leaf, 0.0) + spent
                    self.calls[leaf] = self.calls.get(leaf, 0) + 1
        return wrapper

    def wrap(self, module: Any, name: str, leaf: str) -> None:
        original = getattr(module, name)
        self._undo.append((module, name, original))
        setattr(module, name, self.timed(leaf, original))

    def __enter__(self) -> "LeafTimes":
        from devil_dataset.builder import camera_motion, clip_features, scene_motion

        self.wrap(clip_features, "detect_features", "detector")
        self.wrap(clip_features, "match_features", "matcher")
        self.wrap(clip_features, "similarity_from_matches", "ransac")
        for module in (scene_motion, camera_motion):
            self.wrap(module, "warp_valid_mask", "warps")
        self.wrap(scene_motion, "warp_frame", "warps")
        resolve_flow = scene_motion.resolve_flow
        self._undo.append((scene_motion, "resolve_flow", resolve_flow))
        scene_motion.resolve_flow = lambda *a, **k: self.timed("flow", resolve_flow(*a, **k))
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, original in reversed(self._undo):
            setattr(module, name, original)


def main() -> int:
    from diagnose import write_video

    from devil_dataset.builder.motion_scores import motion_scores
    from devil_dataset.core.alignment import resolve_detector
    from devil_dataset.core.video_io import load_clip

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, default=4)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--size", default="854x480", help="WxH of the videos (scored at 854x480)")
    parser.add_argument("--threads", type=int, default=2, help="the labellers' threads (default %(default)s)")
    parser.add_argument("--detector", choices=("sift", "orb", "surf"), help="default: the labellers' default")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    detector = resolve_detector(args.detector)
    with tempfile.TemporaryDirectory(prefix="labellers-profile-") as tmp:
        clips = []
        for i in range(args.videos):
            write_video(Path(tmp), i, args.frames, size)  # type: ignore[arg-type]
            clips.append(load_clip(Path(tmp) / "GT/JPEGImages" / f"video{i:03d}"))
    motion_scores(clips[0][:10], detector=detector, threads=args.threads)  # first-call set-up outside the clock
    with LeafTimes() as leaves:
        wall, cpu = time.perf_counter(), time.process_time()
        timed_scores = [motion_scores(c, detector=detector, threads=args.threads) for c in clips]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    scores = [motion_scores(c, detector=detector, threads=args.threads) for c in clips]
    for i, ((cam, scene), (cam_t, scene_t)) in enumerate(zip(scores, timed_scores)):
        same = (repr(cam.score), repr(scene.score)) == (repr(cam_t.score), repr(scene_t.score))
        print(f"video {i}: camera {cam.score!r}, scene {scene.score!r}{'' if same else '  (timed run differs!)'}")
        if not same:
            return 1
    print(f"\n{args.videos} videos x {args.frames} frames at {args.size}, {detector}, threads={args.threads}: "
          f"{wall:.1f} s wall, {cpu:.1f} CPU s ({cpu / wall:.2f} cores)\n")
    names = {"detector": f"{detector.upper()} `detectAndCompute` (OpenCV pinned, one thread)",
             "matcher": "cross-checked matching (`match_features`)",
             "ransac": "RANSAC + refinement (`similarity_from_matches`)",
             "flow": "DIS flow", "warps": "warps (`warp_frame`, `warp_valid_mask`)"}
    print("| where | CPU s | calls | per call |\n|---|---:|---:|---:|")
    for leaf, label in names.items():
        seconds, calls = leaves.seconds.get(leaf, 0.0), leaves.calls.get(leaf, 0)
        per_call = f"{1000 * seconds / calls:.1f} ms" if calls else ""
        print(f"| {label} | {seconds:.2f} | {calls} | {per_call} |")
    rest = cpu - sum(leaves.seconds.values())
    print(f"| everything else | {rest:.2f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The motion labellers of this checkout against those of a git revision (``--base``), side by side in one run.

Both run on the same generated videos (``benchmarks/diagnose.py``'s DAVIS-shaped synthetic set: a textured scene
filmed by a camera panning at its own speed, still for every fifth video, with flowing "water" in every other one),
each in its own subprocess importing its own package: the revision's code from ``git archive`` of ``--base``
(default ``HEAD``: what the working tree's changes do) into a temp folder, this code from the checkout. Each side
scores every video's camera motion and scene motion (release mode, DIS flow, SIFT unless ``--detector``) cold, the
videos spread over ``--jobs`` worker processes as ``devil diagnose --jobs`` would; the frames are decoded before the
clock starts. The script prints both wall times and CPU times (all threads of the scoring processes), their ratios,
the scores, and exits 1 when any score differs in any bit (NaN equals NaN). On a shared machine wall time follows
the load: ``--rounds N`` alternates the two sides N times and keeps each side's best. Imports and a first call on a
10-frame noise clip run before the clock on both sides (torch's import and the int8 check, numba's compilation or
cache load, once per process).

    python benchmarks/labellers_vs_previous.py                          # 4 videos x 30 frames at 854x480, --jobs 1
    python benchmarks/labellers_vs_previous.py --base bab91ab --rounds 3 --jobs 2
    python benchmarks/labellers_vs_previous.py --videos 2 --frames 12 --size 320x180    # a quick look

``--record`` appends the run (figures, CPU, revision) to ``benchmarks/results/labellers_vs_previous.jsonl``.

The present figures (against ``bab91ab``, the labellers before the shared one-pass design): docs/labelling.md,
"Measured".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# The last commit: a run measures what the working tree's changes do (older revisions run too: see _RUNNER).
BASE_COMMIT = "HEAD"

# Run in a subprocess with the package of one side first on sys.path: score the decoded videos, print JSON.
_RUNNER = r"""
import json, sys, time
from concurrent.futures import ProcessPoolExecutor
import numpy as np

def score(path):
    return score_frames(np.load(path))

def score_frames(frames):
    from devil_dataset.builder.camera_motion import camera_motion_score
    from devil_dataset.builder.scene_motion import scene_motion_score
    t, c = time.perf_counter(), time.process_time()
    try:
        from devil_dataset.builder.motion_scores import motion_scores
    except ImportError:  # the previous code: two scorers, the feature memo between them
        pair = (camera_motion_score(frames, detector=DETECTOR), scene_motion_score(frames, detector=DETECTOR))
    else:
        camera, scene = motion_scores(frames, detector=DETECTOR)
        pair = (camera.score, scene.score)
    return [repr(float(v)) for v in pair], time.perf_counter() - t, time.process_time() - c

def warm_up(detector):
    # Imports and first-call set-up outside the clock (OpenCV's first SIFT; this code's torch import and int8
    # check): a 10-frame 160x120 clip of noise (the fewest frames camera motion takes), scored and thrown away.
    global DETECTOR
    DETECTOR = detector
    import devil_dataset.builder.scene_motion
    score_frames(np.random.default_rng(0).integers(0, 256, (10, 120, 160, 3), dtype=np.uint8))

def worker_pid(pause):
    import os
    time.sleep(pause)
    return os.getpid()

if __name__ == "__main__":
    DETECTOR, jobs, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if jobs == 1:
        warm_up(DETECTOR)  # not before forking workers: thread pools that ran in a parent hang in a forked child
    t0 = time.perf_counter()
    if jobs > 1:
        with ProcessPoolExecutor(jobs, initializer=warm_up, initargs=(DETECTOR,)) as pool:
            seen, deadline = set(), time.monotonic() + 120  # every worker started and warmed up outside the clock
            while len(seen) < jobs and time.monotonic() < deadline:
                seen.update(pool.map(worker_pid, [0.2] * jobs))
            t0 = time.perf_counter()
            out = list(pool.map(score, paths))
    else:
        out = [score(p) for p in paths]
    print(json.dumps({"wall_s": time.perf_counter() - t0, "scores": [o[0] for o in out],
                      "video_s": [o[1] for o in out], "cpu_s": sum(o[2] for o in out)}))
"""


def export_commit(commit: str, into: Path) -> Path:
    """``git archive`` of ``commit``'s ``devil_dataset`` package into ``into``; returns the folder to import from."""
    archive = into / "prev.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", commit, "devil_dataset"], check=True, stdout=f)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "prev", filter="data")
    return into / "prev"


def run_side(package_root: Path, detector: str, jobs: int, paths: list[Path], runner: Path) -> dict:
    """Score ``paths`` with the package under ``package_root`` in a fresh subprocess; its JSON result."""
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    out = subprocess.run([sys.executable, str(runner), detector, str(jobs), *map(str, paths)], env=env,
                         cwd=package_root, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the {package_root} side failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    import numpy as np
    from diagnose import write_video
    from results_log import record

    from devil_dataset.core.video_io import load_clip

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, default=4)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--size", default="854x480", help="WxH of the videos (scored at 854x480)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--detector", default="sift", choices=("sift", "orb"))
    parser.add_argument("--base", default=BASE_COMMIT, help="the git revision to compare with (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=1, help="alternate the two sides this many times")
    parser.add_argument("--record", action="store_true",
                        help="append this run to benchmarks/results/labellers_vs_previous.jsonl")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="labellers-") as tmp:
        work = Path(tmp)
        prev = export_commit(args.base, work)
        runner = work / "runner.py"
        runner.write_text(_RUNNER, encoding="utf-8")
        paths = []
        for i in range(args.videos):
            write_video(work / "davis", i, args.frames, size)  # type: ignore[arg-type]
            path = work / f"video{i:03d}.npy"
            np.save(path, load_clip(work / "davis/GT/JPEGImages" / f"video{i:03d}"))
            paths.append(path)
        results: dict[str, list[dict]] = {"previous": [], "this": []}
        for _ in range(args.rounds):
            results["previous"].append(run_side(prev, args.detector, args.jobs, paths, runner))
            results["this"].append(run_side(ROOT, args.detector, args.jobs, paths, runner))
    before = min(r["wall_s"] for r in results["previous"])
    after = min(r["wall_s"] for r in results["this"])
    cpu_before = min(r["cpu_s"] for r in results["previous"])
    cpu_after = min(r["cpu_s"] for r in results["this"])
    print(f"{args.videos} videos x {args.frames} frames at {args.size}, {args.detector}, --jobs {args.jobs}, "
          f"load average before the run {load:.1f}:")
    for name, side, wall, cpu in (("previous (" + args.base + ")", "previous", before, cpu_before),
                                  ("this checkout", "this", after, cpu_after)):
        print(f"  {name:20s} {wall:7.2f} s wall {cpu:7.2f} CPU s   wall per video: "
              + " ".join(f"{s:.2f}" for s in min(results[side], key=lambda r: r["wall_s"])["video_s"]))
    print(f"  ratio: {before / after:.2f}x faster in wall time, {cpu_before / cpu_after:.2f}x less CPU time")
    differ = [(i, p, t) for i, (p, t) in enumerate(zip(results["previous"][0]["scores"], results["this"][0]["scores"]))
              if p != t]
    for r in results["previous"] + results["this"]:
        differ += [(i, "run", s) for i, s in enumerate(r["scores"]) if s != results["previous"][0]["scores"][i]]
    print("  scores (camera, scene):", json.dumps(results["this"][0]["scores"]))
    if args.record:
        record("labellers_vs_previous", {
            "base": args.base, "videos": args.videos, "frames": args.frames, "size": args.size, "jobs": args.jobs,
            "detector": args.detector, "rounds": args.rounds, "base_wall_s": round(before, 2),
            "this_wall_s": round(after, 2), "base_cpu_s": round(cpu_before, 2), "this_cpu_s": round(cpu_after, 2),
            "wall_ratio": round(before / after, 3), "cpu_ratio": round(cpu_before / cpu_after, 3),
            "scores_identical": not differ}, sys.argv[1:])
    if differ:
        print("  SCORES DIFFER:", differ)
        return 1
    print("  scores identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())

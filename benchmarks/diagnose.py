"""Speed of the `devil diagnose` attribute pass on a DAVIS-sized set: cold (nothing cached) and warm (every score
from the attribute cache), with the cost of each attribute.

A synthetic DAVIS layout is generated first (``GT/JPEGImages/<video>/00000.jpg ...`` and ``MASKS/<video>/...``):
``--videos`` videos of ``--frames`` frames at ``--size`` (default 50 x 70 at 854x480, DAVIS 2017 val's shape), each
a smoothed random texture filmed by a camera panning at its own speed (0 for a fifth of the videos), with a band of
"water" whose texture flows on its own in half of them, and a moving, growing ellipse as the hole. Then the attribute
pass runs twice with ``--jobs`` local worker processes on a fresh cache folder.

    python benchmarks/diagnose.py                      # 50 x 70 frames at 854x480, 2 jobs
    python benchmarks/diagnose.py --videos 4 --frames 30 --size 427x240 --jobs 1     # a quick look

Reported: wall time cold and warm, CPU seconds (this process and its workers), and the per-attribute seconds summed
over the tasks (wall time inside the workers; ``read_and_hash`` = decoding the JPEG/PNG files and hashing them).

Measured (2026-11, ``Intel(R) Xeon(R) Processor``, 2 cores shared with other jobs at load average 9-24, so CPU seconds
are the numbers to read; 4 videos, ``--jobs 1``): SIFT at 854x480 46 CPU s per video cold (scene motion 80%, camera
motion 18%, masks 0.1%), ORB 22; at 427x240 about 9-11; warm 0.15-0.2 CPU s per video. Scaled to 50 videos on 2
cores: ~19 min cold with SIFT at 854x480, ~4 min at 427x240, ~5 s warm. With the faster labellers (``AMD EPYC``, load
7-9, 4 videos x 70 frames, ``--jobs 1``, both versions one after the other): 22.4 -> 18.8 CPU s per video, 166 -> 139 s
wall; ~8 min for 50 videos on 2 idle cores (estimated). Details: ``docs/diagnose.md`` ("Cost").
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.engines import get_engine  # noqa: E402
from devil_dataset.core.progress import cpu_seconds  # noqa: E402
from devil_dataset.diagnosis import AttributeOptions, compute_attributes, davis_pairs  # noqa: E402


def _texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    small = (rng.random((h // 8 + 1, w // 8 + 1, 3)) * 255).astype(np.uint8)
    big = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    detail = (rng.random((h, w, 3)) * 60).astype(np.uint8)
    return cv2.add(big, detail)


def write_video(root: Path, index: int, frames: int, size: tuple[int, int]) -> None:
    """One synthetic video and its masks in the DAVIS layout under ``root``."""
    w, h = size
    rng = np.random.default_rng(index)
    speed = 0.0 if index % 5 == 0 else float(rng.uniform(1.0, 6.0))
    canvas = _texture(rng, h, w + int(speed * frames) + 2)
    water = _texture(rng, h // 3, w * 2) if index % 2 else None
    name = f"video{index:03d}"
    (root / "GT/JPEGImages" / name).mkdir(parents=True, exist_ok=True)
    (root / "MASKS" / name).mkdir(parents=True, exist_ok=True)
    radius0 = int(rng.uniform(0.04, 0.2) * h)
    for t in range(frames):
        x = int(speed * t)
        frame = canvas[:, x: x + w].copy()
        if water is not None:
            flow = (7 * t) % w
            frame[h - h // 3:] = water[:, flow: flow + w]
        mask = np.zeros((h, w), np.uint8)
        centre = (int(w * 0.3 + t * rng.uniform(0, 4)), int(h * 0.5))
        cv2.ellipse(mask, centre, (radius0 + t // 2, radius0), 0, 0, 360, 255, -1)
        cv2.imwrite(str(root / f"GT/JPEGImages/{name}/{t:05d}.jpg"), frame[..., ::-1],
                    [cv2.IMWRITE_JPEG_QUALITY, 95])
        cv2.imwrite(str(root / f"MASKS/{name}/{t:05d}.png"), mask)


def run_pass(root: Path, size: tuple[int, int], jobs: int, cache: Path, detector: str | None) -> dict:
    """One attribute pass; its wall and CPU seconds and the per-attribute seconds."""
    pairs = davis_pairs(root / "GT", root / "MASKS", size)
    engine = get_engine("local", jobs=jobs)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    options = AttributeOptions(scoring_size=size, detector=detector)
    _, stats = compute_attributes(pairs, options=options, cache_dir=cache, engine=engine, progress=False)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    engine.close()
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "computed": sum(stats.computed.values()),
            "cached": sum(stats.cached.values()), "attribute_s": {k: round(v, 2) for k, v in stats.seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, default=50)
    parser.add_argument("--frames", type=int, default=70)
    parser.add_argument("--size", default="854x480", help="WxH of the videos (and the scoring size)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--detector", choices=("surf", "sift", "orb"), help="default: the labellers' default")
    parser.add_argument("--work", type=Path, help="folder for the videos and the cache (default: a new temp folder)")
    args = parser.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    work = args.work or Path(tempfile.mkdtemp(prefix="diagnose-bench-"))
    t0 = time.perf_counter()
    for i in range(args.videos):
        write_video(work / "davis", i, args.frames, size)  # type: ignore[arg-type]
    print(f"generated {args.videos} videos x {args.frames} frames at {args.size} in "
          f"{time.perf_counter() - t0:.1f} s ({work})", flush=True)
    cache = work / f"cache-{args.detector or 'default'}"
    shutil.rmtree(cache, ignore_errors=True)  # cold means cold
    cold = run_pass(work / "davis", size, args.jobs, cache, args.detector)  # type: ignore[arg-type]
    print("cold:", json.dumps(cold), flush=True)
    warm = run_pass(work / "davis", size, args.jobs, cache, args.detector)  # type: ignore[arg-type]
    print("warm:", json.dumps(warm), flush=True)


if __name__ == "__main__":
    main()

"""Where the demo's time goes, and what the optimised functions save: per-stage seconds, then old vs new CPU.

1. **Stages**: the wall and CPU seconds of each stage of a finished ``devil demo`` (its ``OUT/timings.json``:
   build, plan, inpaint+evaluate with the workers' CPU per method and for scoring, results, report), or of a demo
   run here with ``--run OUT``.
2. **Old vs new**: the optimised functions run on the demo's own clips, each (clip, hole) unit once
   with the version of a git revision (``--rev``, default ``HEAD``: extracted with ``git archive`` into a temporary
   package) and once with the working tree's, interleaved so that both see the same machine load. For each
   function: CPU seconds (``time.process_time``: the machine may be shared, so wall time is noisy), the ratio
   new/old, and whether every output is byte-identical (the project pins exact numbers: a difference is reported
   and the exit status is 1).

Functions compared: the baselines ``aligned-copy`` (matching on one BLAS thread, colours and known map warped in
one 4-channel ``warpAffine``, missing pixels gathered by index), ``flow-propagation`` (push-pull fill blended only
in the box of the invalid pixels, bilinear sampling through flat indices and a zero border, chains followed
through the holes only) and ``telea`` (``cv2.inpaint`` on the hole's grown bounding box, also the temporal
baselines' fallback); and the build's **labelling** of a clip (camera-motion then scene-motion score of a curated
clip, as the build's ``_score_clip`` runs them: in one pass, ``builder.motion_scores``, the camera
scorer's features handed to the scene scorer), on the curated clips the demo's build left in
``OUT/dataset/.devil-build/curated/clips``.

    python benchmarks/demo_stages.py --demo demo-out                # stages + 4 units per function
    python benchmarks/demo_stages.py --demo demo-out --units 39     # every unit of the demo
    python benchmarks/demo_stages.py --run /tmp/demo-new --units 0  # run the demo, print its stages only
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from devil_dataset.builder.build import SAMPLE_SCORING_SIZE
from devil_dataset.core.video_io import load_clip
from devil_dataset.data import iter_slice
from devil_dataset.demo import DEMO_SLICES, run_demo

# Working-tree module and function of each compared baseline (the same path inside the old revision's package).
FUNCTIONS: dict[str, tuple[str, str]] = {
    "aligned-copy": ("inpaint.aligned_copy", "aligned_copy"),
    "flow-propagation": ("inpaint.flow_propagation", "flow_propagation"),
    "telea": ("inpaint.spatial", "telea"),
}
OLD_PACKAGE = "devil_dataset_at_rev"  # the revision's package is imported under this name
REPO = Path(__file__).resolve().parents[1]


def print_stages(timings_path: Path) -> None:
    """The stage table of a demo's ``timings.json``."""
    stages = json.loads(timings_path.read_text(encoding="utf-8"))
    print(f"stages of {timings_path}")
    print(f"  {'stage':<18} {'wall s':>8} {'CPU s':>8}  note")
    for s in stages:
        print(f"  {s['stage']:<18} {s['wall_s']:8.1f} {s['cpu_s']:8.1f}  {s.get('note', '')}")
    print(f"  {'total':<18} {sum(s['wall_s'] for s in stages):8.1f} {sum(s['cpu_s'] for s in stages):8.1f}")


def old_package(rev: str, into: Path) -> str:
    """Extract ``devil_dataset`` at git revision ``rev`` into ``into/OLD_PACKAGE`` and put it on ``sys.path``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "devil_dataset"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "devil_dataset").rename(into / OLD_PACKAGE)
    sys.path.insert(0, str(into))
    return OLD_PACKAGE


def demo_units(dataset: Path, limit: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Up to ``limit`` distinct (clip, hole) units of the demo's slices: (key, frames, hole)."""
    units, seen = [], set()
    for slice_name in DEMO_SLICES:
        for row in iter_slice(dataset, slice_name, columns=["clip_id", "mask_id", "frames", "hole"]):
            key = f"{row['clip_id']}/{row['mask_id']}"
            if key not in seen and len(units) < limit:
                seen.add(key)
                units.append((key, row["frames"], row["hole"]))
    return units


def compare(units: list[tuple[str, np.ndarray, np.ndarray]], old: str) -> bool:
    """Old vs new CPU seconds and byte identity per function; True when every output is identical."""
    identical = True
    print(f"old (git revision, package {old}) vs new (working tree), {len(units)} units, CPU seconds")
    print(f"  {'function':<18} {'old CPU s':>10} {'new CPU s':>10} {'new/old':>8}  identical")
    for name, (module, function) in FUNCTIONS.items():
        fns = {v: getattr(importlib.import_module(f"{pkg}.{module}"), function)
               for v, pkg in (("old", old), ("new", "devil_dataset"))}
        cpu, different = {"old": 0.0, "new": 0.0}, []
        for key, frames, hole in units:
            outs = {}
            for version, fn in fns.items():
                start = time.process_time()
                outs[version] = fn(frames, hole)
                cpu[version] += time.process_time() - start
            if outs["old"].dtype != outs["new"].dtype or not np.array_equal(outs["old"], outs["new"]):
                different.append(key)
        identical &= report(name, cpu, different)
    return identical


def report(name: str, cpu: dict[str, float], different: list[str]) -> bool:
    """One line of the comparison; True when nothing differed."""
    ratio = cpu["new"] / cpu["old"] if cpu["old"] else float("nan")
    verdict = "yes" if not different else f"NO: {', '.join(different)}"
    print(f"  {name:<18} {cpu['old']:10.2f} {cpu['new']:10.2f} {ratio:8.3f}  {verdict}", flush=True)
    return not different


def compare_labelling(clips: list[Path], old: str) -> bool:
    """Old vs new camera- and scene-motion scores of curated clips (the sample's scoring size); True when equal."""
    cpu, different = {"old": 0.0, "new": 0.0}, []
    for path in clips:
        frames, scores = load_clip(path), {}
        for version, pkg in (("old", old), ("new", "devil_dataset")):
            start = time.process_time()
            try:  # one pass: the camera scorer's features handed to the scene scorer
                joint = importlib.import_module(f"{pkg}.builder.motion_scores").motion_scores
            except ImportError:
                camera = importlib.import_module(f"{pkg}.builder.camera_motion").camera_motion_score
                scene = importlib.import_module(f"{pkg}.builder.scene_motion").scene_motion_score
                scores[version] = (camera(frames, scoring_size=SAMPLE_SCORING_SIZE),
                                   scene(frames, scoring_size=SAMPLE_SCORING_SIZE))
            else:
                results = joint(frames, scoring_size=SAMPLE_SCORING_SIZE)
                scores[version] = (results[0].score, results[1].score)
            cpu[version] += time.process_time() - start
        if repr(scores["old"]) != repr(scores["new"]):
            different.append(path.stem)
    return report(f"labelling ({len(clips)} clips)", cpu, different)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--demo", type=Path, help="a finished demo's output folder (its timings.json and dataset/)")
    where.add_argument("--run", type=Path, help="run the demo into this folder first")
    ap.add_argument("--units", type=int, default=4, help="(clip, hole) units compared per function (0: none)")
    ap.add_argument("--rev", default="HEAD", help="git revision of the old versions (default HEAD)")
    args = ap.parse_args()
    out = args.demo or args.run
    if args.run is not None:
        run_demo(args.run, progress=False, echo=None)
    print_stages(out / "timings.json")
    if args.units <= 0:
        return 0
    with tempfile.TemporaryDirectory(prefix="devil-demo-stages-") as tmp:
        old = old_package(args.rev, Path(tmp))
        ok = compare(demo_units(out / "dataset", args.units), old)
        clips = sorted((out / "dataset" / ".devil-build" / "curated" / "clips").glob("*.mp4"))[: args.units]
        ok &= compare_labelling(clips, old) if clips else True
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

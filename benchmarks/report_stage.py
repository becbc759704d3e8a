"""The report stage of ``devil demo`` / ``devil benchmark`` alone, timed, on an existing demo output, for this checkout
and (``--base REV``) for another git revision in the same invocation, with every report file compared byte for byte.

    python benchmarks/report_stage.py --demo demo-out                  # this checkout only
    python benchmarks/report_stage.py --demo demo-out --base main      # this checkout against main (a git worktree
                                                                        #   of REV in a temporary folder)

Each code tree runs in its own interpreter (``PYTHONPATH`` = the tree): the demo's plan is made again from
``DEMO/dataset`` (not timed), the demo's results files are copied into a fresh output folder, the local engine's
workers are started (the demo's are already running when its report stage starts), then
:func:`~devil_dataset.pipeline.benchmark.write_benchmark_report` runs, timed as the demo times its stages
(:class:`~devil_dataset.core.progress.StageTimer`: wall, and CPU of the process and its workers), with its report
stamp written into the fresh folder (so the report is always written, and the stamp's hashing is timed as in the
demo). The SHA-256 of every file the report wrote is compared between the trees (not the stamp: its key holds
the paths of the inputs).

With ``--material DIR``, this checkout's report stage also gets the HTML report's clip material of the demo
(:mod:`devil_dataset.eval.report.clip_material`, what ``devil demo``'s inpaint+evaluate stage makes from the frames in
memory): made into ``DIR`` first when ``DIR`` is empty (decoding every unit's ground truth and predictions, not
timed), with the CPU seconds of making it (the work the inpaint+evaluate stage adds, decoding excluded); a tree
whose report stage takes no material (``--base``) decodes as before. Without it, this checkout decodes too.

Prints wall and CPU seconds of each tree (best of ``--repeat``), the ratio base / this, and whether every report
file is identical; ``--record`` appends them to ``benchmarks/results/report_stage.jsonl``. Exit status 1 when a
report file differs (or is missing on one side), 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from results_log import cpu_name, record  # benchmarks/: the CPU as lscpu names it, the measurement log

REPO = Path(__file__).resolve().parents[1]
WORK = Path(tempfile.gettempdir()) / "devil-report-stage"

# Run inside each code tree's interpreter: argv = demo folder, output folder, JSON file for the measurement.
DRIVER = r"""
import dataclasses, hashlib, importlib, inspect, json, os, shutil, sys, time
from pathlib import Path

from devil_dataset.core.engines import get_engine
from devil_dataset.core.progress import StageTimer
from devil_dataset.demo import CACHE_DIR, DATASET_DIR, DEFAULT_METHODS, DEMO_SLICES
bm = importlib.import_module("devil_dataset.pipeline.benchmark")  # the module (the package exports its function)

demo, out, record = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
material = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
doc = json.loads((demo / "timings.json").read_text()) if (demo / "timings.json").is_file() else []
methods = [m for m in DEFAULT_METHODS if (demo / bm.RESULTS_DIR / m).is_dir()]
slices = [s for s in DEMO_SLICES if all((demo / bm.RESULTS_DIR / m / f"{s}.json").is_file() for m in methods)]
engine = get_engine("local", jobs=min(2, os.cpu_count() or 1))
options = bm.EvalOptions(device="cpu", flow=bm.BENCHMARK_FLOW)
plan = bm.make_plan(demo / DATASET_DIR, {m: m for m in methods}, demo, slices=slices, metrics=None, engine=engine,
                    jobs=None, options=options, say=lambda _: None)
shutil.copytree(demo / bm.RESULTS_DIR, out / bm.RESULTS_DIR)
plan = dataclasses.replace(plan, out=out)
results = {(m, s): out / bm.RESULTS_DIR / m / f"{s}.json" for m in methods for s in slices}
extra, material_cpu = {}, None
if material is not None and "clip_material" in inspect.signature(bm.write_benchmark_report).parameters:
    from devil_dataset.eval.report.clip_material import ClipMaterial, prediction_folder_digest
    from devil_dataset.eval.scoring.results import dataset_digest
    from devil_dataset.core.release_format import read_frame_pngs
    from devil_dataset.pipeline.clip_task import clip_frames, ground_truth_identity
    key = dataset_digest(demo / DATASET_DIR)
    extra = {"clip_material": material, "dataset_key": key}
    if not any(material.glob("*.jpg")):  # made as the inpaint+evaluate stage makes it; only its own CPU counted
        made, material_cpu = ClipMaterial(material), 0.0
        for unit in plan.units.values():
            gt, hole = clip_frames(plan.dataset, unit.slices[0], unit.clip_id), unit.hole()
            c = time.process_time()
            made.make_unit(ground_truth_identity(key, unit.clip_id), gt, unit.fingerprint, hole)
            material_cpu += time.process_time() - c
            for m in methods:
                folder = plan.folders[(m, unit.slices[0])].path / unit.clip_id
                pred = read_frame_pngs(folder, "pred")
                c = time.process_time()
                made.make_prediction(ground_truth_identity(key, unit.clip_id), gt, prediction_folder_digest(folder),
                                     pred)
                material_cpu += time.process_time() - c
list(plan.engine.map_ordered(abs, [-1, -2, -3, -4]))  # the workers started, as they are in the demo's report stage
timings = []
with StageTimer("report", timings):
    report = bm.write_benchmark_report(plan, results, ci=None, stamp=out / CACHE_DIR / bm.REPORT_STAMP, say=None,
                                       **extra)
skip = (bm.RESULTS_DIR, CACHE_DIR)
files = {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
         for p in sorted(out.rglob("*")) if p.is_file() and p.relative_to(out).parts[0] not in skip}
record.write_text(json.dumps({"wall_s": timings[0].wall_s, "cpu_s": timings[0].cpu_s, "files": files,
                              "report_files": len(report.files), "material": bool(extra),
                              "material_cpu_s": material_cpu}))
"""


def measure(tree: Path, demo: Path, repeat: int, material: Path | None = None) -> dict:
    """The best (lowest wall) of ``repeat`` report stages of the code in ``tree`` on ``demo``, with its files (and,
    when this run made the clip ``material``, the CPU seconds of making it)."""
    best: dict | None = None
    made = None
    for _ in range(repeat):
        work = WORK  # the same folder for every tree: a report that names its folder is still compared equal
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            record = work / "record.json"
            env = {**os.environ, "PYTHONPATH": str(tree)}
            done = subprocess.run([sys.executable, "-c", DRIVER, str(demo), str(work / "out"), str(record),
                                   str(material or "")], cwd=work, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"report stage of {tree} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            run = json.loads(record.read_text())
        finally:
            shutil.rmtree(work, ignore_errors=True)
        made = run.get("material_cpu_s") if made is None else made
        if best is None or run["wall_s"] < best["wall_s"]:
            best = run
    assert best is not None
    best["material_cpu_s"] = made
    return best


def base_tree(rev: str) -> Path:
    """A detached git worktree of ``rev`` in a temporary folder (removed by :func:`drop_tree`)."""
    path = Path(tempfile.mkdtemp(prefix="devil-report-base-")) / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(path), rev], check=True)
    return path


def drop_tree(path: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False)
    shutil.rmtree(path.parent, ignore_errors=True)




def compare(head: dict, base: dict) -> list[str]:
    """The report files that differ between the two runs (or exist in one only)."""
    names = sorted(set(head["files"]) | set(base["files"]))
    return [n for n in names if head["files"].get(n) != base["files"].get(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo", type=Path, required=True, help="a finished `devil demo --out DEMO` folder")
    parser.add_argument("--base", help="a git revision to time and compare against (e.g. main)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tree; the fastest is kept (default 1)")
    parser.add_argument("--material", type=Path, help="this checkout's report uses the demo's clip material from "
                        "this folder (made there first when it is empty)")
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/results/")
    args = parser.parse_args()
    demo = args.demo.resolve()
    if not (demo / "results").is_dir() or not (demo / "dataset").is_dir():
        parser.error(f"{demo}: not a `devil demo` output (no results/ or dataset/)")
    print(f"report stage on {demo} ({cpu_name()}, {os.cpu_count()} CPUs)")
    material = None
    if args.material is not None:
        material = args.material.resolve()
        material.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    head = measure(REPO, demo, max(1, args.repeat), material)
    print(f"this checkout: {head['wall_s']:.2f} s wall, {head['cpu_s']:.2f} s CPU, {len(head['files'])} files"
          + (" (from clip material)" if head.get("material") else ""))
    if head.get("material_cpu_s") is not None:
        print(f"clip material made: {head['material_cpu_s']:.2f} s CPU (the inpaint+evaluate stage's added work)")
    figures = {"wall_s": round(head["wall_s"], 2), "cpu_s": round(head["cpu_s"], 2), "files": len(head["files"]),
               "material": bool(head.get("material")), "load_before": round(load, 2)}
    if head.get("material_cpu_s") is not None:
        figures["material_cpu_s"] = round(head["material_cpu_s"], 2)
    if args.base is None:
        if args.record:
            record("report_stage", figures, sys.argv[1:])
        return 0
    tree = base_tree(args.base)
    try:
        base = measure(tree, demo, max(1, args.repeat))
    finally:
        drop_tree(tree)
    print(f"base {args.base}: {base['wall_s']:.2f} s wall, {base['cpu_s']:.2f} s CPU, {len(base['files'])} files")
    print(f"ratio base / this: {base['wall_s'] / head['wall_s']:.2f}x wall, {base['cpu_s'] / head['cpu_s']:.2f}x CPU")
    differ = compare(head, base)
    if args.record:
        figures.update(base_wall_s=round(base["wall_s"], 2), base_cpu_s=round(base["cpu_s"], 2),
                       identical=not differ, load_after=round(os.getloadavg()[0], 2))
        record("report_stage", figures, sys.argv[1:])
    if differ:
        print(f"{len(differ)} report files differ: " + ", ".join(differ))
        return 1
    print(f"all {len(head['files'])} report files identical (SHA-256)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

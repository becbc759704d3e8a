"""An unchanged re-run of ``devil benchmark``: the README's "score your own method" command run cold, then
again with nothing changed (the report is kept: its inputs' content stamp matches), then again with the stamp
removed (the report written again: what every re-run cost before), each as a user runs it (``devil`` in a
subprocess), wall seconds per run and the report stage's seconds from ``OUT/timings.json``.

    python benchmarks/benchmark_rerun.py                        # devil demo --quick first (its 2 slices), then
                                                                #   the README command on its slices
    python benchmarks/benchmark_rerun.py --demo demo-out        # an existing demo's output (all its slices)

Prints the three runs and the ratios cold / re-run and report-rewritten / re-run. Exit status 1 when the unchanged
re-run rewrote the report (or took longer than the run that rewrote it).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEVIL = [sys.executable, "-c", "import sys; from devil_dataset.cli import main; sys.exit(main())"]
# The README command (README.md, "Score your own method"), the method file made absolute.
README_ARGS = ["benchmark", "--dataset", "demo-out/dataset", "--out", "my-bench", "--method", "mine", "--callable",
               f"{REPO}/docs/examples/temporal_median.py:inpaint", "--baseline-results", "demo-out/"]
# What `devil demo --quick` holds: its two slices and pixel metrics.
QUICK_ARGS = ["--slices", "fg_size_low", "fg_size_high", "--metrics", "psnr", "ssim", "warp_error", "pcons"]


def run(argv: list[str], cwd: Path) -> float:
    """Wall seconds of ``devil ARGV`` in ``cwd`` (its output kept for an error)."""
    start = time.perf_counter()
    done = subprocess.run(DEVIL + argv, cwd=cwd, capture_output=True, text=True, env=None)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"devil {' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall


def report_stage(out: Path) -> tuple[float, str]:
    """(wall seconds, note) of the report stage of the run that wrote ``out/timings.json`` last."""
    stages = json.loads((out / "timings.json").read_text(encoding="utf-8"))
    report = [s for s in stages if s["stage"] == "report"][-1]
    return float(report["wall_s"]), str(report.get("note", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo", type=Path, help="an existing `devil demo` output (default: run `devil demo "
                        "--quick` into a temporary folder)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="devil-rerun-"))
    try:
        extra: list[str] = []
        if args.demo is None:
            wall = run(["demo", "--out", "demo-out", "--quick", "--quiet"], work)
            print(f"devil demo --quick: {wall:.1f} s wall")
            extra = QUICK_ARGS
        else:
            (work / "demo-out").symlink_to(args.demo.resolve())
        argv = README_ARGS + extra + ["--quiet"]
        out = work / "my-bench"
        rows = []
        for label, prepare in (("cold", None), ("unchanged re-run", None),
                               ("re-run, report rewritten (stamp removed)", "drop")):
            if prepare == "drop":
                for stamp in out.glob(".devil-benchmark/report-stamp.json"):
                    stamp.unlink()
            wall = run(argv, work)
            rows.append((label, wall, *report_stage(out)))
        print(f"devil {' '.join(argv)}")
        print(f"  {'run':<42} {'wall s':>8} {'report s':>9}  note")
        for label, wall, rep, note in rows:
            print(f"  {label:<42} {wall:8.1f} {rep:9.1f}  {note}")
        cold, rerun, rewritten = (r[1] for r in rows)
        print(f"ratio cold / unchanged re-run: {cold / rerun:.1f}x; report rewritten / unchanged re-run: "
              f"{rewritten / rerun:.1f}x")
        kept = "kept" in rows[1][3]
        return 0 if kept and rerun < rewritten else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

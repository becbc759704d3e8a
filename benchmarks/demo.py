"""The README's main job, stage by stage: this checkout's `devil demo` against an earlier revision's, same machine.

Runs `devil demo --out DIR` twice in fresh folders and a fresh user cache, one after the other in this one
invocation: first the demo of a baseline git revision (checked out into a temporary worktree, run with that tree
first on PYTHONPATH, so the same virtualenv serves both), then this checkout's. Prints each stage's wall and CPU
seconds (the demo's own ``timings.json``), the whole command's wall time, and the ratios baseline / this. Checks that
both runs wrote the same Table 1 and findings (the demo's results must not change).

    python benchmarks/demo.py                      # baseline: the last commit (HEAD): what the working tree changes
    python benchmarks/demo.py --baseline-rev v0.1.0
    python benchmarks/demo.py --saved /tmp/demo_baseline.json   # compare with a saved run, run only this one

``--save FILE`` keeps this checkout's figures (e.g. to compare later without re-running the baseline);
``--record`` appends both runs' stage figures (CPU, revision) to ``benchmarks/results/demo.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The last commit: a run measures what the working tree's changes do to the demo.
DEFAULT_BASELINE_REV = "HEAD"
COMPARED_FILES = ("table1.md", "table1.tsv", "findings.json")


def run_demo(tree: Path, out: Path, cache: Path) -> dict:
    """Run ``devil demo --out out`` with ``tree`` first on the path; return wall time and the demo's timings."""
    env = dict(os.environ, PYTHONPATH=str(tree), DEVIL_CACHE_DIR=str(cache))  # weights: the user's, both runs
    cmd = [sys.executable, "-c", "import sys; from devil_dataset.cli import main; sys.exit(main())",
           "demo", "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"demo in {tree} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stages = {t["stage"]: t for t in json.loads((out / "timings.json").read_text())}
    files = {name: (out / name).read_text() for name in COMPARED_FILES if (out / name).is_file()}
    return {"tree": str(tree), "wall_s": wall, "stages": stages, "files": files}


def _combined(stages: dict, name: str) -> dict:
    """A stage's figures, or the sum of its parts for a fused stage ("inpaint+evaluate" = inpaint + evaluate)."""
    if name in stages:
        return stages[name]
    parts = [stages[p] for p in name.split("+") if p in stages]
    if len(parts) < 2:
        return {}
    return {"wall_s": sum(p["wall_s"] for p in parts), "cpu_s": sum(p["cpu_s"] for p in parts)}


def _stage_table(base: dict, new: dict) -> list[str]:
    names = list(dict.fromkeys(list(new["stages"]) + list(base["stages"])))
    names = [n for n in names if n in new["stages"] or not any(n in m.split("+") for m in new["stages"])]
    lines = [f"{'stage':16s} {'before wall':>12s} {'after wall':>11s} {'ratio':>6s}   "
             f"{'before CPU':>11s} {'after CPU':>10s} {'ratio':>6s}"]
    for n in names:
        b, a = _combined(base["stages"], n), new["stages"].get(n, {})
        bw, aw, bc, ac = b.get("wall_s", 0.0), a.get("wall_s", 0.0), b.get("cpu_s", 0.0), a.get("cpu_s", 0.0)
        rw = f"{bw / aw:6.2f}" if aw > 0 else "     -"
        rc = f"{bc / ac:6.2f}" if ac > 0 else "     -"
        lines.append(f"{n:16s} {bw:12.1f} {aw:11.1f} {rw}   {bc:11.1f} {ac:10.1f} {rc}")
    lines.append(f"{'command':16s} {base['wall_s']:12.1f} {new['wall_s']:11.1f} {base['wall_s'] / new['wall_s']:6.2f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-rev", default=DEFAULT_BASELINE_REV, help="git revision of the baseline demo")
    ap.add_argument("--saved", type=Path, help="compare with a saved run (JSON from --save) instead of running one")
    ap.add_argument("--save", type=Path, help="write this checkout's figures to this JSON file")
    ap.add_argument("--record", action="store_true", help="append this run to benchmarks/results/demo.jsonl")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="devil-bench-demo-") as tmp:
        tmp = Path(tmp)
        if args.saved:
            base = json.loads(args.saved.read_text())
        else:
            base_tree = tmp / "baseline-tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.baseline_rev],
                           check=True, capture_output=True)
            try:
                print(f"baseline {args.baseline_rev}: running its demo ...", flush=True)
                base = run_demo(base_tree, tmp / "baseline-out", tmp / "baseline-cache")
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                               capture_output=True)
        print("this checkout: running its demo ...", flush=True)
        new = run_demo(ROOT, tmp / "new-out", tmp / "new-cache")
    if args.save:
        args.save.write_text(json.dumps(new, indent=1) + "\n")
    print("\n".join(_stage_table(base, new)))
    same = [n for n in COMPARED_FILES if n in base["files"] and base["files"][n] == new["files"].get(n)]
    differ = [n for n in COMPARED_FILES if n in base["files"] and n not in same]
    print(f"identical results: {', '.join(same) or '-'}" + (f"; DIFFERENT: {', '.join(differ)}" if differ else ""))
    if args.record:
        from results_log import record  # a sibling script: benchmarks/ is sys.path[0] when this one runs

        def figures(run: dict) -> dict:
            return {"wall_s": round(run["wall_s"], 1),
                    "stages": {n: {k: round(v, 1) for k, v in t.items() if k in ("wall_s", "cpu_s")}
                               for n, t in run["stages"].items()}}

        record("demo", {"baseline": args.baseline_rev if not args.saved else str(args.saved),
                        "before": figures(base), "after": figures(new), "identical": same, "different": differ},
               sys.argv[1:])
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()

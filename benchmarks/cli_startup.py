"""Start-up cost of the ``devil`` command: CPU time and wall time of ``devil --help``, of ``devil <command> --help``
for every command, and of a mistyped ``--dataset`` path, for this checkout and, with ``--base REV``, for an earlier
revision measured in the same invocation (its ``devil_dataset`` unpacked by ``git archive`` into a temporary folder,
run with the same interpreter and libraries).

Each case runs as ``python -c "from devil_dataset.cli import main; main()" ARGS`` (what the ``devil`` console script
runs) in a fresh process, ``--repeat`` times; the CPU time is the child's user + system time
(``resource.getrusage(RUSAGE_CHILDREN)``), the wall time its elapsed time; the median of the repeats is reported, and
the ratio base / now of each.

    python benchmarks/cli_startup.py                        # this checkout only
    python benchmarks/cli_startup.py --base HEAD~1          # against an earlier revision
    python benchmarks/cli_startup.py --base main --repeat 5 --json /tmp/cli_startup.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from results_log import cpu_name  # benchmarks/: the CPU as lscpu names it

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from devil_dataset.cli import main; sys.exit(main())"
#: The mistyped ``--dataset`` path (``demo-out/dataset`` exists in the working folder; ``datset`` is the typo).
BAD_DATASET = ["evaluate", "--dataset", "demo-out/datset", "--config", "all", "--predictions", "."]


def commands() -> list[str]:
    """The ``devil`` commands of this checkout (read from its parser)."""
    sys.path.insert(0, str(ROOT))
    from devil_dataset.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def unpack_revision(rev: str, into: Path) -> Path:
    """``devil_dataset`` of git revision ``rev`` of this repository, unpacked under ``into``; returns the folder to
    put on ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "devil_dataset"],
                             capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)
    return into


def run_once(package_root: Path, args: list[str], cwd: Path) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit code) of one ``devil ARGS`` with the package found in ``package_root``."""
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


def measure(package_root: Path, cases: dict[str, list[str]], repeat: int, cwd: Path) -> dict[str, dict]:
    """Case -> median CPU and wall seconds over ``repeat`` runs, and the exit code."""
    out = {}
    for name, args in cases.items():
        runs = [run_once(package_root, args, cwd) for _ in range(repeat)]
        out[name] = {"cpu_s": statistics.median(r[0] for r in runs), "wall_s": statistics.median(r[1] for r in runs),
                     "exit": runs[-1][2]}
    return out




def table(now: dict[str, dict], base: dict[str, dict] | None) -> str:
    """The report: one line per case, CPU and wall seconds of each side and the ratios base / now."""
    head = f"{'case':<28} {'CPU s':>7} {'wall s':>7}"
    if base is not None:
        head += f" {'base CPU':>9} {'base wall':>9} {'CPU x':>6} {'wall x':>6}"
    lines = [head]
    for name, m in now.items():
        line = f"{name:<28} {m['cpu_s']:7.3f} {m['wall_s']:7.3f}"
        if base is not None:
            b = base[name]
            line += (f" {b['cpu_s']:9.3f} {b['wall_s']:9.3f} {b['cpu_s'] / m['cpu_s']:6.1f}"
                     f" {b['wall_s'] / m['wall_s']:6.1f}")
        lines.append(line + ("" if m["exit"] in (0, 2) else f"  (exit {m['exit']})"))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", metavar="REV", help="git revision to measure beside this checkout")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median reported; default 3)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    args = parser.parse_args()

    cases = {"--help": ["--help"], **{f"{c} --help": [c, "--help"] for c in commands()},
             "bad --dataset path": BAD_DATASET}
    with tempfile.TemporaryDirectory(prefix="devil-cli-startup-") as tmp:
        work = Path(tmp) / "work"
        (work / "demo-out" / "dataset").mkdir(parents=True)
        now = measure(ROOT, cases, args.repeat, work)
        base = None
        if args.base:
            base = measure(unpack_revision(args.base, Path(tmp) / "base"), cases, args.repeat, work)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; median of "
          f"{args.repeat} runs; base = {args.base or '-'}")
    print(table(now, base))
    if args.json is not None:
        doc = {"cpu": cpu_name(), "cores": os.cpu_count(), "repeat": args.repeat, "base": args.base, "now": now,
               "base_figures": base}
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

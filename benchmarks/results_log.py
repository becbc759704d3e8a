"""The benchmark scripts' measurement log: one JSON line per recorded run in ``benchmarks/results/<script>.jsonl``.

A script that takes ``--record`` appends what it measured, with the machine and the code it ran on, instead of the
figures being copied into the docs by hand. The docs state the present figure and name the script; earlier runs are
read back from the log.

Each line: ``{"date": ..., "cpu": ..., "cores": ..., "load": ..., "revision": ..., "argv": [...], "figures": {...}}``
(``cpu``: ``lscpu``'s model name where it is available, else :func:`platform.processor`; ``revision``: ``git
describe --always --dirty`` of the checkout, or ``None`` outside git).

    >>> import json, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> line = record("example", {"ratio": 3.09}, ["--rounds", "3"], folder=folder)
    >>> json.loads((folder / "example.jsonl").read_text())["figures"]
    {'ratio': 3.09}
    >>> line["argv"]
    ['--rounds', '3']
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"


def cpu_name() -> str:
    """The CPU's model name as ``lscpu`` prints it (``AMD EPYC``), else what :mod:`platform` knows."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def revision() -> str | None:
    """``git describe --always --dirty`` of this checkout, or ``None`` where git cannot say."""
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def record(script: str, figures: dict[str, Any], argv: list[str], *, folder: Path = RESULTS_DIR) -> dict[str, Any]:
    """Append one run of ``script`` (its ``figures`` and command-line ``argv``) to ``folder/<script>.jsonl``.

    The line is written with one ``write`` call in append mode, so an interrupted run leaves no partial line among
    the earlier ones. Returns the recorded entry.
    """
    entry = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "revision": revision(),
        "argv": list(argv),
        "figures": figures,
    }
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{script}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
    return entry

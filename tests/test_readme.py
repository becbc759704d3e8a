"""README.md's first screen: the "score your own method" command names a method file that exists and honours the
inpainter contract, and `devil benchmark` accepts the command as written (the full run is the slow test below)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli._main import build_parser
from devil_dataset.inpaint.external import load_callable

ROOT = Path(__file__).resolve().parents[1]


def readme_benchmark_command() -> list[str]:
    """The README's `devil benchmark` command (line continuations joined), without `.venv/bin/devil`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\.venv/bin/devil (benchmark [^\n]*\\\n[^\n]*)", text)
    assert match, "README: the 'score your own method' command is missing"
    return shlex.split(match.group(1).replace("\\\n", " "))


def test_readme_benchmark_command_parses_and_names_an_existing_method(tmp_path, monkeypatch):
    argv = readme_benchmark_command()
    (tmp_path / "demo-out" / "dataset").mkdir(parents=True)  # what the demo leaves (the parser checks the paths)
    monkeypatch.chdir(tmp_path)
    build_parser().parse_args(argv)  # the flags exist and take these values
    spec = argv[argv.index("--callable") + 1]
    assert (ROOT / spec.split(":")[0]).is_file()
    assert "--baseline-results" in argv


def test_readme_example_method_honours_the_contract():
    inpaint = load_callable(str(ROOT / "docs/examples/temporal_median.py") + ":inpaint")
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (6, 20, 24, 3), dtype=np.uint8)
    hole = np.zeros((6, 20, 24), bool)
    hole[:, 5:12, 6:14] = True  # a hole in every frame: the Telea fallback
    hole[2, 0:3, 0:3] = True  # known elsewhere: the temporal median
    poisoned = frames.copy()
    poisoned[hole] = 255  # hole pixels must not be read
    out = inpaint(poisoned, hole)
    assert out.dtype == np.uint8 and out.shape == frames.shape
    assert np.array_equal(out[~hole], frames[~hole])
    expected = np.round(np.median(frames[[0, 1, 3, 4, 5], 0:3, 0:3].astype(np.float32), axis=0)).astype(np.uint8)
    assert np.array_equal(out[2, 0:3, 0:3], expected)
    assert np.array_equal(inpaint(frames, hole), out)


@pytest.mark.slow
def test_readme_benchmark_command_runs_on_the_demo(tmp_path):
    """The command as written, on a quick demo's output (its two slices and metrics: --slices and --metrics added)."""
    devil = [sys.executable, "-c", "import sys; from devil_dataset.cli import main; sys.exit(main())"]
    demo = subprocess.run(devil + ["demo", "--out", "demo-out", "--quick", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=1200)
    assert demo.returncode == 0, demo.stderr[-2000:]
    argv = [a if a != "docs/examples/temporal_median.py:inpaint" else f"{ROOT}/docs/examples/temporal_median.py:inpaint"
            for a in readme_benchmark_command()]
    quick = ["--slices", "fg_size_low", "fg_size_high", "--metrics", "psnr", "ssim", "--quiet"]
    run = subprocess.run(devil + argv + quick, cwd=tmp_path, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "mine" in (tmp_path / "my-bench" / "table1.md").read_text()


def test_readme_paper_table_command_parses():
    """The README reports the DAVIS / YouTube-VOS table with a command, not a Python snippet."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^devil (report --paper-table [^\n]*)$", text, re.M)
    assert match, "README: the paper-table command is missing"
    args = build_parser().parse_args(shlex.split(match.group(1)))
    assert args.paper_table == ["mine:DAVIS=davis.json", "mine:YouTube-VOS=ytvos.json"]
    assert "propainter_table_markdown" not in text

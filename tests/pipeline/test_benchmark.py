"""Tests of devil_dataset/pipeline/benchmark.py: a user's callable benchmarked on every slice of a tiny built
dataset in one call gives the demo's rows for the baseline it wraps, is called once per distinct (clip, hole) unit,
is named correctly everywhere, and resumes without calling it again. The CLI: tests/cli/test_cli_benchmark.py."""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import pytest

METRICS = ("psnr", "ssim")

# A user's method in its own file: Telea (the demo's baseline) that records a digest of every hole it is given
# into the file named by $BENCH_CALLS (one line per call; worker processes append too).
USER_METHOD = '''
import hashlib, os
import numpy as np
from devil_dataset.inpaint import telea

def inpaint(frames, hole):
    with open(os.environ["BENCH_CALLS"], "a") as log:
        log.write(hashlib.sha256(np.packbits(hole).tobytes() + repr(hole.shape).encode()).hexdigest() + "\\n")
    return telea(frames, hole)
'''


def _finite(row: dict) -> dict:
    return {k: v for k, v in row.items() if not math.isnan(v)}


@pytest.fixture(scope="module")
def user_method(tmp_path_factory):
    root = tmp_path_factory.mktemp("user_method")
    (root / "mine.py").write_text(USER_METHOD)
    return root


@pytest.fixture(scope="module")
def bench_run(bench_tiny_dataset, user_method, tmp_path_factory):
    """`benchmark` with the user's callable (2 worker processes) on the ten slices, PSNR and SSIM."""
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import benchmark

    calls = user_method / "calls.txt"
    out = tmp_path_factory.mktemp("bench_out")
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCH_CALLS", str(calls))  # inherited by the spawned workers
        result = benchmark(bench_tiny_dataset, {"mine": MethodSpec(callable=f"{user_method / 'mine.py'}:inpaint")},
                           out, metrics=METRICS, jobs=2, progress=False, echo=lines.append)
    return result, lines, calls


def test_method_called_once_per_distinct_unit(bench_run, bench_tiny_dataset):
    from devil_dataset.pipeline.benchmark import TABLE1_SLICES
    from devil_dataset.pipeline.plan import plan_units

    result, lines, calls = bench_run
    units, order = plan_units(bench_tiny_dataset, TABLE1_SLICES)
    rows = sum(len(keys) for keys in order.values())
    assert len(units) < rows  # the slices share units: calling once per row would be more calls
    called = calls.read_text().split()
    expected = sorted(hashlib.sha256(np.packbits(u.hole()).tobytes() + repr(u.hole().shape).encode()).hexdigest()
                      for u in units.values())
    assert sorted(called) == expected  # each unit exactly once (the hole the method saw is the unit's hole)
    assert result.units == len(units)
    assert f"{len(units)} distinct (clip, hole) units in {rows} slice rows" in "\n".join(lines)


def test_same_rows_as_the_demo_for_the_wrapped_baseline(bench_run, bench_tiny_dataset, tmp_path):
    """Table 1 of the callable wrapping Telea equals the demo's Telea rows on every slice."""
    from devil_dataset.demo import run_demo
    from devil_dataset.pipeline.benchmark import TABLE1_SLICES

    result, _, _ = bench_run
    demo = run_demo(tmp_path / "demo", methods=["telea"], metrics=METRICS, dataset=bench_tiny_dataset, jobs=1,
                    progress=False, echo=None)
    assert result.slices == demo.slices == TABLE1_SLICES
    for s in TABLE1_SLICES:
        assert _finite(result.table[("mine", s)]) == _finite(demo.table[("telea", s)]) != {}
        mine = json.loads((result.out_dir / "results" / "mine" / f"{s}.json").read_text())
        telea = json.loads((demo.out_dir / "results" / "telea" / f"{s}.json").read_text())
        assert mine["videos"] == telea["videos"] and mine["summary"] == telea["summary"]
    assert (result.out_dir / "table1.md").read_text() == (demo.out_dir / "table1.md").read_text().replace(
        "| telea |", "| mine |")
    assert [f.held for f in result.findings] == [f.held for f in demo.findings]


def test_method_named_everywhere(bench_run):
    result, lines, _ = bench_run
    out = result.out_dir
    assert result.methods == ("mine",)
    for s in result.slices:
        doc = json.loads((out / "results" / "mine" / f"{s}.json").read_text())
        assert (doc["method"], doc["slice"]) == ("mine", s)
        manifest = json.loads((out / "predictions" / "mine" / s / ".devil-inpaint.json").read_text())
        assert manifest["run"]["method"] == "mine" and manifest["run"]["config"] == s
        assert manifest["run"]["callable"].endswith("mine.py:inpaint")
    table = (out / "table1.md").read_text()
    assert table.count("| mine |") == 10 and "| fg_size_high | fg_size_high |" not in table
    for name in ("table1.tsv", "findings.md", "timings.json", "benchmark.log", "report-html/index.html"):
        assert (out / name).is_file(), name
    log = (out / "benchmark.log").read_text()
    assert "fg_size_high: 2 videos x 1 methods inpainted and scored" in log
    assert lines[-1].startswith("summary: 1 method(s) (mine) x 10 slice(s)")


def test_resume_calls_nothing_and_another_spec_is_refused(bench_run, bench_tiny_dataset, user_method, monkeypatch):
    from devil_dataset.core.errors import DevilError
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import benchmark

    result, _, calls = bench_run
    monkeypatch.setenv("BENCH_CALLS", str(calls))
    before = calls.read_text()
    again = benchmark(bench_tiny_dataset, {"mine": MethodSpec(callable=f"{user_method / 'mine.py'}:inpaint")},
                      result.out_dir, metrics=METRICS, jobs=1, progress=False, echo=None)
    assert calls.read_text() == before
    assert {k: _finite(v) for k, v in again.table.items()} == {k: _finite(v) for k, v in result.table.items()}
    with pytest.raises(DevilError, match=r"predictions/mine/.*holds predictions of another run"):
        benchmark(bench_tiny_dataset, {"mine": MethodSpec(command="true {output_dir}")}, result.out_dir,
                  metrics=METRICS, jobs=1, progress=False, echo=None)


def test_an_unchanged_rerun_keeps_the_report_and_a_change_rewrites_it(bench_run, bench_tiny_dataset, user_method,
                                                                       monkeypatch):
    """A re-run whose results, options and package version did not change keeps the report (a content
    stamp written after the report); another --ci, or a report file edited, writes it again."""
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import CACHE_DIR, benchmark
    from devil_dataset.pipeline.report_stamp import REPORT_STAMP

    result, _, calls = bench_run
    monkeypatch.setenv("BENCH_CALLS", str(calls))
    out = result.out_dir
    spec = {"mine": MethodSpec(callable=f"{user_method / 'mine.py'}:inpaint")}
    benchmark(bench_tiny_dataset, spec, out, metrics=METRICS, jobs=1, progress=False, echo=None)  # stamps this run
    assert (out / CACHE_DIR / REPORT_STAMP).is_file()
    report = {p: p.stat().st_mtime_ns for p in [out / "table1.md", out / "report-html" / "index.html",
                                                 *out.glob("*.png")]}
    lines: list[str] = []
    again = benchmark(bench_tiny_dataset, spec, out, metrics=METRICS, jobs=1, progress=False, echo=lines.append)
    assert any(line.startswith("report: kept as written") for line in lines)
    assert {p: p.stat().st_mtime_ns for p in report} == report  # nothing rewritten
    assert again.table_markdown == result.table_markdown and again.report_files == result.report_files
    assert [f.verdict() for f in again.findings] == [f.verdict() for f in result.findings]
    assert [t.note for t in again.timings if t.stage == "report"] == ["inputs unchanged since the last report: kept"]
    lines.clear()
    se = benchmark(bench_tiny_dataset, spec, out, metrics=METRICS, jobs=1, progress=False, echo=lines.append, ci="se")
    assert not any(line.startswith("report: kept") for line in lines) and " ± " in se.table_markdown
    assert " ± " in (out / "table1.md").read_text()
    (out / "table1.md").write_text("edited")
    lines.clear()
    benchmark(bench_tiny_dataset, spec, out, metrics=METRICS, jobs=1, progress=False, echo=lines.append, ci="se")
    assert not any(line.startswith("report: kept") for line in lines)
    assert (out / "table1.md").read_text() != "edited" and " ± " in (out / "table1.md").read_text()


def test_bad_methods_are_refused(tmp_path):
    from devil_dataset.core.errors import DevilError, UnknownNameError
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import benchmark, resolve_methods

    with pytest.raises(UnknownNameError, match="method x: unknown baseline 'teleaa'; did you mean 'telea'\\? valid: "
                       "telea, "):
        resolve_methods({"x": "teleaa"})
    with pytest.raises(DevilError, match="method name '../up'"):
        resolve_methods({"../up": "telea"})
    with pytest.raises(DevilError, match="exactly one of baseline, command, callable"):
        MethodSpec(baseline="telea", command="x {output_dir}")
    with pytest.raises(DevilError, match="no method to benchmark"):
        benchmark(tmp_path, {}, tmp_path / "out", echo=None)
    with pytest.raises(DevilError, match="method local: its inpainter cannot be sent to worker processes"):
        benchmark(tmp_path, {"local": lambda frames, hole: frames}, tmp_path / "out", jobs=2, echo=None)


def test_package_entry_point_is_the_benchmark():
    """`devil_dataset.benchmark(...)` runs the benchmark whether or not the submodule was imported first."""
    code = ("import devil_dataset{first}; from devil_dataset.pipeline.benchmark import benchmark; "
            "print(devil_dataset.benchmark is benchmark)")
    for first in ("", ", devil_dataset.demo"):
        out = subprocess.run([sys.executable, "-c", code.format(first=first)], capture_output=True, text=True,
                             check=True).stdout
        assert out.split() == ["True"]

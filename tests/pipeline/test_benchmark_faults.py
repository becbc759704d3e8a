"""Tests of devil_dataset/pipeline: what a benchmark does when things go wrong.

Ctrl-C stops within seconds, starts no new clip (in the workers either) and keeps every finished unit for the
resume (item 5); stored work is keyed on what the method is, so editing a callable's source redoes its units, and
``rerun`` forces it (item 6); a method that raises is reported with its clip id while the other methods finish
(item 7); a dataset that does not exist is refused before anything is written, and the method's callable is in the
results' provenance (item 8)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import pytest

CLI = "import sys; from devil_dataset.cli import main; sys.exit(main(sys.argv[1:]))"

# A user's method in its own file: logs "<unit digest> <start time>" for each call into $BENCH_CALLS (the digest
# of the frames and the hole it got identifies the unit); with $BENCH_SLOW each process's calls after its first
# are one C call of minutes, which sees Ctrl-C only when it returns (an interrupted run must not wait for it).
# VERSION is edited by the identity test.
USER_METHOD = '''
import hashlib, os, time
import numpy as np

VERSION = 1
CALLS = 0

def inpaint(frames, hole):
    global CALLS
    CALLS += 1
    digest = hashlib.sha256(frames.tobytes() + np.packbits(hole).tobytes()).hexdigest()[:16]
    with open(os.environ["BENCH_CALLS"], "a") as log:
        log.write(f"{digest} {time.time():.3f}\\n")
    if os.environ.get("BENCH_SLOW") and CALLS > 1:
        sum(range(10 ** 11))
    return frames.copy()

def broken(frames, hole):
    raise ValueError("boom")
'''

# Ctrl-C: the benchmark must exit within this many seconds (measured: 5.5 s on the project's 2-core machine with
# both workers in a C call that ignores Ctrl-C: the workers get INTERRUPT_GRACE_S = 5 s, then are killed).
STOP_WITHIN_S = 12.0


def _calls(path: Path) -> list[tuple[str, float]]:
    if not path.is_file():
        return []
    return [(d, float(t)) for d, t in (line.split() for line in path.read_text().splitlines() if line.strip())]


def _clip_folders(out: Path) -> set[str]:
    """The prediction clip folders under ``out`` (``predictions/<method>/<slice>/<clip>``; temporaries excepted)."""
    return {str(p.relative_to(out)) for p in out.glob("predictions/*/*/*") if p.is_dir() and not p.name.startswith(".")}


@pytest.fixture
def user_method(tmp_path, monkeypatch):
    (tmp_path / "mine.py").write_text(USER_METHOD)
    monkeypatch.setenv("BENCH_CALLS", str(tmp_path / "calls.txt"))
    return tmp_path / "mine.py"


def _unit_digests(dataset: Path, slices) -> dict[str, str]:
    """Unit key -> the digest the user's method logs for it (frames with the hole blanked, as the method sees)."""
    from devil_dataset.data import iter_slice

    out = {}
    for s in slices:
        for row in iter_slice(dataset, s, columns=["clip_id", "frames", "hole"]):
            from devil_dataset.inpaint.run import hole_fingerprint

            frames = row["frames"].copy()
            frames[row["hole"]] = 0
            digest = hashlib.sha256(frames.tobytes() + np.packbits(row["hole"]).tobytes()).hexdigest()[:16]
            out[f"{row['clip_id']}-{hole_fingerprint(row['hole'])}"] = digest
    return out


def test_ctrl_c_stops_fast_starts_nothing_new_and_resume_keeps_finished_units(bench_tiny_dataset, user_method,
                                                                                tmp_path):
    """A real `devil benchmark` with two workers, Ctrl-C (SIGINT to its process group, as a terminal sends it)
    while each worker is in the middle of a long C call and more clips are queued."""
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.metrics.registry import scoring_identity
    from devil_dataset.eval.scoring.results import ValuesCache, dataset_digest
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import BENCHMARK_FLOW, CACHE_DIR, TABLE1_SLICES, make_plan
    from devil_dataset.pipeline.inpaint_and_score import inpaint_and_score

    out, calls = tmp_path / "out", tmp_path / "calls.txt"
    values = out / CACHE_DIR / "values" / "mine"
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "benchmark", "--dataset", str(bench_tiny_dataset), "--out", str(out), "--method",
         "mine", "--callable", f"{user_method}:inpaint", "--metrics", "psnr", "--jobs", "2", "--quiet"],
        env={**os.environ, "BENCH_SLOW": "1"}, start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while len(list(values.glob("*.json"))) < 2 or len(_calls(calls)) < 4:  # 2 units done, 2 calls sleeping
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the benchmark did not reach its slow calls"
            time.sleep(0.1)
        finished, folders = {p.stem for p in values.glob("*.json")}, _clip_folders(out)
        sent = time.time()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.time() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert took < STOP_WITHIN_S, f"exit {took:.1f} s after Ctrl-C"
    assert all(t < sent for _, t in _calls(calls)), "a call started after Ctrl-C"
    assert _clip_folders(out) == folders  # no new prediction folder after Ctrl-C
    assert len(finished) >= 2 and len(_calls(calls)) < 10

    # resume: every unit finished before Ctrl-C is kept (recorded from the worker's entry), only the others run
    digests = _unit_digests(bench_tiny_dataset, TABLE1_SLICES)
    calls.write_text("")
    options = EvalOptions(flow=BENCHMARK_FLOW)
    plan = make_plan(bench_tiny_dataset, {"mine": MethodSpec(callable=f"{user_method}:inpaint")}, out, slices=None,
                     metrics=["psnr"], engine="local", jobs=1, options=options, say=lambda line: None)
    cache = ValuesCache(out / CACHE_DIR / "values", dataset_digest(bench_tiny_dataset), plan.pixel_metrics,
                        scoring_identity(plan.pixel_metrics, options))
    run = inpaint_and_score(plan, cache=cache, progress=False)
    redone = sorted(d for d, _ in _calls(calls))
    kept = [k for k in plan.units if k in finished]
    assert len(kept) == len(finished) and sorted(digests[k] for k in plan.units if k not in finished) == redone
    assert len(run.values) == len(plan.units) and not run.failures
    for key in kept:  # recorded in the manifest of the unit's first slice folder
        unit = plan.units[key]
        assert plan.folders[("mine", unit.slices[0])].holds(unit.clip_id, unit.fingerprint, unit.num_frames)


def _bench(dataset, methods, out, **kw):
    from devil_dataset.pipeline.benchmark import benchmark

    return benchmark(dataset, methods, out, slices=["fg_size_low"], metrics=["psnr"], jobs=1, progress=False,
                     **kw)


def test_changed_code_redoes_the_units_and_rerun_forces_it(bench_tiny_dataset, user_method, tmp_path):
    from devil_dataset.inpaint.method_spec import MethodSpec

    calls, out = tmp_path / "calls.txt", tmp_path / "out"
    spec = {"mine": MethodSpec(callable=f"{user_method}:inpaint")}
    first = _bench(bench_tiny_dataset, spec, out, echo=None)
    assert len(_calls(calls)) == 2
    doc = json.loads((out / "results" / "mine" / "fg_size_low.json").read_text())
    method = doc["provenance"]["method"]
    assert method["callable"] == f"{user_method}:inpaint" and method["kind"] == "callable"
    assert method["source"] == {"mine.py": hashlib.sha256(user_method.read_bytes()).hexdigest()}
    manifest = json.loads((out / "predictions" / "mine" / "fg_size_low" / ".devil-inpaint.json").read_text())
    assert set(manifest["identities"].values()) == {method["identity"]}

    user_method.write_text(USER_METHOD.replace("VERSION = 1", "VERSION = 2"))  # same spec, changed code
    lines: list[str] = []
    again = _bench(bench_tiny_dataset, spec, out, echo=lines.append)
    assert len(_calls(calls)) == 4
    assert "  mine: 2 unit(s) redone: the method's code changed since they were made (its identity differs)" in lines
    new = json.loads((out / "results" / "mine" / "fg_size_low.json").read_text())["provenance"]["method"]
    assert new["identity"] != method["identity"]
    assert again.table == first.table  # the same predictions (the edit changed no pixel)

    lines.clear()
    _bench(bench_tiny_dataset, spec, out, echo=lines.append, rerun=["mine"])
    assert len(_calls(calls)) == 6 and "  mine: 2 unit(s) redone: --rerun" in lines


def test_a_failing_method_is_reported_and_the_others_finish(bench_tiny_dataset, user_method, tmp_path, capsys):
    from devil_dataset.cli import main
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import MethodsFailedError

    out = tmp_path / "out"
    with pytest.raises(MethodsFailedError) as raised:
        _bench(bench_tiny_dataset, {"bad": MethodSpec(callable=f"{user_method}:broken"),
                                    "mine": MethodSpec(callable=f"{user_method}:inpaint")}, out, echo=None)
    text = str(raised.value)
    assert text.startswith("clip ") and "the method raised ValueError: boom (at mine.py:" in text
    assert "method bad failed on 2 of 2 (clip, hole) units" in text and "Reported: mine" in text
    assert raised.value.result.methods == ("mine",) and raised.value.result.failures["bad"][0] in text
    assert (out / "results" / "mine" / "fg_size_low.json").is_file() and not (out / "results" / "bad").exists()
    assert "| mine |" in (out / "table1.md").read_text()

    # the CLI: exit 2 with `devil: error: clip <id>: ...`, no traceback; a method failing alone too
    argv = ["benchmark", "--dataset", str(bench_tiny_dataset), "--out", str(tmp_path / "cli"), "--slices",
            "fg_size_low", "--metrics", "psnr", "--jobs", "1", "--quiet", "--method", "bad", "--callable",
            f"{user_method}:broken"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("devil: error: clip ") and "ValueError: boom" in err and "Traceback" not in err
    assert "No method finished" in err


def test_a_missing_dataset_fails_fast_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import importlib

    from devil_dataset.cli import main

    pipeline_benchmark = importlib.import_module("devil_dataset.pipeline.benchmark")  # the module, not the function

    def planned(*args, **kwargs):
        raise AssertionError("the benchmark started on a dataset that does not exist")

    out = tmp_path / "bench"
    with monkeypatch.context() as patched:  # fast: refused while reading the arguments, before any work starts
        patched.setattr(pipeline_benchmark, "benchmark", planned)
        assert main(["benchmark", "--dataset", str(tmp_path / "nope"), "--out", str(out), "--method", "telea"]) == 2
    assert f"{tmp_path / 'nope'}: no such folder" in capsys.readouterr().err
    assert not out.exists()
    # a folder that is no dataset: found out while planning, and the output folder made for it removed again
    assert main(["benchmark", "--dataset", str(tmp_path), "--out", str(out), "--method", "telea", "--slices",
                 "fg_size_low", "--metrics", "psnr"]) == 2
    assert not out.exists()

"""benchmarks/results_log.py: a recorded run is one JSON line appended to ``<folder>/<script>.jsonl``."""
from __future__ import annotations

import json

from .conftest import load_benchmark

log = load_benchmark("results_log")


def test_each_run_appends_one_line_with_its_machine_and_code(tmp_path):
    first = log.record("labellers_vs_previous", {"wall_ratio": 3.09}, ["--rounds", "3"], folder=tmp_path)
    log.record("labellers_vs_previous", {"wall_ratio": 1.0}, [], folder=tmp_path)
    lines = (tmp_path / "labellers_vs_previous.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["figures"] for line in lines] == [{"wall_ratio": 3.09}, {"wall_ratio": 1.0}]
    assert json.loads(lines[0]) == first
    assert first["argv"] == ["--rounds", "3"] and first["cpu"] and first["cores"] >= 1
    assert first["date"].endswith("+00:00")
    assert first["revision"] is None or len(first["revision"]) >= 7  # git describe --always: at least a short hash
    assert not (tmp_path / "demo.jsonl").exists()


def test_a_new_folder_is_made(tmp_path):
    log.record("demo", {"wall_s": 316.0}, [], folder=tmp_path / "results")
    assert json.loads((tmp_path / "results" / "demo.jsonl").read_text())["figures"] == {"wall_s": 316.0}

"""Where a results file's inputs are: results store their dataset and predictions as
absolute paths and relative to the results file, so ``devil report --html`` works from any folder and after the
results and their inputs were moved together; missing inputs are refused before the report folder is made. And
``--predictions`` given a method's folder of slice folders says which folder to give."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pytest

from devil_dataset.eval.scoring.results import FROM_RESULTS, read_results, write_results


@pytest.fixture(scope="module")
def moved_bench(bench_tiny_dataset, tmp_path_factory):
    """`devil benchmark` run in ``a/`` with relative paths (``--dataset ds --out out``), then ``a/`` renamed."""
    from devil_dataset.cli import main

    root = tmp_path_factory.mktemp("located")
    shutil.copytree(bench_tiny_dataset, root / "a" / "ds")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root / "a")
        assert main(["benchmark", "--dataset", "ds", "--out", "out", "--method", "telea", "--slices", "fg_size_low",
                     "--metrics", "psnr", "--jobs", "1", "--quiet"]) == 0
    written = json.loads((root / "a" / "out" / "results" / "telea" / "fg_size_low.json").read_text())
    (root / "a").rename(root / "b")
    return root, written


def test_results_store_absolute_and_results_relative_inputs(moved_bench):
    root, written = moved_bench
    inputs = written["provenance"]["inputs"]
    assert inputs["dataset"] == str((root / "a" / "ds").resolve())
    assert inputs["predictions"] == str((root / "a" / "out" / "predictions" / "telea" / "fg_size_low").resolve())
    assert inputs[FROM_RESULTS] == {"dataset": "../../../ds", "predictions": "../../predictions/telea/fg_size_low"}
    doc = read_results(root / "b" / "out" / "results" / "telea" / "fg_size_low.json")  # moved: found again
    assert doc["provenance"]["inputs"]["dataset"] == str((root / "b" / "ds").resolve())


def test_html_report_from_another_folder_after_a_move(moved_bench, tmp_path, monkeypatch, capsys):
    from devil_dataset.cli import main

    root, _ = moved_bench
    monkeypatch.chdir(tmp_path)
    results = str(root / "b" / "out" / "results" / "telea" / "fg_size_low.json")
    assert main(["report", results, "--html", "html"]) == 0
    page = (tmp_path / "html" / "index.html").read_text()
    assert "masked input" in page and list((tmp_path / "html").rglob("*.mp4"))  # the clips were found and encoded

    # an older results file: its dataset relative to the folder it was made from, no from_results
    old = json.loads(Path(results).read_text())
    old["provenance"]["inputs"] = {**old["provenance"]["inputs"], "dataset": "b/ds"}
    del old["provenance"]["inputs"][FROM_RESULTS]
    (root / "b" / "out" / "old.json").write_text(json.dumps(old))
    assert read_results(root / "b" / "out" / "old.json")["provenance"]["inputs"]["dataset"] == str(root / "b" / "ds")

    # inputs gone: refused before anything is written, naming what is missing
    moved = root / "b" / "out" / "predictions"
    moved.rename(root / "b" / "out" / "elsewhere")
    try:
        capsys.readouterr()
        assert main(["report", results, "--html", "html2"]) == 2
        err = capsys.readouterr().err
        assert "the HTML report's clips (--clips-per-end 0: a report without them) need the inputs" in err
        assert f"telea / fg_size_low: predictions {root / 'a' / 'out' / 'predictions'}" in err
        assert not (tmp_path / "html2").exists()
    finally:
        (root / "b" / "out" / "elsewhere").rename(moved)


def test_write_results_locates_only_local_paths(tmp_path):
    doc = {"format": "devil-results", "format_version": 1, "summary": {},
           "provenance": {"inputs": {"mode": "dataset", "dataset": "org/devil", "predictions": str(tmp_path)}}}
    written = json.loads(write_results(tmp_path / "r" / "x.json", doc).read_text())["provenance"]["inputs"]
    assert written["dataset"] == "org/devil" and written[FROM_RESULTS] == {"predictions": ".."}
    assert doc["provenance"]["inputs"]["predictions"] == str(tmp_path)  # the caller's document is not changed


def test_predictions_given_a_folder_of_slice_folders_get_a_hint(moved_bench, capsys):
    from devil_dataset.cli import main

    root, _ = moved_bench
    method_folder = root / "b" / "out" / "predictions" / "telea"
    capsys.readouterr()
    assert main(["evaluate", "--dataset", str(root / "b" / "ds"), "--config", "fg_size_low", "--metrics", "psnr",
                 "--predictions", str(method_folder), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "prediction missing" in err
    assert (f"hint: {method_folder} holds one folder per slice (fg_size_low), not clip folders: give --predictions "
            f"{method_folder / 'fg_size_low'}") in err

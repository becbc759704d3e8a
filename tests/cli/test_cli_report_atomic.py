"""``devil report --html`` and ``--out`` build their folder beside it and move it in at the end: a report that fails
part-way (here: a method's predictions gone when its clips are encoded) leaves no partial folder (no
``per_video.tsv`` and ``plots/`` without ``index.html``), and an earlier report in that folder as it was."""
from __future__ import annotations

from pathlib import Path

import pytest

from devil_dataset.cli import main
from devil_dataset.eval.scoring.results import write_results

from ..eval.report.test_html import make_tiny_evaluation


@pytest.fixture
def results(tmp_path):
    docs = make_tiny_evaluation(tmp_path / "eval")
    return [write_results(tmp_path / f"{d['method']}_{d['slice']}.json", d) for d in docs], docs


def _break_predictions(docs) -> None:
    """Every prediction frame of one method made unreadable: found only when its clips are encoded."""
    for png in Path(docs[-1]["provenance"]["inputs"]["predictions"]).rglob("*.png"):
        png.write_bytes(b"not a png")


def _fails(argv) -> None:
    try:
        rc = main(argv)
    except Exception:  # noqa: BLE001 - whatever the failure, nothing half-written may stay
        return
    assert rc != 0


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


def test_a_failed_html_report_leaves_no_partial_folder(tmp_path, results, capsys):
    paths, docs = results
    _break_predictions(docs)
    out = tmp_path / "html"
    _fails(["report", *map(str, paths), "--html", str(out), "--clip-metric", "ssim"])
    assert not out.exists() and _leftovers(tmp_path) == []


def test_a_failed_html_report_keeps_the_earlier_one(tmp_path, results, capsys):
    paths, docs = results
    out = tmp_path / "html"
    assert main(["report", *map(str, paths), "--html", str(out), "--clip-metric", "ssim", "--no-plots"]) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "notes.txt").write_text("mine")
    _break_predictions(docs)
    _fails(["report", *map(str, paths), "--html", str(out), "--clip-metric", "ssim"])
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == {**before, out.joinpath("notes.txt").relative_to(out): b"mine"}
    assert not (out / "plots").exists() and _leftovers(tmp_path) == []


def test_out_and_html_may_share_a_folder(tmp_path, results, capsys):
    paths, _ = results
    out = tmp_path / "report"
    assert main(["report", *map(str, paths), "--out", str(out), "--html", str(out), "--clip-metric", "ssim",
                 "--no-plots", "--clips-per-end", "0"]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"table1.md", "per_video.tsv", "index.html"} <= names and _leftovers(tmp_path) == []

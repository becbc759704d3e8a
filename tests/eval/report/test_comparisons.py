"""eval/report/comparisons.py and Table 1's significance marks: comparisons.json, --compare text, the legend."""
from __future__ import annotations

import json

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.report import score_table, table1_markdown, table1_tsv, write_report
from devil_dataset.eval.report.comparisons import (
    COMPARISON_FIELDS,
    compare_text,
    power_note,
    significance,
    write_comparisons,
)
from devil_dataset.eval.report.findings import check_findings


def _doc(method, slice_name, values, key="psnr"):
    videos = {f"c{i:02d}": {key: float(v)} for i, v in enumerate(values)}
    return {"slice": slice_name, "method": method, "num_videos": len(values), "videos": videos,
            "summary": {key: float(np.mean(values))}}


BASE = np.array([30.0, 28.0, 33.0, 31.0, 29.5, 32.0, 27.0, 30.5])
ALTERNATING = np.array([2.0, -2.0] * 4)  # a method as good on average, but up and down video by video
DOCS = [_doc("good", "fg_size_high", BASE + 4.375 + 0.1 * (np.arange(8) - 3.5)),
        _doc("close", "fg_size_high", BASE + 3.875 + ALTERNATING), _doc("bad", "fg_size_high", BASE)]


def test_table1_marks_best_and_indistinguishable_with_a_legend():
    rows, intervals = significance(DOCS)
    table = score_table(DOCS)
    md = table1_markdown(table, comparisons=rows, uncertainty=intervals)
    assert "| fg_size_high | good | **34.50** |" in md
    assert "| fg_size_high | close | 34.00\u2020 |" in md  # differences of both signs: not significant
    assert "| fg_size_high | bad | 30.12 |" in md  # worse on all 8 videos: p = 2/256, Holm x3 < 0.05, no dagger
    assert "paired sign-flip permutation test" in md and "Holm" in md and "\u03b1 = 0.05" in md
    ci = table1_markdown(table, comparisons=rows, uncertainty=intervals, ci="interval")
    lo, hi = intervals[("good", "fg_size_high")]["psnr"]["ci"]
    assert f"**34.50 [{lo:.2f}, {hi:.2f}]**" in ci and "95% BCa bootstrap interval" in ci
    tsv = table1_tsv(table, comparisons=rows, uncertainty=intervals, ci="se").splitlines()
    assert tsv[0].split("\t") == ["slice", "method", "PSNR \u25b2", "PSNR \u25b2 se", "PSNR \u25b2 vs best"]
    assert tsv[1].split("\t")[-1] == "best" and tsv[2].split("\t")[-1] == "n.s." and tsv[3].split("\t")[-1] == ""
    assert table1_markdown(table) == table1_markdown(table, comparisons=None)  # old call: no legend
    with pytest.raises(DevilError, match="ci"):
        table1_markdown(table, ci="bars")


def test_comparisons_json_fields_and_write_report(tmp_path):
    rows, intervals = significance(DOCS)
    path = write_comparisons(rows, tmp_path)
    data = json.loads(path.read_text())
    assert path.name == "comparisons.json" and len(data) == 3
    assert all(list(r) == list(COMPARISON_FIELDS) for r in data)
    written = write_report(score_table(DOCS), tmp_path / "rep", plots=False, intervals=intervals, comparisons=rows)
    assert (tmp_path / "rep" / "comparisons.json") in written
    assert "\u2020" in (tmp_path / "rep" / "table1.md").read_text()


def test_compare_text_three_ways():
    rows, _ = significance(DOCS + [_doc("good", "fg_size_low", BASE), _doc("bad", "fg_size_low", BASE + 0.5),
                                   _doc("lower", "fg_size_low", BASE, key="warp_error_mask")])
    text = compare_text(rows, "bad", "good")
    assert "fg_size_high: good better on psnr" in text
    assert "fg_size_low: bad better on psnr (+0.5" in text  # +0.5 on every video of 8: p = 2/256
    with pytest.raises(DevilError, match="no slice scores both"):
        compare_text(rows, "good", "nobody")


def test_power_note_for_five_videos():
    assert "2/32 = 0.0625" in power_note({"a": 5, "b": 5})
    assert power_note({"a": 6}) == ""  # 2/64 < 0.05


def test_findings_say_significance_and_test():
    rng = np.random.default_rng(0)
    low = rng.normal(40, 1, 6)
    docs = [_doc("telea", "fg_size_low", low), _doc("telea", "fg_size_high", low - 10)]
    f = check_findings(score_table(docs), docs=docs)[0]
    assert f.held and f.significant is True and "unpaired permutation test" in f.test
    assert f.pvalues["telea psnr"] == pytest.approx(2 / 924)  # C(12, 6) = 924 splits, exact
    assert f.summary().startswith("[HELD, SIGNIFICANT]")
    noisy = [_doc("telea", "fg_size_low", low), _doc("telea", "fg_size_high", low[::-1] - 0.1)]
    g = check_findings(score_table(noisy), docs=noisy)[0]
    assert g.held and g.significant is False and g.verdict() == "HELD, NOT SIGNIFICANT"
    assert check_findings(score_table(docs))[0].significant is None  # no per-video values: untested

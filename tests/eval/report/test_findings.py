"""devil_dataset/eval/report/findings.py: the paper's three robust slice trends checked on a results table."""
from __future__ import annotations

import json
import math

from devil_dataset.eval.report.findings import Finding, check_findings, findings_markdown, slice_counts, write_findings


def _table(values: dict[str, tuple[float, float]], attr: str, key: str = "psnr") -> dict:
    t = {}
    for m, (lo, hi) in values.items():
        t[(m, f"{attr}_low")] = {key: lo}
        t[(m, f"{attr}_high")] = {key: hi}
    return t


def test_check_findings_held_and_not_held():
    t = {}
    t.update(_table({"telea": (30.0, 25.0), "aligned-copy": (40.0, 35.0)}, "fg_size"))
    t.update(_table({"telea": (30.0, 30.0), "aligned-copy": (30.0, 33.0)}, "fg_displacement"))  # +0% vs +10%
    t.update(_table({"telea": (30.0, 27.0), "aligned-copy": (30.0, 24.0)}, "camera_motion"))  # -10% vs -20%
    f = {x.key: x for x in check_findings(t, {"fg_size_low": 5, "fg_size_high": 5})}
    assert f["fg_size"].held is True and "fg_size_low: 5 videos" in f["fg_size"].explanation
    assert f["fg_size"].numbers["telea"]["psnr"] == {"low": 30.0, "high": 25.0}
    assert f["fg_displacement"].held is True
    # symmetric relative change 2 (hi - lo) / (hi + lo)
    assert math.isclose(f["fg_displacement"].numbers["relative_improvement"]["aligned-copy"]["psnr"], 2 / 21)
    assert f["camera_motion"].held is False and "aligned-copy psnr" in f["camera_motion"].explanation


def test_check_findings_lower_is_better_and_missing():
    # LPIPS: lower is better, so fg_size_high with a larger LPIPS is harder; SSIM equal -> not harder
    t = {("telea", "fg_size_low"): {"lpips": 0.05, "ssim": 0.9},
         ("telea", "fg_size_high"): {"lpips": 0.08, "ssim": 0.9}}
    f = check_findings(t)
    assert f[0].held is False and "telea ssim" in f[0].explanation
    assert f[1].held is None and f[2].held is None  # nothing to compare
    # NaN (skipped metric) columns are ignored
    t = {("telea", "fg_size_low"): {"psnr": 30.0, "lpips": float("nan")},
         ("telea", "fg_size_high"): {"psnr": 20.0, "lpips": float("nan")}}
    assert check_findings(t)[0].held is True and "lpips" not in check_findings(t)[0].claim


def test_check_findings_needs_a_per_frame_method():
    t = _table({"aligned-copy": (30.0, 33.0)}, "fg_displacement")
    f = check_findings(t)[1]
    assert f.held is None and "per-frame method" in f.explanation


def test_slice_counts_from_results_documents():
    docs = [{"slice": "fg_size_low", "num_videos": 5}, {"slice": "fg_size_high", "num_videos": 4},
            {"slice": None, "num_videos": 3}]
    assert slice_counts(docs) == {"fg_size_low": 5, "fg_size_high": 4}


def test_write_findings_markdown_and_json(tmp_path):
    findings = [Finding("fg_size", "a claim", True, {"telea": {"psnr": 1.0}}, "why"),
                Finding("camera_motion", "other", None, {}, "needs data")]
    paths = write_findings(findings, tmp_path)
    assert [p.name for p in paths] == ["findings.md", "findings.json"]
    assert paths[0].read_text() == findings_markdown(findings) == (
        "- **held**: a claim. why\n- not checked: other. needs data\n")
    assert json.loads(paths[1].read_text())[0] == {"key": "fg_size", "claim": "a claim", "held": True,
                                                   "numbers": {"telea": {"psnr": 1.0}}, "explanation": "why",
                                                       "significant": None, "test": "", "pvalues": {},
                                                       "significant_methods": {}}

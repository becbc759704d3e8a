"""Report tables with known numbers give exact strings; relative improvement; plots are written."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.report import (
    relative_improvement,
    relative_improvement_markdown,
    relative_improvement_tsv,
    score_table,
    table1_markdown,
    table1_tsv,
    write_report,
)

# Paper Table 1-like numbers (CPNet on fg_displacement_high is the SPEC section 7 reference).
DOCS = [
    {"method": "CPNet", "slice": "fg_displacement_high", "summary": {
        "psnr": 36.6201, "ssim": 0.98071, "lpips": 0.0273449, "pvcs": 0.14621, "fid": 4.8512, "vfid": 0.03671,
        "vfid_clips": 0.06219, "warp_error_mask": 0.000957, "pcons_psnr_mask": 40.3312}},
    {"method": "STTN", "slice": "fg_displacement_high", "summary": {
        "psnr": 35.1, "ssim": 0.9812, "lpips": 0.031, "pvcs": 0.15, "fid": 5.0, "vfid": 0.04, "vfid_clips": 0.07,
        "warp_error_mask": 0.001, "pcons_psnr_mask": 39.0}},
    {"method": "CPNet", "slice": "fg_displacement_low", "summary": {
        "psnr": 30.0, "ssim": 0.95, "lpips": 0.05, "pvcs": 0.2, "fid": 10.0, "vfid": 0.1, "vfid_clips": 0.12,
        "warp_error_mask": 0.002, "pcons_psnr_mask": 38.0}},
]

HEADER = ("| slice | method | PSNR ▲ | SSIM ▲ | LPIPS ▼ | PVCS ▼ | FID ▼ | VFID ▼ | VFID (clips) ▼ | "
          "Warp error (mask) ▼ | PCons ▲ |")


def test_table1_markdown_exact():
    expected = "\n".join([
        HEADER,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| fg_displacement_low | CPNet | 30.00 | 0.9500 | 0.050000 | 0.2000 | 10.00 | 0.1000 | 0.1200 | "
        "0.002000 | 38.00 |",
        "| fg_displacement_high | CPNet | **36.62** | 0.9807 | **0.027345** | **0.1462** | **4.85** | **0.0367** | "
        "**0.0622** | **0.000957** | **40.33** |",
        "| fg_displacement_high | STTN | 35.10 | **0.9812** | 0.031000 | 0.1500 | 5.00 | 0.0400 | 0.0700 | "
        "0.001000 | 39.00 |",
    ]) + "\n"
    assert table1_markdown(score_table(DOCS)) == expected


def test_table1_tsv_exact_and_key_selection():
    expected = (
        "slice\tmethod\tPSNR ▲\tLPIPS ▼\n"
        "fg_displacement_low\tCPNet\t30.00\t0.050000\n"
        "fg_displacement_high\tCPNet\t36.62\t0.027345\n"
        "fg_displacement_high\tSTTN\t35.10\t0.031000\n"
    )
    assert table1_tsv(score_table(DOCS), ["psnr", "lpips"]) == expected


def test_ties_are_not_bold_and_missing_values_are_blank():
    docs = [{"method": "A", "slice": "all", "summary": {"psnr": 30.001, "fid": 3.0}},
            {"method": "B", "slice": "all", "summary": {"psnr": 30.004}}]
    assert table1_markdown(score_table(docs)) == (
        "| slice | method | PSNR ▲ | FID ▼ |\n|---|---|---:|---:|\n| all | A | 30.00 | 3.00 |\n| all | B | 30.00 |  |\n"
    )


def test_relative_improvement_signs():
    ri = relative_improvement(score_table(DOCS))
    assert list(ri) == [("fg_displacement", "CPNet")]  # STTN has no low slice
    row = ri[("fg_displacement", "CPNet")]
    assert row["psnr"] == pytest.approx((36.6201 - 30.0) / 30.0)
    assert row["lpips"] == pytest.approx(-(0.0273449 - 0.05) / 0.05)  # lower is better: negated
    assert relative_improvement_tsv(score_table(DOCS), ["psnr", "lpips"]) == (
        "attribute\tmethod\tPSNR\tLPIPS\nfg_displacement\tCPNet\t+22.07%\t+45.31%\n"
    )
    assert relative_improvement_markdown(score_table(DOCS), ["fid"]).endswith("| fg_displacement | CPNet | +51.49% |\n")


def test_duplicate_results_rejected():
    with pytest.raises(DevilError, match="CPNet on fg_displacement_high"):
        score_table(DOCS + DOCS[:1])


def test_write_report_files(tmp_path):
    written = write_report(score_table(DOCS), tmp_path, ["psnr", "lpips"])
    names = sorted(p.name for p in written)
    assert names == sorted([
        "table1.md", "table1.tsv", "relative_improvement.md", "relative_improvement.tsv",
        "method_performance_psnr.png", "method_performance_lpips.png", "slice_difficulty_psnr.png",
        "slice_difficulty_lpips.png", "sensitivity_fg_displacement.png",
    ])
    for p in written:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1000
    assert not list(tmp_path.glob(".tmp-*"))

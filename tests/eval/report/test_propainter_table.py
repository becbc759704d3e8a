"""The paper-style DAVIS / YouTube-VOS table of ProPainter-protocol results (issue 38)."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.engine.results import write_results
from devil_dataset.eval.report.propainter_table import (
    propainter_table_latex,
    propainter_table_markdown,
    read_table_rows,
)


def _doc(psnr: float, ssim: float, vfid: float | None = None, ewarp: float | None = None) -> dict:
    summary = {"psnr": psnr, "ssim": ssim}
    if vfid is not None:
        summary["vfid"] = vfid
    if ewarp is not None:
        summary["ewarp"] = ewarp
    return {"format": "devil-results", "format_version": 1, "protocol": "propainter", "summary": summary,
            "uncertainty": {"psnr": {"ci": [psnr - 0.5, psnr + 0.5]}}, "videos": {}}


def test_markdown_has_both_dataset_groups_scales_and_gaps():
    rows = {"A": {"DAVIS": _doc(34.1712, 0.97712, 0.0991, 0.00131), "YouTube-VOS": _doc(34.43, 0.9735, 0.074)},
            "B": {"DAVIS": _doc(33.01, 0.9721, 0.116)}}
    text = propainter_table_markdown(rows)
    lines = text.splitlines()
    assert lines[0] == ("| Method | DAVIS PSNR ↑ | DAVIS SSIM ↑ | DAVIS VFID ↓ | DAVIS E_warp (×10⁻³) ↓ | "
                        "YouTube-VOS PSNR ↑ | YouTube-VOS SSIM ↑ | YouTube-VOS VFID ↓ | YouTube-VOS E_warp (×10⁻³) ↓ |")
    assert lines[2] == "| A | 34.17 | 0.9771 | 0.099 | 1.310 | 34.43 | 0.9735 | 0.074 | - |"
    assert lines[3] == "| B | 33.01 | 0.9721 | 0.116 | - | - | - | - | - |"
    with_ci = propainter_table_markdown(rows, intervals=True)
    assert "34.17 [33.67, 34.67]" in with_ci


def test_latex_and_files(tmp_path):
    path = write_results(tmp_path / "a.json", _doc(30.0, 0.9, 0.2, 0.002))
    rows = read_table_rows({"A": {"DAVIS": path}})
    latex = propainter_table_latex(rows)
    assert r"\multicolumn{4}{c}{DAVIS} & \multicolumn{4}{c}{YouTube-VOS}" in latex
    assert "A & 30.00 & 0.9000 & 0.200 & 2.000 & - & - & - & - \\\\" in latex


def test_devil_protocol_documents_are_refused():
    doc = _doc(30.0, 0.9)
    del doc["protocol"]
    with pytest.raises(DevilError, match="not a --protocol propainter results document"):
        propainter_table_markdown({"A": {"DAVIS": doc}})

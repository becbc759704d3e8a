"""The paper-style DAVIS / YouTube-VOS table of ProPainter-protocol results."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.report.paper_table import (
    paper_table_latex,
    paper_table_markdown,
    read_table_rows,
)
from devil_dataset.eval.scoring.results import write_results


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
    text = paper_table_markdown(rows)
    lines = text.splitlines()
    assert lines[0] == ("| Method | DAVIS PSNR ↑ | DAVIS SSIM ↑ | DAVIS VFID ↓ | DAVIS E_warp (×10⁻³) ↓ | "
                        "YouTube-VOS PSNR ↑ | YouTube-VOS SSIM ↑ | YouTube-VOS VFID ↓ | YouTube-VOS E_warp (×10⁻³) ↓ |")
    assert lines[2] == "| A | 34.17 | 0.9771 | 0.099 | 1.310 | 34.43 | 0.9735 | 0.074 | - |"
    assert lines[3] == "| B | 33.01 | 0.9721 | 0.116 | - | - | - | - | - |"
    with_ci = paper_table_markdown(rows, intervals=True)
    assert "34.17 [33.67, 34.67]" in with_ci


def test_latex_and_files(tmp_path):
    path = write_results(tmp_path / "a.json", _doc(30.0, 0.9, 0.2, 0.002))
    rows = read_table_rows({"A": {"DAVIS": path}})
    latex = paper_table_latex(rows)
    assert r"\multicolumn{4}{c}{DAVIS} & \multicolumn{4}{c}{YouTube-VOS}" in latex
    assert "A & 30.00 & 0.9000 & 0.200 & 2.000 & - & - & - & - \\\\" in latex


def test_devil_protocol_documents_are_refused():
    doc = _doc(30.0, 0.9)
    del doc["protocol"]
    with pytest.raises(DevilError, match="not a results document of a protocol with a paper table"):
        paper_table_markdown({"A": {"DAVIS": doc}})


def _full(psnr: float, n: int = 5) -> dict:
    u = {"n": n, "ci": [psnr - 0.5, psnr + 0.5], "level": 0.95,
         "method": "bootstrap BCa, 9999 resamples over videos of the frame-weighted mean, seed 0"}
    return {"format": "devil-results", "format_version": 1, "protocol": "propainter", "method": "pred",
            "summary": {"psnr": psnr, "ssim": 0.97, "vfid": 0.1, "ewarp": 0.0013, "hole_psnr": psnr - 5,
                        "hole_lpips": 0.05},
            "uncertainty": {"psnr": u, "hole_psnr": {**u, "ci": [psnr - 5.5, psnr - 4.5]},
                            "ewarp": {"n": n, "ci": [0.0012, 0.0014], "level": 0.95,
                                      "method": "bootstrap BCa, 9999 resamples over videos, seed 0"}},
            "videos": {}}


def test_paper_table_command_both_groups_every_metric_and_a_caption(tmp_path, capsys):
    """`devil report --paper-table`: both dataset groups, every computed metric (hole ones too), the
    intervals and a caption saying what they are; files with --out."""
    from devil_dataset.cli import main

    davis = write_results(tmp_path / "davis.json", _full(34.17))
    ytvos = write_results(tmp_path / "ytvos.json", _full(33.5))
    other = write_results(tmp_path / "other.json", _full(30.0, n=1))  # its own method name, one video
    rc = main(["report", "--paper-table", f"mine:DAVIS={davis}", f"mine:YouTube-VOS={ytvos}", f"DAVIS={other}",
               "--out", str(tmp_path / "paper")])
    assert rc == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert header.startswith("| Method | DAVIS PSNR ↑ | DAVIS SSIM ↑ | DAVIS VFID ↓ | DAVIS E_warp (×10⁻³) ↓ | "
                             "DAVIS hole PSNR ↑ | DAVIS hole LPIPS ↓ | YouTube-VOS PSNR ↑")
    assert "| mine | 34.17 [33.67, 34.67] | 0.9700 | 0.100 | 1.300 [1.200, 1.400] | 29.17 [28.67, 29.67] | 0.0500 |" \
        in out
    assert "| pred | 30.00 | 0.9700 | 0.100 | 1.300 | 25.00 | 0.0500 | - |" in out  # n = 1: no interval
    assert ("[lo, hi]: 95% bootstrap BCa, 9999 resamples over videos of the frame-weighted mean, seed 0 (PSNR, "
            "hole PSNR)") in out
    assert "95% bootstrap BCa, 9999 resamples over videos, seed 0 (E_warp (×10⁻³))" in out
    assert "no interval where a dataset has one video" in out and "VFID: one number per dataset, no interval" in out
    assert (tmp_path / "paper" / "paper_table.md").read_text() == out
    assert r"\multicolumn{6}{c}{DAVIS}" in (tmp_path / "paper" / "paper_table.tex").read_text()


def test_paper_table_command_refuses_other_protocols_and_bad_arguments(tmp_path, capsys):
    from devil_dataset.cli import main

    doc = _full(30.0)
    del doc["protocol"]
    devil = write_results(tmp_path / "devil.json", doc)
    assert main(["report", "--paper-table", f"DAVIS={devil}"]) == 2
    assert f"{devil}: not a results document of a protocol with a paper table (protocol devil)" in \
        capsys.readouterr().err
    assert main(["report", "--paper-table", str(devil)]) == 2
    assert "expected [METHOD:]DATASET=RESULTS.json" in capsys.readouterr().err
    pp = write_results(tmp_path / "pp.json", _full(30.0))
    assert main(["report", "--paper-table", f"a:DAVIS={pp}", f"a:DAVIS={pp}"]) == 2
    assert "a on DAVIS given twice" in capsys.readouterr().err

"""``devil report --html``: the CLI writes the HTML report folder from results files."""
from __future__ import annotations

import re

from devil_dataset.cli import main
from devil_dataset.eval.scoring.results import write_results

from ..eval.report.test_html import make_tiny_evaluation


def test_report_html_flag(tmp_path, capsys):
    paths = [write_results(tmp_path / f"{d['method']}_{d['slice']}.json", d)
             for d in make_tiny_evaluation(tmp_path / "eval")]
    rc = main(["report", *map(str, paths), "--html", str(tmp_path / "html"), "--clip-metric", "ssim",
               "--no-plots"])
    assert rc == 0
    text = (tmp_path / "html" / "index.html").read_text()
    assert "by SSIM" in text and len(re.findall(r"<video ", text)) == 24
    assert "index.html" in capsys.readouterr().err


def _doc(method: str, slice_name: str, psnr: float, videos: int = 3) -> dict:
    return {"format": "devil-results", "format_version": 1, "method": method, "slice": slice_name,
            "num_videos": videos, "summary": {"psnr": psnr}, "videos": {}}


def test_report_findings_flag_checks_the_trends_on_any_results(tmp_path, capsys):
    import json

    docs = [_doc("telea", "fg_size_low", 30.0), _doc("telea", "fg_size_high", 25.0, videos=4),
            _doc("aligned-copy", "fg_size_low", 40.0), _doc("aligned-copy", "fg_size_high", 41.0, videos=4)]
    paths = [write_results(tmp_path / f"{d['method']}_{d['slice']}.json", d) for d in docs]
    assert main(["report", *map(str, paths), "--findings", "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr()
    assert "Findings (paper section 6):" in out.out and "**not held**: fg_size_high is harder" in out.out
    assert "Not harder for: aligned-copy psnr" in out.out and "fg_size_low: 3 videos, fg_size_high: 4 videos" in out.out
    assert "wrote 9 files" in out.err  # tables + notes, relative improvement, per_video.tsv, comparisons.json, findings
    assert json.loads((tmp_path / "out" / "comparisons.json").read_text()) == []  # no per-video values here
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert [f["held"] for f in findings] == [False, None, None]
    assert (tmp_path / "out" / "findings.md").read_text() in out.out


def test_report_without_findings_flag_writes_no_findings(tmp_path, capsys):
    paths = [write_results(tmp_path / f"{s}.json", _doc("telea", s, 30.0)) for s in ("fg_size_low", "fg_size_high")]
    assert main(["report", *map(str, paths), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    assert "Findings" not in capsys.readouterr().out and not (tmp_path / "out" / "findings.md").exists()


def _video_doc(method: str, slice_name: str, values: list[float]) -> dict:
    videos = {f"c{i}": {"psnr": v} for i, v in enumerate(values)}
    return {"format": "devil-results", "format_version": 1, "method": method, "slice": slice_name,
            "num_videos": len(values), "summary": {"psnr": sum(values) / len(values)}, "videos": videos}


def test_report_ci_and_compare_flags(tmp_path, capsys):
    import json

    base = [30.0, 28.0, 33.0, 31.0, 29.5, 32.0, 27.0, 30.5]
    docs = [_video_doc("good", "fg_size_high", [v + 4 + 0.1 * i for i, v in enumerate(base)]),
            _video_doc("bad", "fg_size_high", base), _video_doc("twin", "fg_size_high", list(base))]
    paths = [write_results(tmp_path / f"{d['method']}.json", d) for d in docs]
    assert main(["report", *map(str, paths), "--ci", "se", "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "| fg_size_high | good | **34.48 ± " in out and "| fg_size_high | bad | 30.12 ± " in out
    assert "sign-flip permutation test" in out and "standard error over videos" in out
    rows = json.loads((tmp_path / "out" / "comparisons.json").read_text())
    assert {(r["a"], r["b"]) for r in rows} == {("good", "bad"), ("good", "twin"), ("bad", "twin")}
    assert main(["report", *map(str, paths), "--compare", "bad", "good"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bad vs good") and "fg_size_high: good better on psnr (-4.35" in out
    assert main(["report", *map(str, paths), "--compare", "bad", "twin"]) == 0
    assert "cannot be told apart on psnr" in capsys.readouterr().out


def _protocol_docs(tmp_path):
    devil = {**_doc("mine", None, 31.0), "summary": {"psnr": 31.0, "ssim": 0.95}}
    propainter = {**_doc("propainter", None, 34.0), "protocol": "propainter", "summary": {"psnr": 34.0, "ssim": 0.97},
                  "provenance": {"options": {"protocol": "propainter"}}}
    return [write_results(tmp_path / "devil.json", devil), write_results(tmp_path / "pp.json", propainter)]


def test_report_refuses_results_of_different_protocols(tmp_path, capsys):
    """A DEVIL-protocol and a ProPainter-protocol result in one table (same PSNR/SSIM columns, one bolded)
    is refused with exit 2 naming the protocols and the files, whatever the protocols are called."""
    paths = _protocol_docs(tmp_path)
    assert main(["report", *map(str, paths)]) == 2
    err = capsys.readouterr().err
    assert "different evaluation protocols" in err and "--allow-mixed" in err
    assert f"devil in {paths[0]}" in err and f"propainter in {paths[1]}" in err
    prove = {**_doc("other", None, 30.0), "protocol": "prove"}  # a third protocol: the check reads the field
    third = write_results(tmp_path / "prove.json", prove)
    assert main(["report", str(paths[1]), str(third)]) == 2
    assert f"prove in {third}" in capsys.readouterr().err


def test_report_allow_mixed_marks_cells_of_another_protocol(tmp_path, capsys):
    paths = _protocol_docs(tmp_path)
    assert main(["report", *map(str, paths), "--allow-mixed"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0]
    assert "**" not in table  # one cell of each column is scored differently: no best among one
    assert "\u00a7" in table and 'protocol "propainter" (others "devil")' in out \
        or 'protocol "devil" (others "propainter")' in out

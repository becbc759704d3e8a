"""``devil report --html``: the CLI writes the HTML report folder from results files."""
from __future__ import annotations

import re

from devil_dataset.cli import main
from devil_dataset.eval.results import write_results

from ..eval.test_html_report import make_tiny_evaluation


def test_report_html_flag(tmp_path, capsys):
    paths = [write_results(tmp_path / f"{d['method']}_{d['slice']}.json", d)
             for d in make_tiny_evaluation(tmp_path / "eval")]
    rc = main(["report", *map(str, paths), "--html", str(tmp_path / "html"), "--clip-metric", "ssim",
               "--no-plots"])
    assert rc == 0
    text = (tmp_path / "html" / "index.html").read_text()
    assert "by SSIM" in text and len(re.findall(r"<video ", text)) == 24
    assert "index.html" in capsys.readouterr().err

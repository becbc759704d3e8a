"""``devil evaluate`` and ``devil report`` through the command line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.release_format import write_frame_pngs, write_mask_pngs

DEVKIT = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "release-devkit"


def _write_clips(root: Path, n: int = 2, t: int = 3) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    for i in range(n):
        gt = rng.integers(0, 256, (t, 56, 64, 3), dtype=np.uint8)
        hole = np.zeros((t, 56, 64), bool)
        hole[:, 20:30, 20:34] = True
        write_frame_pngs(gt, root / "gt" / f"c{i}", "gt")
        write_mask_pngs(hole, root / "gt" / f"c{i}")
        write_frame_pngs(255 - gt, root / "method_x" / f"c{i}", "pred")
    return root / "gt", root / "method_x"


def test_evaluate_json_and_out(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path)
    out = tmp_path / "res" / "r.json"
    rc = main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr,ssim", "pcons",
               "--json", "--out", str(out), "--no-progress", "--slice", "fg_size_high"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["summary"]) == {"psnr", "ssim", "pcons_psnr_mask"}
    assert set(doc["videos"]) == {"c0", "c1"} and doc["method"] == "method_x" and doc["slice"] == "fg_size_high"
    assert json.loads(out.read_text()) == doc


def test_evaluate_human_summary(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path)
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr",
                 "--method-name", "M", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "M  slice=-  videos=2" and lines[1].split()[0] == "psnr"


def test_evaluate_validation_error_exit_2(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path, n=3)
    (pred / "c0" / "frame_0002_pred.png").unlink()
    import shutil

    shutil.rmtree(pred / "c2")
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "2 of 3 clips cannot be evaluated" in err and "c0: 2 predicted frames, expected 3" in err
    assert "c2: prediction missing" in err


@pytest.mark.parametrize("argv,needle", [
    (["--gt-dir", "."], "directory mode needs --gt-dir and --pred-dir"),
    (["--dataset", "x", "--gt-dir", "."], "give either"),
    (["--dataset", "x"], "dataset mode needs"),
])
def test_evaluate_argument_errors(argv, needle, capsys):
    assert main(["evaluate", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_unknown_metric_exit_2(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path, n=1)
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "nope", "--no-progress"]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err


def test_devkit_directory_mode(capsys):
    if not DEVKIT.is_dir():
        pytest.skip(f"{DEVKIT}: release devkit fixture not available")
    rc = main(["evaluate", "--gt-dir", str(DEVKIT / "sample-inpainting-inputs"), "--pred-dir",
               str(DEVKIT / "sample-inpainting-outputs"), "--metrics", "psnr", "--json", "--no-progress"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert 30 < doc["summary"]["psnr"] < 60 and doc["provenance"]["inputs"]["prediction_layout"] == "single"


def test_report_cli(tmp_path, capsys):
    paths = []
    for method, lo, hi in (("A", 30.0, 33.0), ("B", 31.0, 30.0)):
        for level, v in (("low", lo), ("high", hi)):
            doc = {"format": "devil-results", "format_version": 1, "method": method, "slice": f"camera_motion_{level}",
                   "summary": {"psnr": v, "lpips": None}}
            p = tmp_path / f"{method}_{level}.json"
            p.write_text(json.dumps(doc))
            paths.append(str(p))
    assert main(["report", *paths, "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "| camera_motion_low | A | 30.00 |  |" in out
    assert "| camera_motion | A | +10.00% |" in out and "| camera_motion | B | -3.23% |" in out
    assert (tmp_path / "rep" / "table1.tsv").read_text().splitlines()[0] == "slice\tmethod\tPSNR ▲\tLPIPS ▼"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["report", str(bad)]) == 2
    assert "not a devil results file" in capsys.readouterr().err

"""`devil example`: the README's directory-mode example runs as written, with nothing but the package."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.release_format import read_frame_pngs, read_mask_pngs
from devil_dataset.eval.scoring.inputs import DirectorySource

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_directory_mode_commands() -> list[list[str]]:
    """The README's commands under its "release's own layout" comment, as argument lists (without `devil`)."""
    block = re.search(r"# The release's own layout[^\n]*\n((?:devil [^\n]*\n)+)", README.read_text())
    assert block, "README: the directory-mode example is missing"
    commands = [shlex.split(line)[1:] for line in block.group(1).splitlines()]
    assert all("shared/" not in arg for cmd in commands for arg in cmd)  # nothing a pip user lacks
    return commands


def test_readme_example_writes_a_devkit_sized_release_layout(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example, evaluate = readme_directory_mode_commands()
    assert example[0] == "example" and evaluate[0] == "evaluate"
    assert main(example) == 0
    gt_dir = Path(evaluate[evaluate.index("--gt-dir") + 1])
    pred_dir = Path(evaluate[evaluate.index("--pred-dir") + 1])
    gt, hole, pred = read_frame_pngs(gt_dir, "gt"), read_mask_pngs(gt_dir), read_frame_pngs(pred_dir, "pred")
    assert gt.shape == pred.shape == (21, 240, 432, 3) and hole.shape == (21, 240, 432)  # the devkit's shape
    assert 0.02 < hole.mean() < 0.5 and hole.any(axis=(1, 2)).all()
    assert np.array_equal(pred[~hole], gt[~hole]) and not np.array_equal(pred[hole], gt[hole])
    DirectorySource(gt_dir, pred_dir).validate()  # what the README's evaluate command reads is complete
    assert "devil evaluate --gt-dir" in capsys.readouterr().out


@pytest.mark.slow
def test_readme_directory_mode_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for command in readme_directory_mode_commands():
        assert main(command) == 0
    result = json.loads(capsys.readouterr().out.split("\n", 2)[2])  # after the example's two lines
    assert result["num_videos"] == 1 and result["num_frames"] == 21
    assert 25 < result["summary"]["psnr"] < 60 and 0.8 < result["summary"]["ssim"] <= 1

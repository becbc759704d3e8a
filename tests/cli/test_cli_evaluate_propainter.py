"""``devil evaluate --protocol propainter``: the command the checks run, on generated DAVIS-layout data."""
from __future__ import annotations

import json
import shutil

import pytest

from devil_dataset.cli import main

from ..eval.davis_data import reference_table, reference_vfid, write_davis_layout

PROTOCOL = (432, 240)


@pytest.fixture(scope="module")
def davis(tmp_path_factory):
    return write_davis_layout(tmp_path_factory.mktemp("davis"), (3, 2), source_size=(480, 270), pred_size=PROTOCOL)


def _argv(davis, *metrics: str) -> list[str]:
    return ["evaluate", "--protocol", "propainter", "--gt-dir", str(davis.gt_dir), "--mask-dir", str(davis.mask_dir),
            "--pred-dir", str(davis.pred_dir), "--metrics", *metrics, "--json", "--no-progress"]


def test_psnr_ssim_json_equal_their_values(davis, capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main([*_argv(davis, "psnr", "ssim"), "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    ref = reference_table(davis, PROTOCOL)
    assert set(doc["summary"]) == {"psnr", "ssim"}
    assert doc["summary"]["psnr"] == pytest.approx(ref["psnr"], abs=1e-9)
    assert doc["summary"]["ssim"] == pytest.approx(ref["ssim"], abs=1e-9)
    assert doc["protocol"] == "propainter" and doc["provenance"]["options"]["protocol"] == "propainter"
    written = json.loads(out.read_text())
    assert written["summary"] == doc["summary"] and written["videos"] == doc["videos"]


def test_human_summary(davis, capsys):
    argv = [a for a in _argv(davis, "psnr") if a != "--json"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "psnr" in out and "bootstrap" in out


@pytest.mark.parametrize("argv, needle", [
    (["--protocol", "propainter", "--metrics", "psnr"], "needs --gt-dir, --mask-dir and --pred-dir"),
    (["--mask-dir", "."], "--mask-dir: only with --protocol propainter"),
    (["--protocol", "propainter", "--dataset", "org/devil", "--config", "c", "--predictions", "."], "not --dataset"),
])
def test_argument_errors(argv, needle, capsys):
    assert main(["evaluate", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_bad_layout_exits_2_naming_the_problem(tmp_path, capsys):
    data = write_davis_layout(tmp_path, (2,), pred_size=PROTOCOL)
    shutil.rmtree(data.pred_dir / "v0")
    (data.pred_dir / "other").mkdir()
    assert main(_argv(data, "psnr")) == 2
    assert "v0: no output folder" in capsys.readouterr().err
    assert main([*_argv(data, "lpips")]) == 2
    assert "unknown metric of the propainter protocol 'lpips'" in capsys.readouterr().err


@pytest.mark.slow
def test_vfid_with_planted_random_weights_equals_their_value(davis, capsys, tmp_path, monkeypatch):
    import torch

    from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state

    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("DEVIL_WEIGHTS_ALLOW_UNVERIFIED", "1")
    state = random_i3d_state(seed=3)
    torch.save(state, tmp_path / "rgb_imagenet.pt")
    assert main([*_argv(davis, "psnr", "ssim", "vfid"), "--device", "cpu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["vfid"] == pytest.approx(reference_vfid(davis, PROTOCOL, load_i3d(state=state), True),
                                                   rel=1e-4)
    assert doc["provenance"]["weights"]["i3d"]["verified"] == "mismatch"

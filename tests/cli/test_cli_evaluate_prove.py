"""``devil evaluate --protocol prove`` and ``devil report`` of its results, on a generated PROVE-layout
set with a random tiny DINOv2 (nothing downloaded)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers", reason="the removal metrics' DINOv2 needs the [removal] extra")

from devil_dataset.cli import main

from ..eval.prove_data import tiny_dinov2_folder, write_prove_layout


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_dinov2_folder(str(tmp_path_factory.mktemp("dino")), hidden_size=16, layers=1)


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return write_prove_layout(tmp_path_factory.mktemp("prove"), cases=("moving", "two_parts", "empty"))


def _argv(layout, model, *extra: str) -> list[str]:
    return ["evaluate", "--protocol", "prove", "--input-dir", str(layout[0]), "--pred-dir", str(layout[1]),
            "--mask-dir", str(layout[2]), "--metrics", "rc_s", "rc_t", "--dino-model", str(model), "--no-progress",
            *extra]


def test_json_summary_report_and_warnings(layout, model, capsys, tmp_path):
    out = tmp_path / "a.json"
    assert main([*_argv(layout, model, "--json"), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert set(doc["summary"]) == {"rc_s", "rc_t"} and doc["protocol"] == "prove"
    assert 0 < doc["summary"]["rc_s"] < 1 and doc["summary"]["rc_t"] > 0
    assert "rc_s: no score for empty" in captured.err
    assert "warning: masks lossy-compressed" in captured.err and "in 2 of 3 videos (moving, two_parts)" in captured.err
    second = tmp_path / "b.json"
    assert main([*_argv(layout, model, "--method-name", "b", "--parity", "corrected"), "--out", str(second)]) == 0
    capsys.readouterr()
    assert main(["report", str(out), str(second), "--no-plots", "--allow-mixed"]) == 0
    table = capsys.readouterr().out
    assert "rc_s ▲" in table and "rc_t ▼" in table


@pytest.mark.parametrize("argv, needle", [
    (["--protocol", "prove", "--metrics", "rc_s"], "needs --input-dir, --pred-dir and --mask-dir"),
    (["--input-dir", "."], "--input-dir: only with --protocol prove"),
    (["--protocol", "prove", "--input-dir", ".", "--pred-dir", ".", "--mask-dir", ".", "--metrics", "psnr"],
     "unknown metric of the prove protocol 'psnr'"),
])
def test_argument_errors(argv, needle, capsys):
    assert main(["evaluate", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_missing_model_exits_2_saying_how_to_get_it(layout, capsys):
    argv = _argv(layout, "nobody/no-such-dinov2")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not in the Hugging Face cache" in err and "save_pretrained" in err


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "devil evaluate --protocol prove --input-dir IN" in capsys.readouterr().out


def test_without_dinov2_the_default_metrics_skip_rc_s_and_rc_t_with_a_note(layout, capsys):
    """The protocols' one rule: a default metric whose model is missing is skipped with a note (as a missing I3D skips
    VFID); the background / masked metrics need no model and are scored."""
    argv = ["evaluate", "--protocol", "prove", "--input-dir", str(layout[0]), "--pred-dir", str(layout[1]),
            "--mask-dir", str(layout[2]), "--dino-model", "nobody/no-such-dinov2", "--no-progress", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["metrics"] == ["bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim"]
    assert doc["summary"]["rc_s"] is None and doc["summary"]["rc_t"] is None and doc["summary"]["bg_ssim"] > 0
    assert set(doc["skipped"]) == {"rc_s", "rc_t"} and "not in the Hugging Face cache" in doc["skipped"]["rc_s"]
    assert "devil evaluate: skipped metrics rc_s, rc_t: DINOv2 model 'nobody/no-such-dinov2'" in captured.err


def test_bad_result_files_exit_2_all_named_before_scoring(tmp_path, model, capsys):
    """Two bad results (a damaged file, a symlink loop) beside a good video: one error naming both, exit 2, nothing
    scored or written."""
    import os

    dirs = write_prove_layout(tmp_path / "set", cases=("moving", "two_parts", "small"), resized_result=None)
    (dirs[1] / "two_parts.mp4").write_bytes((dirs[1] / "two_parts.mp4").read_bytes()[:300])
    (dirs[1] / "small.mp4").unlink()
    os.symlink(dirs[1] / "small.mp4", dirs[1] / "small.mp4")
    out = tmp_path / "r.json"
    assert main([*_argv(dirs, model), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "2 bad input file(s), nothing scored" in err
    assert f"{dirs[1] / 'two_parts.mp4'}: unreadable video" in err and f"{dirs[1] / 'small.mp4'}: cannot be read" in err
    assert not out.exists()

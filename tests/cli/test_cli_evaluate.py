"""``devil evaluate`` and ``devil report`` through the command line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.release_format import read_frame_pngs, write_frame_pngs, write_mask_pngs

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


@pytest.mark.parametrize("flags, modes", [
    ([], ("release", "release", "release")),
    (["--parity", "corrected"], ("corrected", "standard", "corrected")),
    (["--parity", "corrected", "--ssim-mode", "release"], ("corrected", "release", "corrected")),
    (["--pvcs-mode", "corrected"], ("release", "release", "corrected")),
])
def test_evaluate_parity_flag_sets_the_modes_and_results_record_them(tmp_path, capsys, flags, modes):
    gt, pred = _write_clips(tmp_path)
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "ssim", "--json",
                 "--no-progress", *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    options = doc["provenance"]["options"]
    assert (options["parity"], options["ssim_mode"], options["pvcs_mode"]) == modes
    assert doc["provenance"]["metrics"]["ssim"]["data_range"] == {"release": 2.0, "standard": 1.0}[modes[1]]


def test_pixel_backend_flag_gives_the_numpy_values_and_is_recorded(tmp_path, capsys):
    """--pixel-backend torch (on the CPU: the GPU path's code) scores as numpy does and says so in the provenance."""
    gt, pred = _write_clips(tmp_path)
    docs = {}
    for backend in ("numpy", "torch"):
        assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "ssim", "pcons",
                     "warp_error", "--flow", "dis", "--device", "cpu", "--pixel-backend", backend, "--json",
                     "--no-progress"]) == 0
        docs[backend] = json.loads(capsys.readouterr().out)
    assert docs["torch"]["provenance"]["options"]["pixel_backend"] == "torch"
    assert docs["torch"]["provenance"]["metrics"]["ssim"]["pixel_backend"] == "torch"
    for key, value in docs["numpy"]["summary"].items():
        assert docs["torch"]["summary"][key] == pytest.approx(value, abs=1e-9, rel=0)


def test_evaluate_refuses_an_unknown_parity(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--gt-dir", ".", "--pred-dir", ".", "--parity", "strict"])
    assert exc.value.code == 2 and "invalid choice: 'strict'" in capsys.readouterr().err


def test_evaluate_human_summary(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path)
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr",
                 "--method-name", "M", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "M  slice=-  videos=2" and lines[1].split()[0] == "psnr"
    assert "95% bootstrap BCa" in lines[1]  # the value's interval over the videos, as in the results file


def test_evaluate_validation_error_exit_2(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path, n=3)
    (pred / "c0" / "frame_0002_pred.png").unlink()
    import shutil

    shutil.rmtree(pred / "c2")
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "2 of 3 clips cannot be evaluated" in err
    assert "c0: 2 predicted frames (frame_%04d_pred.png), expected 3" in err
    assert "c2: prediction missing" in err


@pytest.mark.parametrize("argv,needle", [
    (["--gt-dir", "."], "directory mode needs --gt-dir and --pred-dir"),
    (["--dataset", "org/devil", "--gt-dir", "."], "give either"),
    (["--dataset", "org/devil"], "dataset mode needs"),
])
def test_evaluate_argument_errors(argv, needle, capsys):
    assert main(["evaluate", *argv]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("argv,needle", [
    (["--dataset", "org/devil", "--config", "c", "--predictions", "{pred}", "{gt}", "--method-name", "m"],
     "--method-name names one method"),
    (["--dataset", "org/devil", "--config", "c", "--predictions", "a={pred}", "--method-name", "m"],
     "--method-name and --predictions NAME=PATH both name the method"),
    (["--dataset", "org/devil", "--config", "c", "--predictions", "{pred}", "{gt}", "--out", "{file}"],
     "file: exists and is not a directory"),  # the results folder's lock, taken first
    (["--gt-dir", "{gt}", "--pred-dir", "{pred}", "--out", "{gt}"], "is a directory; --out takes a file name"),
    (["--gt-dir", "{gt}", "--pred-dir", "{pred}", "--second-inpainter", "nope"], "--second-inpainter: unknown"),
    (["--dataset", "org/devil", "--config", "c", "--predictions", "{pred}", "--no-gt-cache", "--gt-cache", "{gt}"],
     "--no-gt-cache: cannot be combined"),
])
def test_evaluate_refuses_bad_flag_combinations_before_scoring(argv, needle, tmp_path, capsys):
    gt, pred = _write_clips(tmp_path, n=1)
    (tmp_path / "file").write_text("x")
    paths = {"gt": gt, "pred": pred, "file": tmp_path / "file"}
    assert main(["evaluate", *(a.format(**paths) for a in argv), "--no-progress"]) == 2
    out = capsys.readouterr()
    assert needle in out.err and out.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "gt", "method_x"]  # nothing written


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
    # only what was computed is shown: LPIPS has no value anywhere, so it has no column
    assert "| camera_motion_low | A | 30.00 |\n" in out and "LPIPS" not in out.split("| attribute |")[0]
    # symmetric relative change 2 (hi - lo) / (|hi| + |lo|): 2 * 3 / 63, -2 * 1 / 61
    assert "| camera_motion | A | +9.52% |" in out and "| camera_motion | B | -3.28% |" in out
    assert (tmp_path / "rep" / "table1.tsv").read_text().splitlines()[0].startswith("slice\tmethod\tPSNR ▲")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["report", str(bad)]) == 2
    assert "not a devil results file" in capsys.readouterr().err


# ------------------------------------------------------------------------- evaluation input checks


def test_every_offender_is_named_before_scoring(tmp_path, capsys):
    """Item 8: five different faults in five clips -> five clips named (one good clip), exit 2, no traceback."""
    from PIL import Image

    gt, pred = _write_clips(tmp_path, n=6)
    (pred / "c0" / "frame_0002_pred.png").unlink()                               # frame count
    Image.new("RGB", (10, 10)).save(pred / "c1" / "frame_0001_pred.png")          # middle frame of another size
    (pred / "c2" / "frame_0000_pred.png").write_bytes(b"not a png")              # unreadable first frame
    (pred / "c3" / "frame_0001_pred.png").rename(pred / "c3" / "frame_0007_pred.png")  # gap in the numbering
    import shutil

    shutil.rmtree(pred / "c4")                                                   # missing
    rc = main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "5 of 6 clips cannot be evaluated" in err
    for clip in ("c0", "c1", "c2", "c3", "c4"):
        assert f"  {clip}: " in err
    assert "  c5: " not in err
    assert "c1/frame_0001_pred.png: 10x10" in err and "c2/frame_0000_pred.png" in err


def test_middle_frame_of_another_size_names_the_file(tmp_path, capsys):
    """Item 8: one middle frame of a different size: a clear error naming that file (was a numpy traceback)."""
    from PIL import Image

    gt, pred = _write_clips(tmp_path, n=1)
    Image.new("RGB", (64, 50)).save(pred / "c0" / "frame_0001_pred.png")
    rc = main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "frame_0001_pred.png: 64x50, expected 64x56" in err and "Traceback" not in err


def test_out_under_an_existing_file_fails_before_scoring(tmp_path, capsys, monkeypatch):
    """Item 8: `--out FILE/r.json` is refused before any metric runs (the results were lost after scoring)."""
    import devil_dataset.eval.protocols.devil.run as ev_mod

    gt, pred = _write_clips(tmp_path, n=1)
    (tmp_path / "afile").write_text("x")
    called = []
    monkeypatch.setattr(ev_mod, "evaluate_directory", lambda *a, **k: called.append(1))
    rc = main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress",
               "--out", str(tmp_path / "afile" / "sub" / "r.json")])
    err = capsys.readouterr().err
    assert rc == 2 and called == [] and "afile" in err and "not a directory" in err


@pytest.mark.parametrize("mode,needle", [
    ("I;16", "16-bit"), ("RGB;16", "16-bit"), ("RGBA", "alpha"), ("1", "1-bit"), ("LA", "alpha"),
])
def test_prediction_modes_other_than_8bit_rgb_or_l_are_refused(tmp_path, capsys, mode, needle):
    """Item 9: a 16-bit PNG was scored as 8-bit (PSNR 15.13 instead of 26.87); every other mode is named."""
    from PIL import Image

    gt, pred = _write_clips(tmp_path, n=1)
    path = pred / "c0" / "frame_0001_pred.png"
    if mode == "I;16":
        arr = (np.asarray(Image.open(path).convert("L"), np.uint16) * 257)
        Image.fromarray(arr).save(path)  # PIL writes uint16 as mode I;16 (a 16-bit grey PNG)
        assert Image.open(path).mode.startswith("I")
    elif mode == "RGB;16":  # 48-bit RGB PNG: Pillow opens it as 8-bit "RGB" (the high bytes)
        import cv2

        rgb = np.asarray(Image.open(path).convert("RGB"), np.uint16) * 257
        cv2.imwrite(str(path), rgb[..., ::-1])
        assert Image.open(path).mode == "RGB"
    else:
        Image.open(path).convert(mode).save(path)
    rc = main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "frame_0001_pred.png" in err and needle in err


def test_palette_and_grey_predictions_are_read_exactly(tmp_path, capsys):
    """Item 9: mode P (palette) and L (8-bit grey) are 8-bit images converted exactly to RGB, and scored."""
    from PIL import Image

    from devil_dataset.eval.scoring.inputs import read_prediction_frame

    gt, pred = _write_clips(tmp_path, n=1)
    grey = pred / "c0" / "frame_0000_pred.png"
    Image.open(grey).convert("L").save(grey)
    pal = pred / "c0" / "frame_0001_pred.png"
    Image.open(pal).convert("P").save(pal)
    im = Image.open(pal)
    assert im.mode == "P"
    assert np.array_equal(read_prediction_frame(pal), np.asarray(im.convert("RGB")))
    g = read_prediction_frame(grey)
    assert g.shape == (56, 64, 3) and np.array_equal(g[..., 0], np.asarray(Image.open(grey)))
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"]) == 0


def test_float_rows_with_nan_are_refused(tmp_path):
    """Item 9: float frames (NaN among them) were cast to uint8 and scored as black; now refused by clip."""
    from devil_dataset.core.errors import DevilError
    from devil_dataset.eval.scoring.evaluate import evaluate_dataset

    gt, pred = _write_clips(tmp_path, n=1)
    frames = np.full((3, 56, 64, 3), np.nan, np.float32)
    rows = [{"clip_id": "c0", "frames": frames, "hole": np.zeros((3, 56, 64), bool)}]
    with pytest.raises(DevilError, match="c0.*float32"):
        evaluate_dataset("ds", "all", pred, ["psnr"], rows=rows, progress=False)


def test_perfect_predictions_report_inf_not_a_sentinel(tmp_path, capsys):
    """Every video infinite -> the summary, the JSON and `devil report` say inf (not 1.8e308), and
    the summary says how many videos were infinite; with a finite video the release's clipping applies."""
    gt, _ = _write_clips(tmp_path)
    for c in ("c0", "c1"):
        write_frame_pngs(read_frame_pngs(gt / c, "gt"), tmp_path / "perfect" / c, "pred")
    out = tmp_path / "perfect.json"
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(tmp_path / "perfect"), "--metrics", "psnr",
                 "--method-name", "P",
                 "--slice", "fg_size_low", "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "psnr               inf" in text and "179769" not in text
    assert "psnr: 2 of 2 videos infinite (an identical frame or patch), no finite value to clip to: reported as " \
           "inf" in text
    doc = json.loads(out.read_text())
    assert doc["summary"]["psnr"] == "inf" and doc["videos"]["c0"]["psnr"] == "inf"
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    table = capsys.readouterr().out
    assert "| fg_size_low | P | inf \u221e2 |" in table and "179769" not in table  # 2 infinite videos, marked


def test_one_infinite_video_is_clipped_and_counted(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path)
    import shutil

    shutil.rmtree(pred / "c0")
    write_frame_pngs(read_frame_pngs(gt / "c0", "gt"), pred / "c0", "pred")
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--json",
                 "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["clipped"] == {"psnr": ["c0"]} and doc["videos"]["c0"]["psnr"] == doc["videos"]["c1"]["psnr"]
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--no-progress"]) == 0
    assert "psnr: 1 of 2 videos infinite (an identical frame or patch), clipped to the best finite " \
           "value (the release's rule)" in capsys.readouterr().out


def test_evaluate_precision_flag_reaches_the_options_and_unknown_is_refused(tmp_path, capsys):
    gt, pred = _write_clips(tmp_path)
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr", "--json",
                 "--no-progress", "--precision", "bf16"]) == 0
    assert json.loads(capsys.readouterr().out)["provenance"]["options"]["precision"] == "bf16"
    assert main(["evaluate", "--gt-dir", str(gt), "--pred-dir", str(pred), "--metrics", "psnr",
                 "--no-progress", "--precision", "bfloat16"]) == 2
    assert "--precision: unknown precision 'bfloat16'; did you mean" in capsys.readouterr().err

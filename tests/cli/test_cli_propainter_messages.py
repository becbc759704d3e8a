"""On `devil evaluate --protocol propainter`: layout errors name what was found, videos
left out are named with the reason, AppleDouble ``._*`` files are ignored and reported, and temporary files a killed
run left beside ``--out`` are removed by the next run (only the writer's own, only stale ones)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from devil_dataset.cli import main
from devil_dataset.core.atomic import _host_tag

from ..eval.davis_data import TEST_SIZE, write_davis_layout


def _argv(data, *extra: str) -> list[str]:
    return ["evaluate", "--protocol", "propainter", "--gt-dir", str(data.gt_dir), "--mask-dir", str(data.mask_dir),
            "--pred-dir", str(data.pred_dir), "--metrics", "psnr", "--no-progress", *extra]


def _small(monkeypatch):
    """Score at the test size (the generated outputs are TEST_SIZE)."""
    from devil_dataset.eval.protocols.propainter import run as propainter_run

    original = propainter_run.evaluate_propainter

    def at_test_size(*args, **kwargs):
        return original(*args, **{**kwargs, "size": TEST_SIZE})

    monkeypatch.setattr(propainter_run, "evaluate_propainter", at_test_size)  # imported when the command runs


@pytest.mark.parametrize("folder, needle", [
    ("mask_dir", "lacks 00000.png, 00001.png (it holds 2 .jpg (00000.jpg, 00001.jpg); masks must be PNG files"),
    ("pred_dir", "0 PNG frames in {}, expected 2 (it holds 2 .jpg (00000.jpg, 00001.jpg); outputs are read as PNG "
                 "only"),
])
def test_jpeg_masks_and_outputs_are_named(tmp_path, capsys, folder, needle):
    """Masks or outputs saved as JPEG: the error says what the folder holds, not only what it lacks."""
    data = write_davis_layout(tmp_path, (2,))
    for png in sorted((getattr(data, folder) / "v0").glob("*.png")):
        shutil.move(png, png.with_suffix(".jpg"))
    assert main(_argv(data)) == 2
    assert needle.format(data.pred_dir / "v0") in capsys.readouterr().err


def test_gt_dir_at_the_parent_of_jpegimages_says_where_it_looked(tmp_path, capsys):
    data = write_davis_layout(tmp_path, (2,))
    nested = data.gt_dir / "JPEGImages"
    (nested / "480p").mkdir()
    shutil.move(nested / "v0", nested / "480p" / "v0")
    assert main(_argv(data)) == 2
    err = capsys.readouterr().err
    assert f"v0: no ground-truth folder {nested / 'v0'} (looked in {nested}/ (the JPEGImages/ of --gt-dir " \
           f"{data.gt_dir}, used when present); JPEGImages/ holds the folder 480p); {nested / '480p' / 'v0'} exists: " \
           f"give --gt-dir {nested / '480p'}" in err


def test_video_without_masks_and_appledouble_files_are_named(tmp_path, capsys, monkeypatch):
    _small(monkeypatch)
    data = write_davis_layout(tmp_path, (2, 3, 2))
    shutil.rmtree(data.mask_dir / "v1")
    _composited_outputs(data)
    (data.mask_dir / "v0" / "._00000.png").write_bytes(b"\x00\x05\x16\x07")  # AppleDouble header, not a PNG
    out = tmp_path / "r.json"
    assert main([*_argv(data, "--out", str(out))]) == 0
    captured = capsys.readouterr()
    err = captured.err
    assert f"left out 1 ground-truth video without masks: v1: no mask folder {data.mask_dir / 'v1'}" in err
    assert "videos=2  left out=1 (v1)" in captured.out  # the summary line names it too
    assert f"ignored 1 hidden file (._00000.png in {data.mask_dir / 'v0'}) in the mask folders" in err
    doc = json.loads(out.read_text())
    assert doc["num_videos"] == 2 and set(doc["left_out"]) == {"v1"} and len(doc["warnings"]) == 2


def test_stale_temporaries_beside_out_are_removed(tmp_path, capsys, monkeypatch):
    _small(monkeypatch)
    data = write_davis_layout(tmp_path / "d", (2,))
    out = tmp_path / "r.json"
    killed = tmp_path / f".tmp-r.json.{_host_tag()}.999999999.k1lled"  # a run killed while writing r.json
    older = tmp_path / ".tmp-r.json.x7f3a_q"  # an old writer's name, untouched for two days
    running = tmp_path / f".tmp-r.json.{_host_tag()}.{os.getppid()}.alive1"  # a live process's write
    foreign = tmp_path / ".tmp-notes.json.zz"  # another file's temporary
    for p in (killed, older, running, foreign):
        p.write_text("{")
    os.utime(older, (0, 0))
    assert main([*_argv(data, "--out", str(out))]) == 0
    assert out.is_file() and not killed.exists() and not older.exists()
    assert running.exists() and foreign.exists()


def test_default_metrics_skip_vfid_without_weights_with_a_note(tmp_path, capsys, monkeypatch):
    """The default metrics (psnr ssim vfid) without the I3D weights: vfid is skipped up front with
    the missing file named, the rest is scored (exit 0)."""
    _small(monkeypatch)
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    data = write_davis_layout(tmp_path / "d", (2,))
    argv = [a for a in _argv(data, "--json") if a not in ("--metrics", "psnr")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "skipped metric vfid: rgb_imagenet.pt: not in the weights cache" in captured.err
    doc = json.loads(captured.out)
    assert doc["metrics"] == ["psnr", "ssim"] and doc["summary"]["vfid"] is None and doc["summary"]["psnr"] > 0
    assert doc["skipped"]["vfid"].startswith("rgb_imagenet.pt: not in the weights cache")


def test_asked_for_metric_without_weights_exits_2_before_any_work(tmp_path, capsys, monkeypatch):
    from devil_dataset.eval.protocols.propainter import run as propainter_run

    def no_work(*args, **kwargs):
        raise AssertionError("the pixel pass ran")

    monkeypatch.setattr(propainter_run, "score_video_frames", no_work)
    monkeypatch.setattr(propainter_run, "list_davis_videos", no_work)
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    data = write_davis_layout(tmp_path / "d", (2,))
    assert main([*_argv(data), "--metrics", "ssim", "vfid"]) == 2
    assert "metric vfid: rgb_imagenet.pt: not in the weights cache" in capsys.readouterr().err


def _composited_outputs(data) -> None:
    """Outputs as ProPainter / E2FGVI save them: the ground truth outside the (dilated) hole, a fill inside."""
    import cv2

    from devil_dataset.eval.protocols.propainter.kernels import dilate_hole
    from devil_dataset.eval.protocols.propainter.layout import list_davis_videos, read_davis_video

    for video in list_davis_videos(data.gt_dir, data.mask_dir):
        gt, hole = read_davis_video(video, TEST_SIZE)
        pred = gt.copy()
        pred[dilate_hole(hole)] = 128
        for i, p in enumerate(sorted((data.pred_dir / video.name).glob("*.png"))):
            cv2.imwrite(str(p), cv2.cvtColor(pred[i], cv2.COLOR_RGB2BGR))


def _invert_masks(data) -> None:
    import cv2

    for png in data.mask_dir.rglob("*.png"):
        cv2.imwrite(str(png), 255 - cv2.imread(str(png), cv2.IMREAD_GRAYSCALE))


def test_inverted_masks_are_warned_with_the_fix(tmp_path, capsys, monkeypatch):
    """Masks white = known read as white = hole (hole ~ 90% of every frame): the run warns, names
    the videos and says how to fix it (it used to print PSNR 41.93 instead of 32.00 and say nothing)."""
    _small(monkeypatch)
    data = write_davis_layout(tmp_path, (3, 2))
    _composited_outputs(data)
    out = tmp_path / "right.json"
    assert main(_argv(data, "--out", str(out))) == 0
    assert "were the masks read inverted" not in capsys.readouterr().err
    right = json.loads(out.read_text())
    _invert_masks(data)
    assert main(_argv(data, "--out", str(out))) == 0
    err = capsys.readouterr().err
    assert f"warning: were the masks read inverted? {data.mask_dir}: 2 of 2 videos (v0: the hole covers" in err
    assert "invert them (e.g. `mogrify -negate *.png`)" in err
    wrong = json.loads(out.read_text())
    assert wrong["summary"]["psnr"] != right["summary"]["psnr"] and "inverted" in wrong["warnings"][0]

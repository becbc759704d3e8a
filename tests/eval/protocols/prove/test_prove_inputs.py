"""What ``evaluate_prove`` reads, said in the results and on the console; bad inputs named before scoring: 0/1 masks
(never read as empty), inverted masks, lossy (JPEG) masks apart from a few grey edges, a cut-short video, a result
shorter than its input, an unreadable link, several bad files in one error, progress inside a video. Tiny PNG /
mp4 sets and a deterministic stand-in network (no DINOv2 needed)."""
from __future__ import annotations

import math
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.protocols.prove.run import evaluate_prove, removal_lines

W, H, T = 84, 70, 4


def features(images):
    """Deterministic patch features: each 14x14 patch's mean colour and its spread (a stand-in for DINOv2)."""
    out = []
    for im in images:
        h, w = im.shape[0] // 14, im.shape[1] // 14
        p = im[:h * 14, :w * 14].astype(np.float64).reshape(h, 14, w, 14, 3)
        out.append(np.concatenate([p.mean((1, 3)), p.std((1, 3))], -1))
    return np.stack(out)


def _scene(t: int) -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    return np.stack([(xx * 3 + t * 5) % 255, (yy * 2 + 30) % 255, ((xx + yy) * 2) % 255], -1).astype(np.uint8)


def _mask(t: int) -> np.ndarray:
    m = np.zeros((H, W), np.uint8)
    m[20:48, 18 + 3 * t:46 + 3 * t] = 255
    return m


def _write_folder(folder: Path, frames, suffix: str = ".png") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for t, f in enumerate(frames):
        image = f if f.ndim == 2 else cv2.cvtColor(f, cv2.COLOR_RGB2BGR)
        assert cv2.imwrite(str(folder / f"{t:05d}{suffix}"), image)


def write_set(root: Path, names=("cat",), masks=None, frames: int = T) -> tuple[Path, Path, Path]:
    """PNG frame folders: inputs (a red object), results (the object filled with noise), masks (white = object, or
    ``masks(t)`` per frame)."""
    rng = np.random.default_rng(0)
    dirs = tuple(root / d for d in ("inputs", "results", "masks"))
    for name in names:
        ins, outs, ms = [], [], []
        for t in range(frames):
            m = _mask(t)
            scene = _scene(t)
            obj = scene.copy()
            obj[m > 0] = (220, 30, 30)
            out = scene.copy()
            out[m > 0] = rng.integers(0, 255, (int((m > 0).sum()), 3))
            ins.append(obj)
            outs.append(out)
            ms.append(masks(t) if masks is not None else m)
        for d, frames_of in zip(dirs, (ins, outs, ms)):
            _write_folder(d / name, frames_of)
    return dirs


def _run(dirs, metrics=("rc_s", "rc_t", "bg_psnr"), **kw):
    return evaluate_prove(*dirs, list(metrics), network=features, **kw)


def write_h264(path: Path, frames: int = 6) -> Path:
    """A lossless H.264 mp4 with its index first (``+faststart``), one keyframe per frame."""
    import av

    rng = np.random.default_rng(1)
    with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as c:
        s = c.add_stream("libx264", rate=10)
        s.width, s.height, s.pix_fmt, s.options = W, H, "yuv420p", {"crf": "0", "g": "1"}
        for _ in range(frames):
            f = av.VideoFrame.from_ndarray(rng.integers(0, 255, (H, W, 3), dtype=np.uint8), format="rgb24")
            for pk in s.encode(f):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    return path


def test_zero_one_masks_are_read_as_objects_with_the_values_of_0_255_masks(tmp_path):
    """DAVIS-style 0/1 PNG masks: PROVE's > 127 would find no object (RC-S / RC-T n/a, bg_psnr over the whole frame);
    they are scaled to 0/255, scored as the same masks at 0/255 are, and the results and console say so."""
    ref = _run(write_set(tmp_path / "a"))
    dirs = write_set(tmp_path / "b", masks=lambda t: _mask(t) // 255)
    doc = _run(dirs)
    assert doc["videos"]["cat"] == ref["videos"]["cat"] and not math.isnan(doc["videos"]["cat"]["rc_s"])
    assert doc["input_notes"]["cat"]["mask_values"]["kind"] == "zero_one"
    lines = removal_lines(doc)
    assert any(line.startswith("masks hold 0/1 (not 0/255) in 1 of 1 videos (cat)") for line in lines)
    assert not any("not binary" in line for line in lines)


def test_davis_palette_masks_are_read_by_index(tmp_path):
    """DAVIS annotation PNGs (palette, index 1 = object, dark red): decoded to colours their grey is 38, no object
    above 127; read by index they score as the same masks at 0/255."""
    from PIL import Image

    ref = _run(write_set(tmp_path / "a"))
    dirs = write_set(tmp_path / "b")
    palette = [0, 0, 0, 128, 0, 0, 0, 128, 0] + [0] * (256 * 3 - 9)
    for png in sorted((dirs[2] / "cat").glob("*.png")):
        im = Image.fromarray((cv2.imread(str(png), cv2.IMREAD_GRAYSCALE) > 127).astype(np.uint8), "P")
        im.putpalette(palette)
        im.save(png)
    doc = _run(dirs)
    assert doc["videos"]["cat"] == ref["videos"]["cat"]
    assert doc["input_notes"]["cat"]["mask_values"]["kind"] == "palette"
    assert any(line.startswith("masks are palette PNGs (DAVIS annotations) in 1 of 1 videos (cat)")
               for line in removal_lines(doc))


def test_inverted_masks_get_the_packages_inverted_mask_warning(tmp_path):
    dirs = write_set(tmp_path, masks=lambda t: 255 - _mask(t))
    doc = _run(dirs, ("bg_psnr",))
    assert doc["input_notes"]["cat"]["inverted_mask"].startswith("the hole covers 8")
    assert any(line.startswith(f"warning: were the masks read inverted? {dirs[2]}: 1 of 1 video (cat: the hole")
               and "mogrify -negate" in line for line in removal_lines(doc))


def test_lossy_masks_are_named_apart_from_a_few_grey_edges(tmp_path):
    """JPEG masks (background 1, most pixels near but not 0/255) get a warning saying what was read; a PNG mask
    with a few grey edge pixels keeps the mild note. Both are read as PROVE reads them (values as their code)."""
    edged = write_set(tmp_path / "edges", masks=lambda t: np.where(np.arange(W)[None, :] == 18 + 3 * t,
                                                                     np.uint8(128) * (_mask(t) > 0), _mask(t)))
    jpeg = write_set(tmp_path / "jpeg")
    for folder in (jpeg[2] / "cat",):
        for png in sorted(folder.glob("*.png")):
            m = cv2.imread(str(png), cv2.IMREAD_GRAYSCALE)
            cv2.imwrite(str(png.with_suffix(".jpg")), np.maximum(m, 1), [cv2.IMWRITE_JPEG_QUALITY, 75])
            png.unlink()
    a, b = _run(edged), _run(jpeg)
    assert a["input_notes"]["cat"]["mask_values"]["kind"] == "grey_edges"
    reading = b["input_notes"]["cat"]["mask_values"]
    assert reading["kind"] == "lossy" and reading["faint_pixels"] > 0.5 and reading["grey_pixels"] > 0.5
    lines_a, lines_b = removal_lines(a), removal_lines(b)
    assert any(line.startswith("masks not binary in 1 of 1 videos (4 frames; cat)") for line in lines_a)
    assert not any(line.startswith("warning:") for line in lines_a)
    assert any(line.startswith("warning: masks lossy-compressed") and "RC-S's windows count every nonzero pixel"
               in line for line in lines_b)
    assert not any("not binary" in line for line in lines_b)


def test_a_cut_short_video_is_named_before_scoring(tmp_path):
    dirs = write_set(tmp_path)
    video = write_h264(tmp_path / "whole.mp4")
    data = video.read_bytes()
    for d in dirs:
        (d / "cat.mp4").write_bytes(data)
        for f in (d / "cat").iterdir():
            f.unlink()
        (d / "cat").rmdir()
    (dirs[1] / "cat.mp4").write_bytes(data[:int(len(data) * 0.6)])
    with pytest.raises(DevilError, match=r"results/cat.mp4: damaged or cut-short video: its container declares 6 "
                                         r"frames, [1-5] decode"):
        _run(dirs)


def test_a_damaged_video_carries_libavs_reason_attributed(tmp_path, capfd):
    """libav's own lines ("Invalid NAL unit size", "moov atom not found") reach the user inside the error that names
    the file, not as unattributed lines on the terminal."""
    dirs = write_set(tmp_path)
    video = write_h264(tmp_path / "whole.mp4")
    for d in dirs:
        (d / "cat.mp4").write_bytes(video.read_bytes())
        for f in (d / "cat").iterdir():
            f.unlink()
        (d / "cat").rmdir()
    (dirs[1] / "cat.mp4").write_bytes(video.read_bytes()[:300])  # the header only: no moov atom
    with pytest.raises(DevilError) as caught:
        _run(dirs)
    line = next(x for x in str(caught.value).splitlines() if "results/cat.mp4" in x)
    assert "; libav: " in line
    assert "moov atom not found" not in capfd.readouterr().err


def test_a_result_shorter_than_its_input_is_noted(tmp_path):
    dirs = write_set(tmp_path, frames=6)
    for f in sorted((dirs[1] / "cat").iterdir())[3:]:
        f.unlink()
    doc = _run(dirs)
    assert doc["frame_counts"]["cat"] == 3
    assert doc["input_notes"]["cat"]["frames_cut"] == {"inputs": 6, "results": 3, "masks": 6, "kept": 3}
    assert "cat: frame counts differ (input 6, result 3, mask 6): scored on the first 3, as PROVE does" \
        in removal_lines(doc)


def test_a_symlink_loop_is_a_bad_input_not_a_missing_one(tmp_path):
    dirs = write_set(tmp_path, names=("cat", "dog"))
    for f in (dirs[1] / "dog").iterdir():
        f.unlink()
    (dirs[1] / "dog").rmdir()
    os.symlink(dirs[1] / "dog.mp4", dirs[1] / "dog.mp4")
    with pytest.raises(DevilError, match=r"results/dog.mp4: cannot be read \(Too many levels of symbolic links\)"):
        _run(dirs)


def test_every_bad_result_is_named_in_one_error_before_any_video_is_scored(tmp_path):
    dirs = write_set(tmp_path, names=("a", "b", "c"))
    for name, content in (("b", b"not a video"), ("c", b"")):
        for f in (dirs[1] / name).iterdir():
            f.unlink()
        (dirs[1] / name).rmdir()
        (dirs[1] / f"{name}.mp4").write_bytes(content)
    calls = []

    def counting(images):
        calls.append(len(images))
        return features(images)

    with pytest.raises(DevilError) as err:
        evaluate_prove(*dirs, ["rc_s"], network=counting)
    text = str(err.value)
    assert text.startswith("2 bad input file(s), nothing scored:")
    assert "results/b.mp4: unreadable video" in text and "results/c.mp4: unreadable video" in text
    assert calls == []  # a (the good video, first in name order) was never scored


def test_progress_counts_the_crops_inside_a_video(tmp_path, capsys):
    dirs = write_set(tmp_path)
    doc = _run(dirs, ("rc_s", "rc_t"), progress=True)
    err = capsys.readouterr().err
    crops = doc["video_counts"]["cat"]["forward_crops"]
    assert f"prove cat: 0/{crops} crops" in err and f"prove cat: {crops}/{crops} crops done" in err

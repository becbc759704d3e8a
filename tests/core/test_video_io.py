"""Decoding/encoding without system FFmpeg: round trip, determinism, decoder agreement, errors."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from devil_dataset.core import video_io
from devil_dataset.core.errors import DevilError
from devil_dataset.core.video_io import (
    decord_available,
    iter_frames,
    load_clip,
    probe_video,
    read_video,
    write_video,
)


def test_round_trip_is_close_and_keeps_shape_and_rate(tmp_path, curate_pan):
    frames = curate_pan(0, 20).mean(axis=3, keepdims=True).repeat(3, axis=3).astype(np.uint8)  # luma detail
    path = write_video(tmp_path / "a.mp4", frames, fps=Fraction(30000, 1001))
    info = probe_video(path)
    assert (info.width, info.height, info.frame_count) == (160, 96, 20)
    assert info.fps == Fraction(30000, 1001)
    back = load_clip(path)
    assert back.shape == frames.shape and back.dtype == np.uint8
    # CRF 18 on a detailed texture: a few grey levels of error at most on average
    assert np.abs(back.astype(int) - frames).mean() < 3.0


def test_flat_colours_survive_yuv420(tmp_path):
    # limited-range BT.601 in and out: a flat colour comes back within 3 levels (chroma detail is subsampled)
    frames = np.zeros((3, 32, 64, 3), np.uint8) + np.array([200, 30, 40], np.uint8)
    back = load_clip(write_video(tmp_path / "flat.mp4", frames, fps=25))
    assert np.abs(back.astype(int) - frames).max() <= 3


def test_encoding_is_byte_identical_and_decoding_repeatable(tmp_path, curate_pan):
    frames = curate_pan(3, 12)
    a = write_video(tmp_path / "a.mp4", frames, fps=25).read_bytes()
    b = write_video(tmp_path / "b.mp4", frames, fps=25).read_bytes()
    assert a == b
    assert np.array_equal(load_clip(tmp_path / "a.mp4"), load_clip(tmp_path / "a.mp4"))
    assert not list(tmp_path.glob(".tmp-*")), "atomic write left a temporary file"


@pytest.mark.skipif(not decord_available(), reason="decord not installed")
def test_decord_and_pyav_decode_identical_frames(tmp_path, curate_pan):
    path = write_video(tmp_path / "a.mp4", curate_pan(4, 10), fps=25)
    a = np.stack(list(iter_frames(path, backend="pyav")))
    b = np.stack(list(iter_frames(path, backend="decord")))
    assert np.array_equal(a, b)
    assert np.array_equal(a, load_clip(path))


def test_decord_narrow_video_falls_back_to_pyav(tmp_path):
    # decord 0.6 misreads frames narrower than 64 px (4 channels); iter_frames must still give RGB
    frames = np.random.default_rng(0).integers(0, 255, (3, 32, 48, 3), dtype=np.uint8)
    path = write_video(tmp_path / "narrow.mp4", frames, fps=25)
    out = np.stack(list(iter_frames(path, backend="auto")))
    assert out.shape == (3, 32, 48, 3)


def test_odd_size_uses_444_and_round_trips(tmp_path, curate_texture):
    frames = np.stack([curate_texture(5, 75, 41)] * 4)
    path = write_video(tmp_path / "odd.mp4", frames, fps=25)
    back = load_clip(path)
    assert back.shape == (4, 41, 75, 3)
    assert np.abs(back.astype(int) - frames).mean() < 5.0
    import av

    with av.open(str(path)) as c:
        assert c.streams.video[0].codec_context.pix_fmt == "yuv444p"


def test_read_video_window_and_scaled_decode(tmp_path, curate_pan):
    frames = curate_pan(6, 10)
    path = write_video(tmp_path / "a.mp4", frames, fps=25)
    full = read_video(path, backend="pyav")
    part = read_video(path, backend="pyav", start=3, count=4)
    assert np.array_equal(part, full[3:7])
    small = list(iter_frames(path, backend="pyav", size=(80, 48)))
    assert len(small) == 10 and small[0].shape == (48, 80, 3)


def test_errors_name_the_file(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"this is not a video" * 50)
    with pytest.raises(DevilError, match="junk.mp4"):
        probe_video(junk)
    with pytest.raises(DevilError, match="junk.mp4"):
        load_clip(junk)
    with pytest.raises(DevilError, match="no such clip"):
        load_clip(tmp_path / "missing.mp4")
    with pytest.raises(ValueError):
        write_video(tmp_path / "bad.mp4", np.zeros((2, 16, 16), np.uint8), fps=25)
    with pytest.raises(ValueError, match="unknown video backend"):
        list(iter_frames(junk, backend="opencv"))


def test_load_clip_reads_a_frame_folder(tmp_path, curate_texture):
    from PIL import Image

    folder = tmp_path / "clip"
    folder.mkdir()
    frames = [curate_texture(i, 40, 24) for i in range(3)]
    for i, f in enumerate(frames):
        Image.fromarray(f).save(folder / f"frame_{i:04d}_gt.png")
    assert np.array_equal(load_clip(folder), np.stack(frames))


def test_encoder_settings_are_fixed():
    # the reproducibility promise depends on these: a change must be deliberate (and documented)
    assert (video_io.ENCODER_CODEC, video_io.ENCODER_CRF, video_io.ENCODER_THREADS) == ("libx264", 18, 2)



_SUBPROCESS_ENCODE = """
import sys, numpy as np
from devil_dataset.builder import samples
from devil_dataset.core import video_io
samples._make_world(samples.scene("jitter_static"), (854, 480), 0)   # leaves the heap full of stale data
frames = np.load(sys.argv[1])
video_io.write_video(sys.argv[2], frames, fps=25)
"""


def test_encoding_does_not_depend_on_heap_state(tmp_path):
    """libx264 reads heap memory it never initialised. Without ``video_io._zeroed_heap`` an 854x480 encode that
    follows the renderer's large allocations gave different bytes on every run (measured); with it, a fresh
    process, a dirty process and this (pytest) process all write the same bytes."""
    import subprocess
    import sys

    from devil_dataset.builder import samples

    frames = np.ascontiguousarray(samples.render_scene(samples.scene("pan_static"), size=(854, 480), num_frames=6))
    np.save(tmp_path / "f.npy", frames)
    subprocess.run([sys.executable, "-c", _SUBPROCESS_ENCODE, str(tmp_path / "f.npy"), str(tmp_path / "sub.mp4")],
                   check=True)
    here = write_video(tmp_path / "here.mp4", frames, fps=25).read_bytes()
    assert (tmp_path / "sub.mp4").read_bytes() == here


_OPENCV_OPEN = """
import contextlib, sys, cv2
from devil_dataset.core.video_io import quiet_libav
with quiet_libav() if sys.argv[2] == "quiet" else contextlib.nullcontext():
    print(cv2.VideoCapture(sys.argv[1]).isOpened())
"""


def test_libav_lines_are_kept_off_the_terminal_and_attributed(tmp_path):
    """OpenCV's FFmpeg prints "moov atom not found" with no file name; after quiet_libav it prints nothing, and
    libav_messages gives the same reason naming the file."""
    import os
    import subprocess
    import sys

    good = write_video(tmp_path / "ok.mp4", np.zeros((4, 32, 32, 3), np.uint8), fps=5)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(good.read_bytes()[:200])
    env = {k: v for k, v in os.environ.items() if k != video_io.OPENCV_FFMPEG_LOGLEVEL_ENV}

    def run(mode: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, "-c", _OPENCV_OPEN, str(cut), mode], capture_output=True, text=True,
                              env=env, check=True)
    assert "moov atom not found" in run("loud").stderr  # the control: what reached the terminal before
    quiet = run("quiet")
    assert quiet.stdout.strip() == "False" and quiet.stderr == ""
    assert video_io.libav_messages(cut) == [f"{cut}: libav: moov atom not found"]
    assert video_io.libav_messages(good) == []

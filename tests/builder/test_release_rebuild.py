"""Rebuilding DEVIL the release's way from generated 1920x1080 sources named like the release's."""
from __future__ import annotations

import io
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from devil_dataset.builder.build_options import BuildHooks, BuildOptions
from devil_dataset.builder.release_rebuild import (
    REPORT_NAME,
    iter_release_frames,
    parse_source_name,
    rebuild_release,
    report_summary,
)
from devil_dataset.cli import main
from devil_dataset.sources.catalog import load_catalog

IDS = load_catalog().video_ids
USERS = load_catalog().users
SIZE = (64, 48)  # output size of the test build (the release's is 832x480)


def indexed_video(path, frames, size=(64, 48), cut_at=None, preset="medium"):
    """Frame t shows t in its pixel values (distinct for t < 256, changing slowly); a hard cut at ``cut_at``.

    ``preset="ultrafast"`` keeps the 1080p test sources quick to encode (x264 medium takes seconds per source).
    """
    import av

    w, h = size
    with av.open(str(path), "w") as c:
        stream = c.add_stream("libx264", rate=25, options={"preset": preset, "crf": "18"})
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for t in range(frames):
            v = np.zeros((h, w, 3), np.uint8)
            v[:, :, 0] = 40 + t % 200
            v[:, : w // 2, 1] = t % 256
            v[h // 2 :, :, 2] = 255 - t % 256
            if cut_at is not None and t >= cut_at:
                v = 255 - v
            for packet in stream.encode(av.VideoFrame.from_ndarray(v, format="rgb24")):
                c.mux(packet)
        for packet in stream.encode():
            c.mux(packet)
    return path


def ffmpeg_select(path, start):
    """The release's decode: ``ffmpeg -i SRC -vf select=gte(n\\,START) -vsync 0`` (libavfilter through PyAV).

    Frames are converted to RGB as the package converts them (:func:`devil_dataset.core.video_io.frame_to_rgb`: the
    bit-exact swscale path, the same bytes on every CPU), so the comparison checks which frames each chunk holds.
    """
    import av

    from devil_dataset.core.video_io import frame_to_rgb

    out = []
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        graph = av.filter.Graph()
        src = graph.add_buffer(template=stream)
        sel = graph.add("select", f"gte(n\\,{start})")
        sink = graph.add("buffersink")
        src.link_to(sel)
        sel.link_to(sink)
        graph.configure()
        for frame in c.decode(stream):
            graph.push(frame)
            while True:
                try:
                    out.append(frame_to_rgb(graph.pull()))
                except (av.error.BlockingIOError, av.error.EOFError):
                    break
    return out


def test_chunk_frames_equal_ffmpeg_select_decode(tmp_path):
    path = indexed_video(tmp_path / "v.mp4", 137)  # x264 medium: B-frames, reordering
    chunks: dict[int, list] = {}
    for index, k, frame in iter_release_frames(path):
        assert k == len(chunks.setdefault(index, []))
        chunks[index].append(frame)
    assert [len(c) for c in chunks.values()] == [90, 47]
    for index, start in ((0, 0), (1, 90)):
        ref = ffmpeg_select(path, start)
        assert len(ref) == 137 - start
        n = len(chunks[index])
        assert all(np.array_equal(a, b) for a, b in zip(chunks[index], ref[:n]))


def test_parse_source_name():
    assert parse_source_name(f"{USERS[1]}-{IDS[3]}.mp4") == (USERS[1], IDS[3])
    assert parse_source_name("holiday.mp4") is None


def fake_mask(preset, index):
    w, h = SIZE
    m = np.zeros((90, h, w), bool)
    m[:, 10:20, index % 40 : index % 40 + 10] = True
    return m


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    src = tmp_path_factory.mktemp("sources")
    # A: 137 frames (90 + a 47-frame tail kept) with a hard cut at 60; B: 50 frames; C: 720p; D: 40 frames (tail
    # dropped: no clip); E: an id the release did not list.
    indexed_video(src / f"{USERS[0]}-{IDS[0]}.mp4", 137, (1920, 1080), cut_at=60, preset="ultrafast")
    indexed_video(src / f"{USERS[1]}-{IDS[1]}.mp4", 50, (1920, 1080), preset="ultrafast")
    indexed_video(src / f"{USERS[1]}-{IDS[2]}.mp4", 2, (1280, 720), preset="ultrafast")
    indexed_video(src / f"{USERS[2]}-{IDS[3]}.mp4", 40, (1920, 1080), preset="ultrafast")
    indexed_video(src / f"{USERS[2]}-12345.mp4", 2)
    out = tmp_path_factory.mktemp("rebuilt") / "devil"
    opts = dict(options=BuildOptions(size=SIZE, progress=False),
                hooks=BuildHooks(mask_loader=fake_mask, camera_scorer=lambda f: float(f[::9, ::16, ::16, 0].mean()),
                                 scene_scorer=lambda f: float(f[::9, ::16, ::16, 2].std())))
    result, report = rebuild_release(src, out, **opts)
    return src, out, opts, result, report


def test_release_named_clips_and_frames(rebuilt):
    src, out, _, result, report = rebuilt
    clips = out / ".devil-build" / "curated" / "clips"
    names = sorted(p.name for p in clips.iterdir())
    assert names == [f"{USERS[0]}-{IDS[0]}-00000", f"{USERS[0]}-{IDS[0]}-00001", f"{USERS[1]}-{IDS[1]}-00000"]
    assert [len(list((clips / n).glob("*.jpg"))) for n in names] == [90, 47, 50]
    # frames are the decoded source frames stored as JPEG quality 95
    from PIL import Image

    frame = next(f for i, k, f in iter_release_frames(src / f"{USERS[0]}-{IDS[0]}.mp4") if (i, k) == (1, 0))
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="JPEG", quality=95)
    assert (clips / names[1] / "00000.jpg").read_bytes() == buf.getvalue()
    assert result.num_clips == 3


def test_rebuild_report(rebuilt):
    _, out, _, result, report = rebuilt
    on_disk = json.loads((out / REPORT_NAME).read_text())
    assert on_disk == report
    s = report["sources"]
    assert (s["listed"], s["obtained"], s["used"]) == (234, 4, 2)
    assert len(s["missing_ids"]) == 230 and IDS[0] not in s["missing_ids"]
    reasons = {x["source"]: x["reason"] for x in s["skipped"]}
    assert reasons[f"{USERS[1]}-{IDS[2]}.mp4"] == "not 1920x1080 (1280x720)"
    assert reasons[f"{USERS[2]}-12345.mp4"] == "12345 is not in the DEVIL source list"
    assert (report["clips"]["made"], report["clips"]["paper"]) == (3, 1250)
    # the cut is reported, not used to drop or split the clip
    sus = report["clips"]["suspicious_cuts"]
    assert [x["clip_id"] for x in sus] == [f"{USERS[0]}-{IDS[0]}-00000"] and sus[0]["cut_score"] >= 27
    assert set(report["slices"]) == {n for n in result.config_rows if n != "all"}
    assert all(not v["complete"] for v in report["slices"].values())
    assert report["bg_scene_motion_labels"]["source"] == "automatic score, mode 'release'"
    text = " ".join(d["deviation"] for d in report["deviations"])
    assert "3 clips instead of the paper's 1250" in text and "230 of 234 listed" in text
    summary = report_summary(report)
    assert "sources obtained 4 of 234 listed, used 2" in summary and "clips made 3 (paper: 1250)" in summary
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["release_rebuild"]["bg_scene_motion_labels"] == "automatic score, mode 'release'"
    assert REPORT_NAME in manifest["files"]
    assert manifest["release_rebuild"]["scene_mode"] == "release"
    assert manifest["modes"] == {"parity": "release", "scene_mode": "release", "rank_mode": "release"}
    assert "rank mode" not in text  # the release's ranking: no deviation to report
    assert "automatic score, mode 'release'" in (out / "README.md").read_text()


def test_rebuild_loads_with_datasets(rebuilt):
    import datasets

    _, out, _, result, _ = rebuilt
    ds = datasets.load_dataset(str(out), "camera_motion_high", split="test")
    assert len(ds) == result.config_rows["camera_motion_high"] >= 1
    assert ds[0]["clip_id"].startswith(f"{USERS[0]}-{IDS[0]}-") or ds[0]["clip_id"].startswith(f"{USERS[1]}-")
    assert ds[0]["attribution"].startswith("Flickr video ")


def test_rebuild_resumes_to_identical_files(rebuilt):
    src, out, opts, result, report = rebuilt
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and ".devil-build" not in p.parts}
    again, report2 = rebuild_release(src, out, **opts)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and ".devil-build" not in p.parts}
    assert before == after and report2 == report


def test_cli_refuses_two_modes(tmp_path, capsys):
    assert main(["build", "--sample", "--release-sources", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "exactly one of them" in capsys.readouterr().err


def test_rebuild_interrupted_mid_source_resumes(rebuilt):
    """A source whose cutting was interrupted (no finished state, its second clip never completed, a stale
    temporary folder) is cut again; the result is byte-identical."""
    import shutil

    src, out, opts, result, report = rebuilt
    curated = out / ".devil-build" / "curated"
    clip = curated / "clips" / f"{USERS[0]}-{IDS[0]}-00001"
    first = (curated / "clips" / f"{USERS[0]}-{IDS[0]}-00000" / "00010.jpg").read_bytes()
    shutil.rmtree(clip)
    (curated / "clips" / f".tmp-{USERS[0]}-{IDS[0]}-00001").mkdir()
    from devil_dataset.core.atomic import file_sha256

    (curated / ".state" / f"{file_sha256(src / f'{USERS[0]}-{IDS[0]}.mp4')}.json").unlink()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and ".devil-build" not in p.parts}
    again, report2 = rebuild_release(src, out, **opts)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and ".devil-build" not in p.parts}
    assert before == after and report2 == report
    assert len(list(clip.glob("*.jpg"))) == 47 and not list((curated / "clips").glob(".tmp-*"))
    assert (curated / "clips" / f"{USERS[0]}-{IDS[0]}-00000" / "00010.jpg").read_bytes() == first

"""Curation: clip cutting rule, shot cuts, bad sources, filters, foreground hook, resume and reproducibility."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.builder.curate import (
    MANIFEST_NAME,
    clip_id,
    curate,
    dropped_clips,
    load_curated_clip,
    plan_chunks,
    plan_clips,
    read_manifest,
    safe_stem,
    skipped_sources,
)
from devil_dataset.cli import main
from devil_dataset.core.video_io import read_video, write_video

SMALL = (160, 96)


@pytest.mark.parametrize("length, expected", [
    (200, [(0, 90), (90, 180)]),          # 20-frame tail dropped
    (130, [(0, 90)]),                     # 40 < 45: dropped
    (135, [(0, 90), (90, 135)]),          # 45-frame tail kept
    (90, [(0, 90)]),
    (45, [(0, 45)]),
    (44, []),
    (0, []),
])
def test_chunk_rule(length, expected):
    assert plan_chunks(0, length) == expected


def test_chunks_restart_at_each_shot():
    assert plan_clips([(0, 100), (100, 230)]) == [(0, 0, 90), (1, 100, 190)]
    assert plan_chunks(7, 7 + 135) == [(7, 97), (97, 142)]


def test_ids_are_safe():
    assert safe_stem("dir/Fjord at dawn!.MOV") == "Fjord_at_dawn"
    assert safe_stem("../...mp4") == "video"
    assert clip_id("x", 12) == "x-00012"


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_curate_splits_at_cut_and_records_everything(tmp_path, curate_cut_video, curate_cut_frames):
    out = tmp_path / "cur"
    report = curate([curate_cut_video], out, min_size=SMALL, progress=False)
    clips = read_manifest(out)
    assert [(c.clip_id, c.shot_index, c.first_frame, c.frame_count) for c in clips] == [
        ("two_shots-00000", 0, 0, 90), ("two_shots-00001", 1, 100, 90)]
    assert report.clips == clips and report.written == 2 and not report.skipped
    source_frames = read_video(curate_cut_video, backend="pyav")
    for c in clips:
        assert (c.width, c.height, c.fps, c.fps_fraction) == (160, 96, 25.0, "25/1")
        assert c.foreground_fraction is None
        assert 0.0 < c.cut_score < 27.0
        assert len(c.source_sha256) == 64 and len(c.sha256) == 64
        frames = load_curated_clip(out, c, verify=True)
        # every native frame kept, no resizing: the clip is the source's frames re-encoded
        np.testing.assert_allclose(frames.mean(), source_frames[c.first_frame:c.first_frame + 90].mean(), atol=1.5)
        assert np.abs(frames.astype(int) - source_frames[c.first_frame:c.first_frame + 90]).mean() < 8
    lines = [json.loads(x) for x in (out / MANIFEST_NAME).read_text().splitlines()]
    assert lines[0]["kind"] == "settings" and lines[0]["encoder"]["crf"] == 18


def test_bad_sources_are_skipped_with_reasons(tmp_path, curate_make_video, curate_pan, capsys):
    good = curate_make_video("good.mp4", curate_pan(0, 50))
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(0).integers(0, 255, 5000, dtype=np.uint8).tobytes())
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    # truncated: cut the file in half (moov at the end: the container cannot be opened)
    full = curate_make_video("full.mp4", curate_pan(1, 60)).read_bytes()
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(full[: len(full) // 2])
    # truncated with the index first (faststart): opens, but decodes fewer frames than it declares
    faststart = tmp_path / "faststart_truncated.mp4"
    _write_faststart(faststart, curate_pan(2, 60))
    data = faststart.read_bytes()
    faststart.write_bytes(data[: int(len(data) * 0.6)])
    # ... or loses its last frames only
    tail_cut = tmp_path / "tail_cut.mp4"
    _write_faststart(tail_cut, curate_pan(3, 200))
    data = tail_cut.read_bytes()
    tail_cut.write_bytes(data[: int(len(data) * 0.9)])
    missing = tmp_path / "missing.mp4"

    sources = [junk, good, text, empty, truncated, faststart, tail_cut, missing]
    out = tmp_path / "cur"
    report = curate(sources, out, min_size=SMALL, progress=False)
    assert [c.clip_id for c in report.clips] == ["good-00000"]
    reasons = {Path(s.source).name: s.reason for s in skipped_sources(out)}
    assert set(reasons) == {"junk.mp4", "notes.mp4", "empty.mp4", "truncated.mp4", "faststart_truncated.mp4",
                            "tail_cut.mp4", "missing.mp4"}
    for name in ("junk.mp4", "notes.mp4", "empty.mp4", "truncated.mp4"):
        assert reasons[name].startswith("cannot open as a video ("), reasons[name]
    assert reasons["faststart_truncated.mp4"].startswith("corrupt: decoding failed at frame 0")
    assert reasons["tail_cut.mp4"].startswith("truncated: decoded ") and "of the 200 frames" in reasons["tail_cut.mp4"]
    assert not any("/" in r or "[" in r[:1] for r in reasons.values()), "reasons must be path- and timestamp-free"
    assert reasons["missing.mp4"] == "no such file"
    # the manifest keeps the order of the sources
    kinds = [json.loads(x)["kind"] for x in (out / MANIFEST_NAME).read_text().splitlines()]
    assert kinds == ["settings", "skipped", "clip"] + ["skipped"] * 6

    # the CLI exits 0 and lists the skipped sources (missing files are usage errors there, exit 2)
    assert main(["curate", str(good), str(junk), "--out", str(tmp_path / "cli"), "--min-resolution", "160x96",
                 "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "junk.mp4: cannot open" in captured.out and "1 source(s) skipped" in captured.err
    with pytest.raises(SystemExit) as exc:
        main(["curate", str(missing), "--out", str(tmp_path / "cli")])
    assert exc.value.code == 2


def _write_faststart(path: Path, frames: np.ndarray) -> None:
    import av

    with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)


def test_resolution_and_orientation_filter(tmp_path, curate_make_video, curate_pan):
    land = curate_make_video("land.mp4", curate_pan(0, 50))                       # 160x96
    portrait = curate_make_video("portrait.mp4", curate_pan(1, 50, size=(96, 160)))
    out = tmp_path / "a"
    curate([land, portrait], out, progress=False)                                # default 832x480
    reasons = {Path(s.source).name: s.reason for s in skipped_sources(out)}
    assert reasons["land.mp4"].startswith("too small (160x96 < 832x480")
    assert reasons["portrait.mp4"].startswith("not landscape (96x160)")
    out = tmp_path / "b"
    curate([land, portrait], out, min_size=SMALL, landscape_only=False, progress=False)
    assert [c.clip_id for c in read_manifest(out)] == ["land-00000", "portrait-00000"]
    assert read_manifest(out)[1].width == 96
    out = tmp_path / "c"
    curate([land, portrait], out, min_size=(170, 96), landscape_only=False, progress=False)
    assert {Path(s.source).name for s in skipped_sources(out)} == {"land.mp4", "portrait.mp4"}


def test_foreground_hook_recorded_and_threshold_drops(tmp_path, curate_make_video, curate_pan):
    bright = np.clip(curate_pan(0, 100).astype(int) + 100, 0, 255).astype(np.uint8)
    src = curate_make_video("fg.mp4", np.concatenate([curate_pan(0, 100)[:90] // 4, bright[:90]]))
    calls = []

    def fraction(frames: np.ndarray) -> float:
        calls.append(frames.shape)
        return round(float(frames.mean() / 255.0), 4)

    out = tmp_path / "cur"
    report = curate([src], out, min_size=SMALL, foreground_detector=fraction, max_foreground=0.5, progress=False)
    assert calls == [(90, 96, 160, 3), (90, 96, 160, 3)]
    assert [c.clip_id for c in report.clips] == ["fg-00000"]
    assert 0 < report.clips[0].foreground_fraction < 0.5
    dropped = dropped_clips(out)
    assert [(d.clip_id, d.first_frame) for d in dropped] == [("fg-00001", 90)]
    assert dropped[0].foreground_fraction > 0.5 and not (out / "clips" / "fg-00001.mp4").exists()
    settings = json.loads((out / MANIFEST_NAME).read_text().splitlines()[0])
    assert settings["foreground_detector"].endswith("fraction")


def test_resume_and_byte_identical_rerun(tmp_path, curate_cut_video, curate_make_video, curate_pan):
    other = curate_make_video("other.mp4", curate_pan(5, 95))
    out = tmp_path / "cur"
    first = curate([curate_cut_video, other], out, min_size=SMALL, progress=False)
    assert first.written == 3 and first.reused == 0
    before = _tree_bytes(out)

    again = curate([curate_cut_video, other], out, min_size=SMALL, progress=False)
    assert again.written == 0 and again.reused == 3
    assert _tree_bytes(out) == before

    # a deleted clip and a damaged clip are recomputed; the result is byte-identical to the first run
    (out / "clips" / "two_shots-00001.mp4").unlink()
    (out / "clips" / "other-00000.mp4").write_bytes(b"damaged")
    (out / "clips" / ".tmp-leftover.mp4").write_bytes(b"partial")   # an interrupted atomic write
    third = curate([curate_cut_video, other], out, min_size=SMALL, progress=False)
    assert third.written == 2 and third.reused == 1
    assert _tree_bytes(out) == before

    # a fresh directory gives the same bytes too
    fresh = tmp_path / "fresh"
    curate([curate_cut_video, other], fresh, min_size=SMALL, progress=False)
    assert _tree_bytes(fresh) == before


def test_interrupted_source_resumes_clip_by_clip(tmp_path, curate_cut_video, monkeypatch):
    from devil_dataset.builder import curate as curate_module

    out = tmp_path / "cur"
    real = curate_module.video_io.write_video
    calls = {"n": 0}

    def failing(path, frames, *, fps):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(path, frames, fps=fps)

    monkeypatch.setattr(curate_module.video_io, "write_video", failing)
    with pytest.raises(KeyboardInterrupt):
        curate([curate_cut_video], out, min_size=SMALL, progress=False)
    monkeypatch.setattr(curate_module.video_io, "write_video", real)
    assert (out / "clips" / "two_shots-00000.mp4").exists()
    assert not (out / "clips" / "two_shots-00001.mp4").exists()
    report = curate([curate_cut_video], out, min_size=SMALL, progress=False)
    assert report.reused == 1 and report.written == 1
    assert [c.clip_id for c in read_manifest(out)] == ["two_shots-00000", "two_shots-00001"]


def test_ids_unique_for_same_stem_and_duplicates_skipped(tmp_path, curate_pan):
    a = write_video(tmp_path / "a" / "clip.mp4", curate_pan(0, 50), fps=25)
    b = write_video(tmp_path / "b" / "clip.mp4", curate_pan(1, 50), fps=25)
    out = tmp_path / "cur"
    report = curate([a, b, a], out, min_size=SMALL, progress=False)
    ids = [c.clip_id for c in report.clips]
    assert ids[0] == "clip-00000" and ids[1].startswith("clip_") and ids[1].endswith("-00000")
    assert ids[1] == f"clip_{report.clips[1].source_sha256[:8]}-00000"
    assert report.skipped[0].reason.startswith("duplicate of")
    # the id given to b is kept when b is curated alone later
    again = curate([b], out, min_size=SMALL, progress=False)
    assert [c.clip_id for c in again.clips] == [ids[1]] and again.reused == 1


def test_directory_sources_expand(tmp_path, curate_pan):
    write_video(tmp_path / "src" / "x.mp4", curate_pan(0, 50), fps=25)
    (tmp_path / "src" / "readme.txt").write_text("ignored")
    report = curate([tmp_path / "src"], tmp_path / "cur", min_size=SMALL, progress=False)
    assert [c.clip_id for c in report.clips] == ["x-00000"] and not report.skipped


def test_streaming_path_matches_in_memory_path(tmp_path, curate_cut_video, monkeypatch):
    from devil_dataset.builder import curate as curate_module

    cached = tmp_path / "cached"
    curate([curate_cut_video], cached, min_size=SMALL, progress=False)
    monkeypatch.setattr(curate_module, "DECODE_CACHE_BYTES", 1)   # force the decode-twice, bounded-memory path
    streamed = tmp_path / "streamed"
    curate([curate_cut_video], streamed, min_size=SMALL, progress=False)
    assert _tree_bytes(streamed) == _tree_bytes(cached)


def test_sources_without_clips_are_listed_with_the_reason(tmp_path, curate_make_video, curate_pan):
    from PIL import Image

    good = curate_make_video("good.mp4", curate_pan(0, 50))
    short = curate_make_video("short.mp4", curate_pan(1, 10))  # 10 frames: below the 45-frame minimum
    png = tmp_path / "still.mp4"
    Image.fromarray(curate_pan(2, 1)[0]).save(png, format="PNG")  # a PNG renamed .mp4
    out = tmp_path / "cur"
    report = curate([good, short, png], out, min_size=SMALL, progress=False)
    reasons = {Path(s.source).name: s.reason for s in skipped_sources(out)}
    assert set(reasons) == {"short.mp4", "still.mp4"}
    assert reasons["short.mp4"] == "no clip: 10 frames, no shot of at least 45 frames without a cut"
    assert reasons["still.mp4"] == "no clip: 1 frame: a still image (png), not a video"
    kinds = [json.loads(x)["kind"] for x in (out / MANIFEST_NAME).read_text().splitlines()]
    assert kinds == ["settings", "clip", "skipped", "skipped"]
    summary = report.summary()
    assert f"  {good}: 1 clip" in summary
    assert f"  {short}: skipped: no clip: 10 frames" in summary and f"  {png}: skipped: no clip: 1 frame" in summary
    again = curate([good, short, png], out, min_size=SMALL, progress=False)  # resumed: still listed
    assert again.summary() == summary.replace("(1 written, 0 reused)", "(0 written, 1 reused)")


@pytest.mark.slow
def test_curation_peak_memory_does_not_grow_with_source_length(tmp_path):
    """Slow (about a minute of CPU): curate 700- and 2,800-frame 320x180 pans with the default decoder in child
    processes and compare their peak RSS (decode cache lowered to 32 MiB so both stream). Before the fix, ``auto``
    (decord when installed) peaked 2x higher on the long source."""
    import subprocess
    import sys

    from devil_dataset.core.video_io import write_video

    child = (
        "import sys, tempfile\n"
        "import devil_dataset.builder.curate as C\n"
        "C.DECODE_CACHE_BYTES = 32 << 20\n"
        "C.curate([sys.argv[1]], tempfile.mkdtemp(), min_size=(160, 96), backend='auto', progress=False)\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1])\n"
    )
    peaks = {}
    for n in (700, 2800):
        canvas = np.random.default_rng(0).integers(0, 256, (180, 320 + n + 2, 3), dtype=np.uint8)
        video = write_video(tmp_path / f"pan{n}.mp4", np.stack([canvas[:, t:t + 320] for t in range(n)]), fps=25)
        del canvas
        out = subprocess.run([sys.executable, "-c", child, str(video)], capture_output=True, text=True, check=True)
        peaks[n] = int(out.stdout.split()[-1]) / 1024  # MB
    assert peaks[2800] < peaks[700] * 1.15 + 16, peaks

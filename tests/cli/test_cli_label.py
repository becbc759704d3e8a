"""`devil label camera-motion|scene-motion|import-bg-labels|rank|bg-scene-motion`: outputs and bad inputs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from devil_dataset.builder.samples import render_scene, scene
from devil_dataset.cli import build_parser, main
from devil_dataset.core.video_io import write_video


def _run(args, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def label_videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("label_videos")
    still = write_video(d / "still.mp4", render_scene(scene("still_static"), size=(192, 112), num_frames=14), fps=25)
    pan = write_video(d / "pan.mp4", render_scene(scene("pan_static"), size=(192, 112), num_frames=14), fps=25)
    bad = d / "broken.mp4"
    bad.write_bytes(b"not a video at all")
    return still, pan, bad


def test_camera_motion_json_maps_every_path(label_videos, tmp_path, capsys):
    still, pan, bad = label_videos
    out_file = tmp_path / "cm.json"
    code, out, err = _run(["label", "camera-motion", str(still), str(pan), str(bad), "--json", "--detector", "sift",
                           "--scoring-size", "192x112", "--out", str(out_file), "--no-progress"], capsys)
    assert code == 2  # one input could not be scored
    scores = json.loads(out)
    assert list(scores) == [str(still), str(pan), str(bad)]
    assert scores[str(bad)] is None and f"{bad}: cannot decode" in err
    assert scores[str(still)] < 0.05 < 0.2 < scores[str(pan)]  # pan: 0.45 * 9 / 13 = 0.31 of the width
    assert "detector sift" in err
    rec = json.loads(out_file.read_text())
    assert rec["detector"] == "sift" and rec["scoring_size"] == [192, 112] and rec["scores"] == scores


def test_camera_motion_all_good_exit_zero_and_text_output(label_videos, capsys):
    still, _, _ = label_videos
    code, out, _ = _run(["label", "camera-motion", str(still), "--detector", "orb", "--scoring-size", "192x112"],
                        capsys)
    assert code == 0 and out.startswith(str(still)) and len(out.strip().splitlines()) == 1


def test_camera_motion_inf_is_a_json_string(tmp_path, capsys):
    flat = write_video(tmp_path / "flat.mp4", np.full((12, 64, 96, 3), 80, np.uint8), fps=25)
    code, out, _ = _run(["label", "camera-motion", str(flat), "--json", "--scoring-size", "96x64"], capsys)
    assert code == 0 and json.loads(out) == {str(flat): "inf"}


def test_scene_motion_json(label_videos, capsys):
    still, _, bad = label_videos
    code, out, err = _run(["label", "scene-motion", str(still), str(bad), "--json", "--mode", "corrected",
                           "--detector", "sift", "--scoring-size", "192x112", "--no-progress"], capsys)
    scores = json.loads(out)
    assert code == 2 and scores[str(bad)] is None
    assert 0.0 <= scores[str(still)] < 0.05
    assert "mode corrected" in err


def test_scene_motion_logs_progress_when_stderr_is_a_file(label_videos, capsys):
    """Into a log (stderr not a terminal) the command says what it does, not nothing until the end."""
    still, _, _ = label_videos
    code, _, err = _run(["label", "scene-motion", str(still), str(still), "--json", "--mode", "corrected",
                         "--detector", "sift", "--scoring-size", "192x112"], capsys)
    assert code == 0
    assert "scene motion: 0/2 clips" in err and "scene motion: 2/2 clips done in " in err


def test_import_bg_labels_merges_and_reports_bad_rows(tmp_path, capsys):
    labels_file = tmp_path / "bg_labels.json"
    (tmp_path / "a.csv").write_text("clip_id,label\nc1,high\nc2,low\n")
    code, out, _ = _run(["label", "import-bg-labels", str(tmp_path / "a.csv"), "--labels-file", str(labels_file)],
                        capsys)
    assert code == 0 and "2 labelled clips (1 low, 1 high)" in out
    (tmp_path / "b.csv").write_text("c2,high\nc3,low\n")
    code, out, _ = _run(["label", "import-bg-labels", str(tmp_path / "b.csv"), "--labels-file", str(labels_file)],
                        capsys)
    assert code == 0
    assert json.loads(labels_file.read_text())["labels"] == {"c1": "high", "c2": "high", "c3": "low"}
    before = labels_file.read_bytes()
    (tmp_path / "bad.csv").write_text("c4,low\nc5,sometimes\n")
    code, _, err = _run(["label", "import-bg-labels", str(tmp_path / "bad.csv"), "--labels-file", str(labels_file)],
                        capsys)
    assert code == 2 and f"{tmp_path / 'bad.csv'}:2: label must be" in err
    assert labels_file.read_bytes() == before  # nothing written on a bad file
    code, _, err = _run(["label", "import-bg-labels", str(tmp_path / "nope.csv"), "--labels-file", "x.json"], capsys)
    assert code == 2 and "no such file" in err


def test_rank_from_scores_json(tmp_path, capsys):
    scores = {f"clips/c{i:02d}.mp4": i / 10 for i in range(12)}
    scores["clips/broken.mp4"] = None
    scores["clips/flat.mp4"] = "inf"
    p = tmp_path / "cm.json"
    p.write_text(json.dumps(scores))
    code, out, _ = _run(["label", "rank", str(p), "--mode", "corrected"], capsys)
    assert code == 0 and json.loads(out) == {"low": ["c00", "c01"], "high": ["flat", "c11"]}
    # release: the null score ranks above +inf, so it is in the high tail, listed last (the release's order in the tail)
    code, out, _ = _run(["label", "rank", str(p)], capsys)
    assert code == 0 and json.loads(out) == {"low": ["c00", "c01"], "high": ["flat", "broken"]}
    code, out, _ = _run(["label", "rank", str(p), "--parity", "corrected"], capsys)  # --parity sets --mode
    assert code == 0 and json.loads(out) == {"low": ["c00", "c01"], "high": ["flat", "c11"]}
    code, out, _ = _run(["label", "rank", str(p), "--parity", "corrected", "--mode", "release"], capsys)
    assert code == 0 and json.loads(out) == {"low": ["c00", "c01"], "high": ["flat", "broken"]}  # --mode wins
    code, out, _ = _run(["label", "rank", str(p), "--threshold", "0.05", "1.0"], capsys)
    assert json.loads(out) == {"low": ["c00"], "high": ["flat", "c11", "c10"]}
    p.write_text(json.dumps({"a": "high"}))
    code, _, err = _run(["label", "rank", str(p)], capsys)
    assert code == 2 and "must be a number" in err


def test_help_has_examples():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["label"]
    names = next(a for a in sub._actions if a.dest == "label_command").choices
    assert set(names) == {"camera-motion", "scene-motion", "import-bg-labels", "rank", "bg-scene-motion"}
    for p in names.values():
        assert "devil label" in p.epilog and p.description


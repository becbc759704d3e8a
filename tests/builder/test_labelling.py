"""The file side of `devil label` (builder/labelling.py): scoring clips, scores files, importing hand labels."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from devil_dataset.builder.labelling import (
    CAMERA_MOTION_SCORES_FORMAT,
    clip_id_of,
    import_bg_labels,
    json_score,
    read_scores_file,
    score_clips,
    score_text,
    scores_text_lines,
    unscored_paths,
    write_scores_file,
)
from devil_dataset.core.errors import DevilError
from devil_dataset.core.video_io import write_video


def test_score_clips_keeps_order_and_turns_failures_into_errors(tmp_path):
    grey = write_video(tmp_path / "grey.mp4", np.full((4, 32, 48, 3), 80, np.uint8), fps=25)
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")

    def score(frames: np.ndarray) -> float:
        if frames.shape[0] == 0:
            raise ValueError("empty")
        return float(frames.shape[0])

    scores, errors = score_clips([str(bad), str(grey)], score, desc="test", progress=False)
    assert list(scores) == [str(bad), str(grey)] and scores == {str(bad): None, str(grey): 4.0}
    assert len(errors) == 1 and errors[0].startswith(f"{bad}: cannot decode")


def test_score_clips_prefixes_the_path_to_a_scorer_error(tmp_path):
    grey = write_video(tmp_path / "grey.mp4", np.full((3, 32, 48, 3), 80, np.uint8), fps=25)

    def fail(frames: np.ndarray) -> float:
        raise ValueError("too short")

    scores, errors = score_clips([str(grey)], fail, desc="test", progress=False)
    assert scores == {str(grey): None} and errors == [f"{grey}: too short"]


def test_json_and_text_forms_of_scores():
    assert [json_score(s) for s in (0.5, math.inf, math.nan, None)] == [0.5, "inf", None, None]
    assert [score_text(s) for s in (0.5, "inf", None)] == ["0.500000", "inf", "-"]
    assert scores_text_lines({"long/path.mp4": 1.0, "a": None}) == ["long/path.mp4  1.000000", "a              -"]
    assert unscored_paths({"a": math.nan, "b": None, "c": 0.0, "d": math.inf}) == ["a"]


def test_scores_file_round_trip(tmp_path):
    path = tmp_path / "cm.json"
    mapping = {"clips/a-00000.mp4": 0.25, "clips/b-00001.mp4": "inf", "frames/c-00002": None}
    write_scores_file(path, {"format": CAMERA_MOTION_SCORES_FORMAT, "detector": "sift"}, mapping)
    text = path.read_text()
    assert text.endswith("}\n") and json.loads(text) == {"format": CAMERA_MOTION_SCORES_FORMAT, "detector": "sift",
                                                         "scores": mapping}
    assert read_scores_file(path) == {"a-00000": 0.25, "b-00001": math.inf, "c-00002": None}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"x.mp4": 1}))  # what --json prints
    assert read_scores_file(plain) == {"x": 1.0}


@pytest.mark.parametrize("content,needle", [
    ("not json", "not a JSON scores file"),
    ("[1, 2]", "expected a JSON object {path: score}"),
    ('{"a.mp4": "high"}', "score of 'a.mp4' must be a number"),
    ('{"a.mp4": true}', "score of 'a.mp4' must be a number"),
    ('{"d1/a.mp4": 1, "d2/a.mp4": 2}', "two entries give the clip id 'a'"),
])
def test_bad_scores_files_name_the_file(tmp_path, content, needle):
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(DevilError, match="s.json: ") as info:
        read_scores_file(path)
    assert needle in str(info.value)
    with pytest.raises(DevilError, match="not a JSON scores file"):
        read_scores_file(tmp_path / "missing.json")


def test_clip_id_of():
    assert clip_id_of("a/b/c-00001.mp4") == "c-00001" and clip_id_of("c-00001") == "c-00001"
    assert clip_id_of("x.tar.gz") == "x.tar"


def test_import_bg_labels_merges_counts_and_writes_nothing_on_a_bad_csv(tmp_path):
    labels_file = tmp_path / "labels.json"
    (tmp_path / "a.csv").write_text("clip_id,label\nc1,high\nc2,low\n")
    first = import_bg_labels(tmp_path / "a.csv", labels_file)
    assert first.rows == {"c1": "high", "c2": "low"} and first.changed == 2
    (tmp_path / "b.csv").write_text("c2,high\nc3,low\nc1,high\n")
    second = import_bg_labels(tmp_path / "b.csv", labels_file)
    assert second.changed == 2 and second.labels == {"c1": "high", "c2": "high", "c3": "low"}
    assert (second.count("low"), second.count("high")) == (1, 2)
    assert json.loads(labels_file.read_text())["labels"] == second.labels
    before = labels_file.read_bytes()
    (tmp_path / "bad.csv").write_text("c4,low\nc5,sometimes\n")
    with pytest.raises(DevilError, match="bad.csv:2: label must be"):
        import_bg_labels(tmp_path / "bad.csv", labels_file)
    assert labels_file.read_bytes() == before

"""Rank/threshold labels, unique-source-first selection and hand-made BG labels."""
from __future__ import annotations

import json
import math

import pytest

from devil_dataset.builder import labels as lb
from devil_dataset.core.errors import DevilError

INF = math.inf


def test_rank_tails_sizes_and_order():
    scores = {f"c{i:02d}": i / 100 for i in range(25)}
    r = lb.label_by_rank(scores)
    assert len(r.low) == len(r.high) == 4  # floor(0.16 * 25) = 4 exactly (no float shortfall)
    assert r.low == ("c00", "c01", "c02", "c03")  # ascending
    assert r.high == ("c24", "c23", "c22", "c21")  # descending
    assert lb.label_by_rank({f"c{i}": float(i) for i in range(6)}).labels == {}  # floor(0.96) = 0


def test_rank_inf_ranks_highest_and_nan_none_are_unlabelled():
    scores = {"a": 0.5, "b": INF, "c": 0.1, "d": INF, "e": float("nan"), "f": None, "g": 0.3}
    scores.update({f"x{i}": 0.2 for i in range(8)})
    r = lb.label_by_rank(scores, mode="corrected")  # N = 13 scored -> tails of 2
    assert r.high == ("d", "b")  # both +inf; ties in the high tail by descending clip id
    assert r.low == ("c", "x0")  # ties broken by clip id
    assert "e" not in r.labels and "f" not in r.labels


def test_rank_release_mode_puts_nan_none_last_like_pandas():
    scores = {"a": 0.5, "b": INF, "c": 0.1, "d": INF, "e": float("nan"), "f": None, "g": 0.3}
    scores.update({f"x{i}": 0.2 for i in range(8)})
    assert lb.ranked_clip_ids(scores)[-4:] == ["b", "d", "e", "f"]  # +inf ties in name order, then NaN/None
    r = lb.label_by_rank(scores)  # N = 15 clips -> tails of floor(2.4) = 2, the top two are NaN/None
    # listed as the release orders its high tail: scored clips first (none here), then NaN/None in name order
    assert r.high == ("e", "f") and r.low == ("c", "x0")
    assert lb.label_by_rank(scores, tail=0.3).high == ("d", "b", "e", "f")  # tails of 4: +inf (descending) first
    assert lb.label_by_rank(scores, mode="release") == r
    with pytest.raises(ValueError, match="ranking mode"):
        lb.label_by_rank(scores, mode="pandas")


def test_rank_ties_never_put_a_clip_in_both_tails():
    r = lb.label_by_rank({f"c{i}": 1.0 for i in range(7)}, tail=0.3)
    assert r.low == ("c0", "c1") and r.high == ("c6", "c5")
    assert not set(r.low) & set(r.high)
    with pytest.raises(ValueError):
        lb.label_by_rank({"a": 1.0}, tail=0.7)


def test_threshold_labels():
    r = lb.label_by_threshold({"a": 0.01, "b": 0.2, "c": INF, "d": 0.5, "e": 0.05, "f": None}, 0.05, 0.3)
    assert r.low == ("a", "e") and r.high == ("c", "d")
    with pytest.raises(ValueError, match="below"):
        lb.label_by_threshold({}, 0.3, 0.3)


def test_unique_source_first():
    order = ["a1", "a2", "a3", "b1", "c1", "b2", "c2"]
    src = {c: c[0] for c in order}
    assert lb.select_unique_source_first(order, src, 3) == ["a1", "b1", "c1"]
    assert lb.select_unique_source_first(order, src, 5) == ["a1", "b1", "c1", "a2", "b2"]
    assert lb.select_unique_source_first(order, src, 100) == ["a1", "b1", "c1", "a2", "b2", "c2", "a3"]
    assert lb.select_unique_source_first(order, src, 0) == []


def test_read_bg_labels_csv(tmp_path):
    p = tmp_path / "bg.csv"
    p.write_text("clip_id,label\n# hand labels\nalice-00000,high\n\nbob-00001, LOW \nalice-00000,high\n")
    assert lb.read_bg_labels_csv(p) == {"alice-00000": "high", "bob-00001": "low"}
    (tmp_path / "nohdr.csv").write_text("x,low\n")
    assert lb.read_bg_labels_csv(tmp_path / "nohdr.csv") == {"x": "low"}


@pytest.mark.parametrize("text,line,match", [
    ("clip_id,label\na,medium\n", 2, "label must be 'low' or 'high'"),
    ("a,low\nb\n", 2, "expected 2 columns"),
    ("a,low,extra\n", 1, "expected 2 columns"),
    ("a,low\n,high\n", 2, "empty clip_id"),
    ("a,low\nb,high\na,high\n", 3, "already labelled 'low'"),
])
def test_bad_csv_rows_name_file_and_line(tmp_path, text, line, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(DevilError, match=match) as err:
        lb.read_bg_labels_csv(p)
    assert str(err.value).startswith(f"{p}:{line}:")


def test_unreadable_csv(tmp_path):
    with pytest.raises(DevilError, match="cannot read"):
        lb.read_bg_labels_csv(tmp_path / "missing.csv")


def test_merge_manual_wins():
    auto = {"a": "low", "b": "high", "c": None}
    assert lb.merge_bg_labels(auto, {"b": "low", "d": "high"}) == {"a": "low", "b": "low", "d": "high"}
    assert lb.merge_bg_labels(lb.label_by_rank({"x": 0.0}).labels, {}) == {}
    with pytest.raises(ValueError):
        lb.merge_bg_labels({}, {"a": "mid"})


def test_labels_file_roundtrip(tmp_path):
    p = tmp_path / "labels.json"
    assert lb.load_labels_file(p) == {}
    lb.save_labels_file(p, {"b": "low", "a": "high"})
    assert lb.load_labels_file(p) == {"a": "high", "b": "low"}
    assert list(json.loads(p.read_text())["labels"]) == ["a", "b"]
    p.write_text('{"labels": {}}')
    with pytest.raises(DevilError, match="not a labels file"):
        lb.load_labels_file(p)
    p.write_text('{"format": "%s", "labels": {"a": "medium"}}' % lb.LABELS_FILE_FORMAT)
    with pytest.raises(DevilError, match="medium"):
        lb.load_labels_file(p)

"""In `devil diagnose --predictions`: per-pair metric values cached by content and
scoring identity (a warm run scores nothing, the same bytes; a changed prediction is scored again, alone), a damaged
value entry is scored again and named, and inverted masks are warned about."""
from __future__ import annotations

import json
from pathlib import Path

import cv2

from devil_dataset.cli import main

from ..eval.davis_data import write_moving_davis

NAMES = ["bear", "boat", "car", "dog"]


def _davis(root: Path) -> None:
    write_moving_davis(root, tuple(NAMES), frames=6)


def _argv(root: Path, out: str) -> list[str]:
    return ["diagnose", "--gt-dir", str(root / "GT"), "--mask-dir", str(root / "MASKS"), "--out", str(root / out),
            "--scoring-size", "96x64", "--detector", "orb", "--cache", str(root / "cache"), "--quiet",
            "--predictions", f"mine={root / 'PRED'}"]


def _counts(text: str) -> str:
    return text.split("metric values: ")[1].splitlines()[0]


def test_warm_run_scores_nothing_and_a_changed_prediction_alone_is_scored(tmp_path, capsys):
    _davis(tmp_path)
    assert main(_argv(tmp_path, "one")) == 0
    assert _counts(capsys.readouterr().out) == "0 (method, pair) from cache, 4 scored"
    assert main(_argv(tmp_path, "two")) == 0
    assert _counts(capsys.readouterr().out) == "4 (method, pair) from cache, 0 scored"
    for name in ("attributes.tsv", "diagnosis.md", "diagnosis.tsv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    frame = tmp_path / "PRED" / "car" / "00003.png"
    cv2.imwrite(str(frame), 255 - cv2.imread(str(frame)))  # another version of the method on one video
    assert main(_argv(tmp_path, "three")) == 0
    assert _counts(capsys.readouterr().out) == "3 (method, pair) from cache, 1 scored"


def test_damaged_value_entry_is_scored_again_and_named(tmp_path, capsys):
    _davis(tmp_path)
    assert main(_argv(tmp_path, "one")) == 0
    entries = [p for p in (tmp_path / "cache").rglob("*.json") if '"values"' in p.read_text()]
    assert len(entries) == 4
    doc = json.loads(entries[0].read_text())
    doc["content"]["values"]["psnr"] += 1e-9  # a flipped low bit: still a number
    entries[0].write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(_argv(tmp_path, "two")) == 0
    captured = capsys.readouterr()
    assert _counts(captured.out) == "3 (method, pair) from cache, 1 scored"
    assert f"1 damaged entry (checksum mismatch) recomputed and rewritten: {entries[0]}" in captured.err
    assert (tmp_path / "one" / "diagnosis.tsv").read_bytes() == (tmp_path / "two" / "diagnosis.tsv").read_bytes()


def test_inverted_masks_are_warned_in_diagnose(tmp_path, capsys):
    _davis(tmp_path)
    for png in (tmp_path / "MASKS").rglob("*.png"):
        cv2.imwrite(str(png), 255 - cv2.imread(str(png), cv2.IMREAD_GRAYSCALE))
    assert main(_argv(tmp_path, "out")) == 0
    err = capsys.readouterr().err
    assert "devil diagnose: warning: were the masks read inverted? method mine: 4 of 4 videos (bear: the hole " \
           "covers" in err


def test_video_without_masks_is_named_in_diagnose(tmp_path, capsys):
    """In `devil diagnose`: a ground-truth video without a mask folder is named with the reason."""
    import shutil

    _davis(tmp_path)
    shutil.rmtree(tmp_path / "MASKS" / "dog")
    argv = [a for a in _argv(tmp_path, "out") if a not in ("--predictions", f"mine={tmp_path / 'PRED'}")]
    assert main(argv) == 0
    assert f"devil diagnose: left out 1 ground-truth video without masks: dog: no mask folder " \
           f"{tmp_path / 'MASKS' / 'dog'}" in capsys.readouterr().err

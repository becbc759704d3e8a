"""The HTML report's clips when slices share them: a clip shown on several slices (its ground truth, or the same
(clip, hole) unit) is made and encoded once and copied, and every file is the one a report of that slice alone
writes; the clips are encoded in the background (:class:`ClipEncoding`) with the same files."""
from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.eval.report import clip_material
from devil_dataset.eval.report.html import ClipEncoding, write_html_report

from .test_html import make_tiny_evaluation

COPY_SLICE = "fg_motion_low"  # a third slice holding fg_size_low's results (the same clips, holes and predictions)


@pytest.fixture(scope="module")
def shared_docs(tmp_path_factory) -> list[dict]:
    docs = make_tiny_evaluation(tmp_path_factory.mktemp("shared_clips"))
    extra = [dict(copy.deepcopy(d), slice=COPY_SLICE) for d in docs if d["slice"] == "fg_size_low"]
    return docs + extra


def _files(folder: Path, under: str = "") -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.relative_to(folder).as_posix().startswith(under)}


def test_shared_clips_are_encoded_once_with_the_files_of_each_slice_alone(tmp_path, shared_docs, monkeypatch):
    encoded = []
    original = clip_material.write_clip_mp4
    monkeypatch.setattr(clip_material, "write_clip_mp4", lambda frames, path, *a, **k: encoded.append(path)
                        or original(frames, path, *a, **k))
    both = write_html_report(shared_docs, tmp_path / "both", engine=get_engine("local")).parent
    clips = _files(both, "clips/")
    mp4 = [n for n in clips if n.endswith(".mp4")]
    # 3 slices x 2 clips x (ground truth, masked input, 2 methods x (output, error)); the copied slice's 12 are copies
    assert len(mp4) == 3 * 2 * 6 and len(encoded) == 2 * 2 * 6
    copied = sorted(n for n in mp4 if n.startswith(f"clips/{COPY_SLICE}__"))
    assert copied and all(clips[n] == clips[n.replace(COPY_SLICE, "fg_size_low", 1)] for n in copied)
    monkeypatch.undo()
    alone = write_html_report([d for d in shared_docs if d["slice"] == COPY_SLICE], tmp_path / "alone",
                              engine=get_engine("local")).parent
    assert {n: h for n, h in clips.items() if n.startswith(f"clips/{COPY_SLICE}__")} == _files(alone, "clips/")


def test_clips_started_before_the_report_give_the_same_files(tmp_path, shared_docs):
    engine = get_engine("local", jobs=2)
    plain = write_html_report(shared_docs, tmp_path / "plain", engine=engine).parent
    encoding = ClipEncoding(shared_docs, tmp_path / "early", engine=engine)
    early = write_html_report(shared_docs, tmp_path / "early", encoding=encoding, engine=engine).parent
    assert _files(early) == _files(plain)


def test_cancelled_encoding_stops_before_the_queued_clips(tmp_path, shared_docs):
    encoding = ClipEncoding(shared_docs, tmp_path / "cancelled", engine=get_engine("local"))
    encoding.cancel()
    groups = sum(len(s["groups"]) for s in encoding.sections())
    assert groups < 3 * 2  # at most the clip being made when it was cancelled

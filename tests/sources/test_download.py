"""The downloader against a Flickr stand-in on 127.0.0.1 (tests/sources/conftest.py)."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devil_dataset.cli import main
from devil_dataset.sources.catalog import load_catalog
from devil_dataset.sources.download import MANIFEST_NAME, PARTIAL_DIRNAME, download_sources, read_sources_manifest

pytest.importorskip("yt_dlp", reason="the `sources` extra (yt-dlp) is not installed")

IDS = load_catalog().video_ids
REPO = Path(__file__).resolve().parents[2]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_obtains_available_reports_missing_and_resumes(flickr, source_videos, tmp_path):
    flickr.behaviour.update({IDS[1]: "503-once", IDS[2]: "404", IDS[3]: "truncate"})
    waits = []
    ids = list(IDS[:7])  # IDS[6] is not served at all
    result = download_sources(tmp_path, video_ids=ids, base_url=flickr.base_url, backoff_s=0.25, jobs=3,
                              progress=False, sleep=waits.append)
    by_id = {r.video_id: r for r in result.records}
    assert [r.video_id for r in result.records] == ids
    for vid in (IDS[0], IDS[1], IDS[3], IDS[5]):
        rec = by_id[vid]
        assert rec.status == "ok", rec
        data = (tmp_path / rec.file).read_bytes()
        assert data == source_videos[vid] and rec.sha256 == sha(data) and rec.size == len(data)
        assert (rec.width, rec.height, rec.fps, rec.fps_fraction) == (1920, 1080, 25.0, "25/1")
        assert rec.file == f"{vid}.mp4" and rec.user is None  # the generic extractor knows no owner
    assert by_id[IDS[0]].frame_count == 3 and by_id[IDS[5]].frame_count == 2
    assert by_id[IDS[1]].attempts == 2 and by_id[IDS[3]].attempts == 2
    assert sorted(waits) == [0.25, 0.25]  # one backoff each for the 503 and the truncated transfer
    assert (by_id[IDS[2]].status, by_id[IDS[2]].reason) == ("missing", "not found (HTTP 404)")
    assert by_id[IDS[6]].status == "missing" and "404" in by_id[IDS[6]].reason
    assert by_id[IDS[4]].status == "rejected" and by_id[IDS[4]].reason == "not 1920x1080 (1280x720)"
    assert not (tmp_path / f"{IDS[4]}.mp4").exists() and (tmp_path / by_id[IDS[4]].file).is_file()
    # the truncated transfer was resumed with a range request, not restarted
    half = len(source_videos[IDS[3]]) // 2
    starts = [int(r[6:-1]) for p, r in flickr.requests if IDS[3] in p and r]
    assert len(starts) == 1 and 0 < starts[0] <= half, flickr.requests
    assert list((tmp_path / PARTIAL_DIRNAME).iterdir()) == []
    assert read_sources_manifest(tmp_path)[IDS[0]] == by_id[IDS[0]]
    assert "obtained 4 of 7 listed videos; 3 not obtained" in result.table()

    # a re-run asks the server only for the videos that are still missing
    before = len(flickr.requests)
    again = download_sources(tmp_path, video_ids=ids, base_url=flickr.base_url, backoff_s=0, progress=False)
    asked = {p.split("/")[3] for p, _ in flickr.requests[before:]}
    assert asked == {IDS[2], IDS[6]}
    assert [r.status for r in again.records] == [r.status for r in result.records]


def test_cli_exits_1_when_nothing_usable(flickr, tmp_path, capsys):
    flickr.behaviour[IDS[0]] = "404"
    code = main(["sources", "download", "--out", str(tmp_path), "--ids", IDS[0], IDS[4], "--base-url",
                 flickr.base_url, "--backoff", "0", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "not found (HTTP 404)" in out and "not 1920x1080 (1280x720)" in out
    assert "obtained 0 of 2 listed videos" in out


def test_unknown_id_is_refused(tmp_path, capsys):
    assert main(["sources", "download", "--out", str(tmp_path), "--ids", "123", "--quiet"]) == 2
    assert "not in the DEVIL source list: 123" in capsys.readouterr().err


def test_flickr_api_path_and_credentials_never_written(flickr, source_videos, tmp_path, monkeypatch, capsys):
    key, secret = "KEY-marker-7f3a9c", "SECRET-marker-51d0e2"
    monkeypatch.setenv("FLICKR_API_KEY", key)
    monkeypatch.setenv("FLICKR_API_SECRET", secret)
    monkeypatch.setenv("DEVIL_SOURCES_BASE_URL", flickr.base_url)
    flickr.behaviour[IDS[1]] = "private"  # the fake API echoes the key in its error message
    code = main(["sources", "download", "--out", str(tmp_path), "--ids", IDS[0], IDS[1], IDS[6], "--backoff", "0"])
    captured = capsys.readouterr()
    assert code == 0
    recs = read_sources_manifest(tmp_path)
    assert recs[IDS[0]].status == "ok" and recs[IDS[0]].user == flickr.user and recs[IDS[0]].backend == "flickr-api"
    assert recs[IDS[0]].file == f"{flickr.user}-{IDS[0]}.mp4"
    assert (tmp_path / recs[IDS[0]].file).read_bytes() == source_videos[IDS[0]]
    # the release's address was used: owner and secret from getInfo
    assert any(p.startswith(f"/photos/{flickr.user}/{IDS[0]}/play/1080p/") for p, _ in flickr.requests)
    assert recs[IDS[1]].status == "missing"
    assert recs[IDS[1]].reason == "Flickr API: Permission denied (api_key ***) (code 2)"
    assert "not found" in recs[IDS[6]].reason
    for text in (captured.out, captured.err):
        assert key not in text and secret not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data and secret.encode() not in data, path
    assert "***" in (tmp_path / MANIFEST_NAME).read_text()


def test_killed_download_resumes_to_an_identical_file(flickr, source_videos, tmp_path):
    vid = IDS[5]  # the largest served file (a few MB)
    flickr.behaviour[vid] = "stall"  # half the body, then the server hangs
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    code = ("import sys; from devil_dataset.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, "sources", "download", "--out", str(tmp_path), "--ids", vid,
                             "--base-url", flickr.base_url, "--quiet"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    part = tmp_path / PARTIAL_DIRNAME / f"{vid}.mp4.part"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not (part.is_file() and part.stat().st_size > 0):
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert part.is_file() and 0 < part.stat().st_size < len(source_videos[vid])
    assert not (tmp_path / f"{vid}.mp4").exists()  # killed: nothing complete-looking in place
    kept = part.stat().st_size
    flickr.behaviour.pop(vid)
    flickr.release.set()
    result = download_sources(tmp_path, video_ids=[vid], base_url=flickr.base_url, progress=False)
    assert result.records[0].status == "ok"
    assert (tmp_path / f"{vid}.mp4").read_bytes() == source_videos[vid]
    assert (f"/photos/-/{vid}/", f"bytes={kept}-") in flickr.requests
    assert json.loads((tmp_path / MANIFEST_NAME).read_text())["videos"][vid]["sha256"] == sha(source_videos[vid])

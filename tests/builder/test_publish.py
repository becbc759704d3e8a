"""`publish`: dry run lists the published files (never the work folder); offline upload fails clearly."""
from __future__ import annotations

import pytest

from devil_dataset.builder import dataset_writer as w
from devil_dataset.builder.publish import publish, publish_plan
from devil_dataset.core.errors import DevilError

EXPECTED = ["README.md", "data/all/test-00000-of-00002.parquet", "data/all/test-00001-of-00002.parquet",
            "manifest.json", "preview/test-00000-of-00001.parquet"]


def _repo(tmp_path):
    import numpy as np

    from devil_dataset.core.dataset_schema import encode_frames, encode_hole

    def row(i):
        return {"clip_id": f"c{i}", "mask_id": "m", "frames": encode_frames(np.zeros((1, 8, 8, 3), np.uint8)),
                "hole": encode_hole(np.zeros((1, 8, 8), bool)), "num_frames": 1, "height": 8, "width": 8, "fps": 1.0,
                "preset": "", "mask_index": -1, "mask_seed": -1, "reversed": False, "source": "s",
                "source_first_frame": 0, "attribution": "", "license": "", "camera_motion_score": 0.0,
                "camera_motion_label": "", "bg_scene_motion_score": 0.0, "bg_scene_motion_label": "",
                "fg_displacement_label": "", "fg_motion_label": "", "fg_size_label": "", "mask_mean_area": 0.0,
                "mask_centroid_speed": 0.0, "mask_pose_motion": 0.0, "mask_union_coverage": 0.0}

    w.write_config(tmp_path, "all", 2, row)
    (tmp_path / ".devil-build").mkdir(exist_ok=True)
    (tmp_path / ".devil-build" / "scores.json").write_text("{}")
    w.finish_repository(tmp_path, configs={"all": {"rows": 2, "description": "all x all"}}, license="mit",
                        pretty_name="t", build_notes="", attributions=[], info={})
    return tmp_path


def _fake_hub_api(repo, sent: list):
    """A stand-in for ``huggingface_hub.HfApi`` that records the paths an upload sends into ``sent``."""

    class FakeApi:
        def __init__(self, token=None):
            pass

        def create_repo(self, *args, **kwargs):
            pass

        def create_commit(self, repo_id, operations, **kwargs):
            sent.extend(op.path_in_repo for op in operations)

        def upload_folder(self, **kwargs):  # the old path: uploads whatever the folder holds
            sent.extend(sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")
                               if p.is_file() and ".devil-build" not in p.parts))

    return FakeApi


def test_dry_run_lists_published_files(tmp_path):
    repo = _repo(tmp_path)
    files = publish(repo, "org/name", dry_run=True)
    names = [n for n, _ in files]
    assert names == EXPECTED
    assert all(size == (repo / n).stat().st_size for n, size in files)


def test_dry_run_checks_the_card_offline(tmp_path):
    """A card with an unknown licence id or a config without files is refused before upload."""
    repo = _repo(tmp_path)
    card = repo / "README.md"
    text = card.read_text()
    card.write_text(text.replace("license: mit", "license: flickr-free"))
    w.write_manifest(repo, {})
    with pytest.raises(DevilError, match="not a Hub licence id"):
        publish(repo, "org/name", dry_run=True)
    assert "data/all/" in text  # the card lists each config's exact shard files
    card.write_text(text.replace("data/all/", "data/gone/"))
    w.write_manifest(repo, {})
    with pytest.raises(DevilError, match="no file matches 'data/gone"):
        publish(repo, "org/name", dry_run=True)


def test_upload_runs_the_hubs_card_validator_first(tmp_path, monkeypatch):
    """The real publish path posts the card to the Hub's /api/validate-yaml (here a server on 127.0.0.1)."""
    import http.server
    import json
    import threading

    import huggingface_hub
    import huggingface_hub.constants as constants

    repo = _repo(tmp_path)
    seen, verdict = [], {"status": 400, "body": b"Invalid metadata in README.md.\n- \"license\" must be one of [...]"}

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, body["repoType"], body["content"][:3]))
            self.send_response(verdict["status"])
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(verdict["body"])))
            self.end_headers()
            self.wfile.write(verdict["body"])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    sent = []
    FakeApi = _fake_hub_api(repo, sent)

    try:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the test session runs offline; this server is local
        monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
        with pytest.raises(DevilError, match="the Hub rejected the dataset card"):
            publish(repo, "org/name")
        assert seen == [("/api/validate-yaml", "dataset", "---")] and sent == []
        verdict.update(status=200, body=b"")
        publish(repo, "org/name")
        assert sorted(sent) == EXPECTED
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_checks_before_upload(tmp_path):
    repo = _repo(tmp_path)
    with pytest.raises(DevilError, match="malformed repo id"):
        publish(repo, "no-slash", dry_run=True)
    (repo / "data" / "all" / "test-00000-of-00002.parquet").write_bytes(b"changed")
    with pytest.raises(DevilError, match="checksum mismatch"):
        publish_plan(repo)
    with pytest.raises(DevilError, match="no README"):
        publish_plan(tmp_path / "data")


def test_offline_upload_fails_with_a_clear_error(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_TOKEN", "hf_fake_token_for_test")
    with pytest.raises(DevilError, match="upload of .* failed .*network"):
        publish(repo, "org/name")


def test_publish_sends_exactly_the_manifest_files(tmp_path, monkeypatch):
    """Stray files (credentials, notes, a junk shard) are never uploaded."""
    repo = _repo(tmp_path)
    (repo / "credentials.json").write_text('{"token": "x"}')
    (repo / "notes.txt").write_text("todo")
    (repo / "data" / "all" / "junk.parquet").write_bytes(b"junk")
    expected = EXPECTED
    assert [n for n, _ in publish(repo, "org/name", dry_run=True)] == expected
    sent = []
    FakeApi = _fake_hub_api(repo, sent)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub.DatasetCard, "validate", lambda self, repo_type=None: None)  # no network
    files = publish(repo, "org/name")
    assert sorted(sent) == expected and [n for n, _ in files] == expected


def test_publish_refuses_files_that_do_not_match_the_manifest(tmp_path):
    """A truncated shard (the manifest records another size) is refused, naming the file."""
    repo = _repo(tmp_path)
    shard = repo / "data" / "all" / "test-00001-of-00002.parquet"
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(DevilError, match="test-00001-of-00002.parquet"):
        publish(repo, "org/name", dry_run=True)

"""`publish`: dry run lists the published files (never the work folder); offline upload fails clearly."""
from __future__ import annotations

import pytest

from devil_dataset.builder import dataset_writer as w
from devil_dataset.builder.publish import publish, publish_plan
from devil_dataset.errors import DevilError


def _repo(tmp_path):
    import numpy as np

    from devil_dataset.data.features import encode_frames, encode_hole

    def row(i):
        return {"clip_id": f"c{i}", "mask_id": "m", "frames": encode_frames(np.zeros((1, 8, 8, 3), np.uint8)),
                "hole": encode_hole(np.zeros((1, 8, 8), bool)), "num_frames": 1, "height": 8, "width": 8, "fps": 1.0,
                "preset": "", "mask_index": -1, "mask_seed": -1, "reversed": False, "source": "s",
                "source_first_frame": 0, "attribution": "", "license": "", "camera_motion_score": 0.0,
                "camera_motion_label": "", "bg_scene_motion_score": 0.0, "bg_scene_motion_label": "",
                "fg_displacement_label": "", "fg_motion_label": "", "fg_size_label": "", "mask_mean_area": 0.0,
                "mask_centroid_speed": 0.0, "mask_pose_motion": 0.0, "mask_union_coverage": 0.0}

    w.write_config(tmp_path, "all", 2, row)
    (tmp_path / ".devil-build").mkdir()
    (tmp_path / ".devil-build" / "scores.json").write_text("{}")
    w.finish_repository(tmp_path, configs={"all": {"rows": 2, "description": "all x all"}}, license="mit",
                        pretty_name="t", build_notes="", attributions=[], info={})
    return tmp_path


def test_dry_run_lists_published_files(tmp_path):
    repo = _repo(tmp_path)
    files = publish(repo, "org/name", dry_run=True)
    names = [n for n, _ in files]
    assert names == ["README.md", "data/all/test-00000-of-00002.parquet", "data/all/test-00001-of-00002.parquet",
                     "manifest.json"]
    assert all(size == (repo / n).stat().st_size for n, size in files)


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

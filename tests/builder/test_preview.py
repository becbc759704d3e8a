"""The `preview` config: the first rows as H.264 mp4 in a `datasets` Video() column, deterministic."""
from __future__ import annotations

import io

import numpy as np

from devil_dataset.builder import dataset_writer as w
from devil_dataset.builder.preview import PREVIEW_FILE, tint_hole, write_preview
from devil_dataset.core.dataset_schema import encode_frames, encode_hole


def _row(i: int) -> dict:
    rng = np.random.default_rng(i)
    return {"clip_id": f"c{i}", "mask_id": f"m{i}",
            "frames": encode_frames((rng.random((6, 48, 64, 3)) * 255).astype(np.uint8)),
            "hole": encode_hole(rng.random((6, 48, 64)) < 0.3), "num_frames": 6, "height": 48, "width": 64,
            "fps": 25.0, "preset": "", "mask_index": -1, "mask_seed": -1, "reversed": False, "source": "s",
            "source_first_frame": 0, "attribution": "", "license": "", "camera_motion_score": 0.0,
            "camera_motion_label": "", "bg_scene_motion_score": 0.0, "bg_scene_motion_label": "",
            "fg_displacement_label": "", "fg_motion_label": "", "fg_size_label": "", "mask_mean_area": 0.0,
            "mask_centroid_speed": 0.0, "mask_pose_motion": 0.0, "mask_union_coverage": 0.0}


def test_tint_hole_blends_only_hole_pixels():
    frames = np.full((1, 2, 2, 3), 100, np.uint8)
    hole = np.array([[[True, False], [False, False]]])
    out = tint_hole(frames, hole)
    assert out[0, 0, 0].tolist() == [50, 178, 50] and (out[0, 1:] == 100).all() and out[0, 0, 1].tolist() == [100] * 3


def test_preview_config_loads_with_datasets_and_plays(tmp_path):
    import av
    import datasets

    w.write_config(tmp_path, "all", 3, _row)
    w.finish_repository(tmp_path, configs={"all": {"rows": 3, "description": "all x all"}}, license="mit",
                        pretty_name="t", build_notes="", attributions=[], info={}, preview_rows=2)
    first = (tmp_path / "preview" / PREVIEW_FILE).read_bytes()
    ds = datasets.load_dataset(str(tmp_path), "preview", split="test")
    assert isinstance(ds.features["video"], datasets.Video) and ds["clip_id"] == ["c0", "c1"]
    ds = ds.cast_column("video", datasets.Video(decode=False))
    with av.open(io.BytesIO(ds[1]["video"]["bytes"])) as c:
        stream = c.streams.video[0]
        assert stream.codec_context.name == "h264"
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(stream)]
    assert len(frames) == 6 and frames[0].shape == (48, 64, 3)
    assert len(datasets.load_dataset(str(tmp_path), "all", split="test")) == 3  # the evaluation config still loads
    assert write_preview(tmp_path, "all", rows=2)["rows"] == 2
    assert (tmp_path / "preview" / PREVIEW_FILE).read_bytes() == first  # deterministic
    assert write_preview(tmp_path, "nothing-here") is None and not (tmp_path / "preview").exists()

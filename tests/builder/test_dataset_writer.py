"""The repository writer: shards, deterministic parquet, resume, card YAML, manifest checksums."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from devil_dataset.builder import dataset_writer as w
from devil_dataset.core.dataset_schema import decode_frames, decode_hole, encode_frames, encode_hole
from devil_dataset.core.errors import DevilError
from devil_dataset.core.slices import SLICES


def _row(i: int) -> dict:
    rng = np.random.default_rng(i)
    frames = (rng.random((3, 16, 24, 3)) * 255).astype(np.uint8)
    hole = rng.random((3, 16, 24)) < 0.3
    return {
        "clip_id": f"src-{i:05d}", "mask_id": f"devil_fgs-h_fgm-h_fgd-h_{i:05d}",
        "frames": encode_frames(frames, "png"), "hole": encode_hole(hole),
        "num_frames": 3, "height": 16, "width": 24, "fps": 25.0, "preset": "fgs-h_fgm-h_fgd-h",
        "mask_index": i, "mask_seed": 1, "reversed": bool(i % 2), "source": "src.mp4", "source_first_frame": 0,
        "attribution": "me", "license": "MIT", "camera_motion_score": float("inf"), "camera_motion_label": "high",
        "bg_scene_motion_score": float("nan"), "bg_scene_motion_label": "", "fg_displacement_label": "high",
        "fg_motion_label": "high", "fg_size_label": "high", "mask_mean_area": 0.3, "mask_centroid_speed": 0.0,
        "mask_pose_motion": 0.1, "mask_union_coverage": 0.9,
    }


def test_codecs_roundtrip_lossless_png_and_mask():
    rng = np.random.default_rng(0)
    frames = (rng.random((2, 8, 10, 3)) * 255).astype(np.uint8)
    hole = rng.random((2, 8, 10)) < 0.5
    assert np.array_equal(decode_frames(encode_frames(frames, "png")), frames)
    assert np.array_equal(decode_hole(encode_hole(hole)), hole)
    jpeg = decode_frames(encode_frames(frames, "jpeg"))
    assert jpeg.shape == frames.shape and jpeg.dtype == np.uint8
    assert encode_frames(frames, "jpeg") == encode_frames(frames, "jpeg")  # deterministic
    with pytest.raises(ValueError):
        encode_frames(frames, "webp")


def test_shard_ranges():
    assert w.shard_ranges(0) == [range(0, 0)]
    assert w.shard_ranges(1) == [range(0, 1)]
    assert len(w.shard_ranges(150)) == 24 and max(len(r) for r in w.shard_ranges(150)) <= 8  # <= 8 rows per shard
    assert sum(len(r) for r in w.shard_ranges(37)) == 37 and len(w.shard_ranges(37)) == 8
    for n in (3, 17, 40, 150, 938, 1250):  # DDP: world sizes 2, 4, 8 get whole shards, as many each
        count = len(w.shard_ranges(n))
        assert count in (2, 4) or count % 8 == 0
        assert max(len(r) for r in w.shard_ranges(n)) <= w.MAX_ROWS_PER_SHARD


def test_split_dataset_by_node_gives_every_rank_whole_shards(tmp_path):
    """`datasets.distributed.split_dataset_by_node` on a streaming config: 4 ranks, 2 shards each, all rows once."""
    import datasets
    from datasets.distributed import split_dataset_by_node

    rows = 12
    paths = []
    for i, r in enumerate(w.shard_ranges(rows * 2)):  # 24 rows -> 4 shards
        paths.append(str(w.write_shard(tmp_path / f"s{i}.parquet", (_row(k) for k in r))))
    assert len(paths) == 4
    ds = datasets.load_dataset("parquet", data_files=paths, split="train", streaming=True)
    seen = []
    for rank in range(2):
        part = split_dataset_by_node(ds, rank=rank, world_size=2)
        assert part.num_shards == 2
        seen += [row["clip_id"] for row in part]
    assert sorted(seen) == sorted(_row(k)["clip_id"] for k in range(rows * 2))


def test_write_shard_deterministic_one_row_per_group(tmp_path):
    a = w.write_shard(tmp_path / "a.parquet", (_row(i) for i in range(3)))
    b = w.write_shard(tmp_path / "b.parquet", (_row(i) for i in range(3)))
    assert a.read_bytes() == b.read_bytes()
    pf = pq.ParquetFile(a)
    assert pf.num_row_groups == 3 and pf.metadata.num_rows == 3
    meta = json.loads(pf.schema_arrow.metadata[b"huggingface"])
    assert meta["info"]["features"]["frames"]["_type"] == "List"
    # written as datasets 5.x writes for the Hub: content-defined pages (options recorded) and a page index
    assert json.loads(pf.metadata.metadata[b"content_defined_chunking"]) == w.PARQUET_CDC_OPTIONS
    assert all(pf.metadata.row_group(g).column(c).has_offset_index
               for g in range(3) for c in range(pf.metadata.num_columns))


def test_the_same_clip_writes_the_same_pages_in_every_config(tmp_path):
    """Content-defined chunking: a clip's frame pages are byte-identical whichever shard and position hold it,
    so Xet storage keeps one copy for all configs that share the clip."""
    import pyarrow.parquet as pq

    big = [{**_row(i), "frames": encode_frames((np.random.default_rng(i).random((80, 64, 96, 3)) * 255)
                                               .astype(np.uint8), "png")} for i in range(3)]

    def frame_pages(path, group):
        pf = pq.ParquetFile(path)
        col = pf.schema_arrow.get_field_index("frames")
        meta = pf.metadata.row_group(group).column(col)
        data = path.read_bytes()
        start = meta.dictionary_page_offset or meta.data_page_offset
        return data[start:start + meta.total_compressed_size]

    a = w.write_shard(tmp_path / "a.parquet", big)
    b = w.write_shard(tmp_path / "b.parquet", [big[2], big[0]])
    pages = frame_pages(a, 2)
    assert len(pages) > 1 << 20 and pages == frame_pages(b, 0) and frame_pages(a, 0) == frame_pages(b, 1)
    assert not list(tmp_path.glob(".tmp-*"))


def test_write_config_resumes_and_drops_stale_shards(tmp_path):
    calls = []

    def make(i):
        calls.append(i)
        return _row(i)

    paths = w.write_config(tmp_path, "all", 4, make)
    assert [p.name for p in paths] == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    mtimes = [p.stat().st_mtime_ns for p in paths]
    stale = tmp_path / "data" / "all" / "test-00000-of-00009.parquet"
    stale.write_bytes(b"x")
    calls.clear()
    w.write_config(tmp_path, "all", 4, make)
    assert calls == [] and [p.stat().st_mtime_ns for p in paths] == mtimes and not stale.exists()

    class Boom(Exception):
        pass

    def fail_after_first(path):
        raise Boom(path)

    w.write_config(tmp_path, "fg_size_low", 4, make, on_shard=None)
    (tmp_path / "data" / "fg_size_low" / "test-00001-of-00002.parquet").unlink()
    calls.clear()
    with pytest.raises(Boom):
        w.write_config(tmp_path, "fg_size_low", 4, make, on_shard=fail_after_first)
    assert calls == []  # the first shard exists: nothing re-encoded before the (simulated) crash


def test_card_yaml_configs_license_and_docs(tmp_path):
    configs = {name: {"rows": 5, "bytes": 1000, "description": f"{s.videos} x {s.masks}"} for name, s in SLICES.items()}
    card = str(w.render_card(configs=configs, license="other", pretty_name="DEVIL test", build_notes="notes here",
                             attributions=["a: b"]))
    head = yaml.safe_load(card.split("---")[1])
    names = [c["config_name"] for c in head["configs"]]
    assert names == list(SLICES) and len(names) == 11
    assert [c for c in head["configs"] if c.get("default")] == [head["configs"][0]] and names[0] == "all"
    assert head["configs"][3]["data_files"] == [{"split": "test", "path": f"data/{names[3]}/test-*.parquet"}]
    assert head["license"] == "other" and head["size_categories"] == ["n<1K"] and head["task_categories"]
    assert "@inproceedings{szeto" in card and "notes here" in card and "`mask_pose_motion`" in card
    assert "{{" not in card


def test_manifest_and_verify(tmp_path):
    w.write_config(tmp_path, "all", 2, _row)
    (tmp_path / ".devil-build").mkdir(exist_ok=True)
    (tmp_path / ".devil-build" / "x").write_text("work")
    sizes = w.finish_repository(tmp_path, configs={"all": {"rows": 2, "description": "all x all"}}, license="mit",
                                pretty_name="t", build_notes="", attributions=[], info={"seed": 0})
    doc = w.verify_manifest(tmp_path)
    assert set(doc["files"]) == {"README.md", "data/all/test-00000-of-00002.parquet",
                                 "data/all/test-00001-of-00002.parquet", "preview/test-00000-of-00001.parquet"}
    assert doc["configs"]["all"] == {"rows": 2, "bytes": sizes["all"]} and sizes["all"] > 0
    (tmp_path / "data" / "all" / "test-00001-of-00002.parquet").write_bytes(b"tampered")
    with pytest.raises(DevilError, match="checksum mismatch"):
        w.verify_manifest(tmp_path)


def test_write_config_redoes_a_damaged_shard(tmp_path):
    """A truncated (or byte-flipped) shard is verified against its recorded hash and rewritten."""
    paths = w.write_config(tmp_path, "all", 4, _row)
    original = [p.read_bytes() for p in paths]
    paths[0].write_bytes(original[0][: len(original[0]) // 2])  # truncated
    flipped = bytearray(original[1])
    flipped[len(flipped) // 2] ^= 0xFF
    paths[1].write_bytes(bytes(flipped))  # same size, one byte changed
    calls = []

    def make(i):
        calls.append(i)
        return _row(i)

    w.write_config(tmp_path, "all", 4, make)
    assert calls == [0, 1, 2, 3]
    assert [p.read_bytes() for p in paths] == original
    calls.clear()
    w.write_config(tmp_path, "all", 4, make)  # intact shards are still kept
    assert calls == []


def test_empty_config_is_left_out_of_card_and_data(tmp_path):
    """A config with 0 rows writes no shard and no card entry (it could not be loaded)."""
    assert w.write_config(tmp_path, "fg_size_low", 0, _row) == []
    assert not (tmp_path / "data" / "fg_size_low").exists()
    w.write_config(tmp_path, "all", 2, _row)
    w.finish_repository(tmp_path, configs={"all": {"rows": 2, "description": "a"},
                                           "fg_size_low": {"rows": 0, "description": "b"}},
                        license="mit", pretty_name="t", build_notes="", attributions=[], info={})
    card = (tmp_path / "README.md").read_text()
    head = yaml.safe_load(card.split("---")[1])
    assert [c["config_name"] for c in head["configs"]] == ["all", "preview"]
    # plain `datasets` can only say "not found"; the card says which configs are out and why
    assert f"Configs left out of this build: fg_size_low: {w.EMPTY_CONFIG_REASON}." in card
    doc = w.verify_manifest(tmp_path)
    assert doc["configs"]["fg_size_low"]["rows"] == 0 and doc["configs"]["fg_size_low"]["omitted"]


def test_prepare_output_dir_removes_temporaries_left_in_work_subfolders(tmp_path):
    out = tmp_path / "ds"
    masks = out / w.BUILD_DIR / "masks"
    masks.mkdir(parents=True)
    stale = [masks / ".tmp-fgs-l_00001_832x480.npy-abc", out / w.BUILD_DIR / "frames" / "c1" / ".tmp-dir-x"]
    stale[0].write_bytes(b"half")
    stale[1].mkdir(parents=True)
    keep = masks / "fgs-l_00001_832x480.npy"
    keep.write_bytes(b"done")
    w.prepare_output_dir(out)
    assert not any(p.exists() for p in stale) and keep.read_bytes() == b"done"


def test_plain_load_dataset_of_a_build_missing_a_shard_fails(tmp_path, monkeypatch):
    """The card lists each config's exact shards, so plain `datasets` refuses a copy missing one
    (with globs it loaded the remaining rows without a word)."""
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    out = tmp_path / "ds"
    w.write_config(out, "all", 4, _row)
    w.finish_repository(out, configs={"all": {"rows": 4, "description": "all x all"}}, license="mit",
                        pretty_name="t", build_notes="", attributions=[], info={}, preview_rows=0)
    head = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    assert head["configs"][0]["data_files"] == [{"split": "test", "path": [
        "data/all/test-00000-of-00002.parquet", "data/all/test-00001-of-00002.parquet"]}]
    cache = str(tmp_path / "cache")
    assert len(datasets.load_dataset(str(out), "all", split="test", cache_dir=cache)) == 4
    (out / "data" / "all" / "test-00001-of-00002.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="test-00001-of-00002.parquet"):
        datasets.load_dataset(str(out), "all", split="test", cache_dir=str(tmp_path / "cache2"))

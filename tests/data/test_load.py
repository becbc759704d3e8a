"""Loading a built dataset: every config offline, map-style and streaming, torch DataLoader, identical pixels."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError
from devil_dataset.core.slices import SLICES
from devil_dataset.data import as_torch, collate_videos, iter_slice, load_slice, row_arrays


def test_load_dataset_every_config_map_and_streaming(data_tiny_dataset, data_hf_cache):
    import datasets

    for config in SLICES:
        ds = datasets.load_dataset(str(data_tiny_dataset), config, split="test", cache_dir=data_hf_cache)
        assert len(ds) == 2, config
        stream = datasets.load_dataset(str(data_tiny_dataset), config, split="test", streaming=True)
        rows = list(stream)
        assert [r["clip_id"] for r in rows] == ds["clip_id"], config
        assert rows[0]["mask_id"].startswith("devil_fgs-")
    # the default config is `all`
    default = datasets.load_dataset(str(data_tiny_dataset), split="test", cache_dir=data_hf_cache)
    assert default["clip_id"] == datasets.load_dataset(str(data_tiny_dataset), "all", split="test",
                                                       cache_dir=data_hf_cache)["clip_id"]


def test_row_contents_and_types(data_tiny_dataset, data_hf_cache):
    ds = load_slice(data_tiny_dataset, "fg_size_high", cache_dir=data_hf_cache)
    row = ds[0]
    frames, hole = row_arrays(row)
    assert frames.dtype == np.uint8 and frames.shape == (row["num_frames"], 48, 64, 3)
    assert hole.dtype == bool and hole.shape == frames.shape[:3] and hole.any()
    assert row["preset"].startswith("fgs-h_") and row["fg_size_label"] == "high"
    assert row["mask_id"] == f"devil_{row['preset']}_{row['mask_index']:05d}"
    from devil_dataset.core.masks import mask_seed

    assert row["mask_seed"] == mask_seed(row["mask_index"])
    assert row["fps"] == 25.0 and isinstance(row["reversed"], bool)
    assert abs(row["mask_mean_area"] - hole.mean()) < 1e-6


def test_ground_truth_identical_on_every_path(data_tiny_dataset, data_hf_cache):
    """map-style (PIL), torch format, streaming, iter_slice and the training dataset give the same uint8 pixels."""
    import datasets

    from devil_dataset.data.train import InpaintingTrainDataset

    config = "camera_motion_high"
    ref = list(iter_slice(data_tiny_dataset, config))
    assert len(ref) == 2
    mapped = datasets.load_dataset(str(data_tiny_dataset), config, split="test", cache_dir=data_hf_cache)
    torch_rows = mapped.with_format("torch")
    stream = datasets.load_dataset(str(data_tiny_dataset), config, split="test", streaming=True)
    stream_torch = list(stream.with_format("torch"))
    fast_map = as_torch(mapped)
    fast_stream = list(as_torch(stream))
    assert fast_map[0]["frames"].shape[-1] == 3 and fast_map[0]["hole"].ndim == 3
    first = as_torch(mapped, channels_first=True)[0]
    assert first["frames"].shape[1] == 3 and first["hole"].shape[1] == 1
    assert torch.equal(first["frames"], torch_rows[0]["frames"])  # the layout of .with_format("torch")
    assert torch.equal(first["hole"][:, 0], fast_map[0]["hole"])
    assert next(iter(as_torch(stream, channels_first=True)))["frames"].shape == first["frames"].shape
    for i, (r, s) in enumerate(zip(ref, stream)):
        for other in (mapped[i], torch_rows[i], s, stream_torch[i], fast_map[i], fast_stream[i]):
            f, h = row_arrays(other)
            assert np.array_equal(f, r["frames"]) and np.array_equal(h, r["hole"])
    train = InpaintingTrainDataset(data_tiny_dataset, config, num_frames=7, mask_renderer=_fake_renderer)
    by_id = {r["clip_id"]: r["frames"] for r in ref}
    for i in range(len(train)):
        item = train[i]
        expect = by_id[item["clip_id"]][item["start"] : item["start"] + 7]
        assert np.array_equal(item["frames"].permute(0, 2, 3, 1).numpy(), expect)


def _fake_renderer(preset, seed, num_frames):
    m = np.zeros((num_frames, 1080, 1920), bool)
    m[:, 400:700, 800 + seed % 300 : 1100 + seed % 300] = True
    return m


def test_torch_dataloader_two_workers(data_tiny_dataset, data_hf_cache):
    import datasets
    import torch

    ds = datasets.load_dataset(str(data_tiny_dataset), "all", split="test",
                               cache_dir=data_hf_cache).with_format("torch")
    batches = list(torch.utils.data.DataLoader(ds, batch_size=1, num_workers=2))  # default collate
    assert len(batches) == 2 and batches[0]["frames"].dtype == torch.uint8
    assert batches[0]["frames"].shape[2:] == (3, 48, 64) and batches[0]["hole"].dtype == torch.bool
    stream = datasets.load_dataset(str(data_tiny_dataset), "all", split="test", streaming=True).with_format("torch")
    got = list(torch.utils.data.DataLoader(stream, batch_size=2, num_workers=2, collate_fn=collate_videos))
    ids = sorted(cid for b in got for cid in b["clip_id"])
    assert ids == sorted(ds["clip_id"])  # two shards -> both workers get one
    for b in got:
        lengths = b["num_frames_valid"].tolist()
        assert b["frames"].shape[1] == max(lengths)
    fast = list(torch.utils.data.DataLoader(as_torch(stream), batch_size=1, num_workers=2))
    assert sorted(b["clip_id"][0] for b in fast) == sorted(ds["clip_id"])
    assert fast[0]["frames"].shape[-1] == 3 and fast[0]["hole"].dtype == torch.bool
    mapped_fast = as_torch(datasets.load_dataset(str(data_tiny_dataset), "all", split="test", cache_dir=data_hf_cache))
    clips = list(torch.utils.data.DataLoader(mapped_fast, batch_size=None, num_workers=2))  # one clip per step
    assert [c["clip_id"] for c in clips] == ds["clip_id"] and clips[0]["frames"].ndim == 4


def test_as_torch_on_a_map_style_slice_reads_bytes_without_rewriting_the_cache(data_tiny_dataset, tmp_path):
    """No cast_column on a map-style slice, so no Arrow cache file is written; batched fetches work."""
    import datasets

    cache = tmp_path / "hf-cache"
    ds = datasets.load_dataset(str(data_tiny_dataset), "all", split="test", cache_dir=str(cache))
    before = sorted(p.relative_to(cache) for p in cache.rglob("*.arrow"))
    fast = as_torch(ds, channels_first=True)
    assert len(fast) == len(ds) == 2 and fast.column_names == ds.column_names
    rows = fast.__getitems__([1, 0])
    assert [r["clip_id"] for r in rows] == [ds[1]["clip_id"], ds[0]["clip_id"]]
    assert fast[-1]["clip_id"] == ds[1]["clip_id"]
    assert torch.equal(rows[0]["frames"], ds.with_format("torch")[1]["frames"])
    batch = next(iter(torch.utils.data.DataLoader(fast, batch_size=2, collate_fn=collate_videos)))
    assert batch["clip_id"] == ds["clip_id"] and batch["frames"].shape[2] == 3
    assert sorted(p.relative_to(cache) for p in cache.rglob("*.arrow")) == before  # nothing rewritten
    with pytest.raises(IndexError):
        fast[2]


def test_collate_pads_clips_of_different_length(data_tiny_dataset):
    rows = list(iter_slice(data_tiny_dataset, "all"))
    lengths = [len(r["frames"]) for r in rows]
    batch = collate_videos(rows)
    assert tuple(batch["frames"].shape) == (2, max(lengths), 48, 64, 3)
    assert batch["num_frames_valid"].tolist() == lengths
    k = int(np.argmin(lengths))
    if lengths[k] < max(lengths):
        assert not batch["hole"][k, lengths[k]:].any() and batch["frames"][k, lengths[k]:].sum() == 0
    assert batch["camera_motion_score"].dtype.is_floating_point


def test_iter_slice_columns_and_errors(data_tiny_dataset, tmp_path):
    rows = list(iter_slice(data_tiny_dataset, "fg_motion_low", columns=["clip_id", "hole"]))
    assert set(rows[0]) == {"clip_id", "hole"} and rows[0]["hole"].dtype == bool
    everything = list(iter_slice(data_tiny_dataset, "all"))
    wanted = [str(everything[-1]["clip_id"]), "no-such-clip"]
    picked = list(iter_slice(data_tiny_dataset, "all", columns=["frames"], clip_ids=wanted))
    assert len(picked) == 1 and set(picked[0]) == {"frames"}  # filtered by clip id, which is not returned
    assert np.array_equal(picked[0]["frames"], everything[-1]["frames"])
    whole = list(iter_slice(data_tiny_dataset, "all", clip_ids=wanted))  # every column, one clip
    assert len(whole) == 1 and set(whole[0]) == set(everything[-1])
    assert all(np.array_equal(whole[0][k], everything[-1][k]) for k in ("frames", "hole", "clip_id"))
    with pytest.raises(DevilError, match="unknown config"):
        next(iter_slice(data_tiny_dataset, "camera_motion_medium"))
    with pytest.raises(DevilError, match="no data/all"):
        next(iter_slice(tmp_path, "all"))
    with pytest.raises(DevilError, match="no such folder"):
        next(iter_slice(tmp_path / "missing" / "x" / "y", "all"))


# --------------------------------------------------------------------------- damaged or incomplete slices


def _damaged_copy(src, tmp_path, config="all"):
    import shutil

    dst = tmp_path / "ds"
    shutil.copytree(src, dst)
    return dst, sorted((dst / "data" / config).glob("test-*.parquet"))


def test_iter_slice_and_load_slice_name_a_deleted_shard(data_tiny_dataset, tmp_path, data_hf_cache):
    """Item 2: a deleted shard is reported with the missing file and the missing clip ids (not 1 of 2 clips)."""
    ds, shards = _damaged_copy(data_tiny_dataset, tmp_path)
    expected = [r["clip_id"] for r in iter_slice(ds, "all", columns=["clip_id"])]
    gone = [r["clip_id"] for r in iter_slice(shards[1].parent.parent.parent, "all", columns=["clip_id"])
            if r["clip_id"] not in {x["clip_id"] for x in _rows_of(shards[0])}]
    shards[1].unlink()
    with pytest.raises(DevilError) as err:
        list(iter_slice(ds, "all", columns=["clip_id"]))
    text = str(err.value)
    assert shards[1].name in text and "missing" in text and all(c in text for c in gone) and gone
    assert len(expected) == 2
    with pytest.raises(DevilError, match=shards[1].name):
        load_slice(ds, "all", cache_dir=data_hf_cache)


def _rows_of(shard):
    import pyarrow.parquet as pq

    return pq.read_table(shard, columns=["clip_id"]).to_pylist()


@pytest.mark.parametrize("damage", ["truncated", "zero-byte", "byte-flipped"])
def test_iter_slice_names_a_damaged_shard(data_tiny_dataset, tmp_path, damage):
    """Item 3: truncated, empty or altered shards: a DevilError naming the file and the problem."""
    ds, shards = _damaged_copy(data_tiny_dataset, tmp_path, "fg_size_high")
    data = shards[0].read_bytes()
    if damage == "truncated":
        shards[0].write_bytes(data[: len(data) // 2])
    elif damage == "zero-byte":
        shards[0].write_bytes(b"")
    else:
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x01
        shards[0].write_bytes(bytes(flipped))
    with pytest.raises(DevilError, match=rf"{shards[0].name}.*(checksum|bytes)"):
        list(iter_slice(ds, "fg_size_high"))


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_evaluate_and_inpaint_refuse_a_damaged_slice_exit_2(data_tiny_dataset, tmp_path, capsys, damage):
    """Items 2 and 3 through the CLI: exit 2, the shard named, no traceback, nothing computed."""
    from devil_dataset.cli import main

    ds, shards = _damaged_copy(data_tiny_dataset, tmp_path, "fg_size_high")
    preds = tmp_path / "preds"
    assert main(["inpaint", "--method", "telea", "--dataset", str(ds), "--config", "fg_size_high",
                 "--out", str(preds)]) == 0
    capsys.readouterr()
    if damage == "deleted":
        shards[1].unlink()
    else:
        shards[1].write_bytes(shards[1].read_bytes()[:1000])
    rc = main(["inpaint", "--method", "telea", "--dataset", str(ds), "--config", "fg_size_high",
               "--out", str(tmp_path / "preds2")])
    err = capsys.readouterr().err
    assert rc == 2 and shards[1].name in err and "Traceback" not in err
    assert not any((tmp_path / "preds2").glob("*/frame_*"))
    rc = main(["evaluate", "--dataset", str(ds), "--config", "fg_size_high", "--predictions", str(preds),
               "--metrics", "psnr", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and shards[1].name in err and "Traceback" not in err


def test_a_config_left_out_of_a_small_build_is_named_with_its_reason(data_tiny_dataset, tmp_path, data_hf_cache,
                                                                     capsys):
    """A config with 0 rows (no shard, manifest rows 0 and its reason): iter_slice, load_slice,
    `devil inpaint --config` and `devil evaluate --config` name it and why (exit 2, no prediction folder)."""
    import json
    import shutil

    from devil_dataset.builder.dataset_writer import EMPTY_CONFIG_REASON
    from devil_dataset.cli import main

    ds, _ = _damaged_copy(data_tiny_dataset, tmp_path, "fg_size_low")
    shutil.rmtree(ds / "data" / "fg_size_low")
    doc = json.loads((ds / "manifest.json").read_text())
    doc["files"] = {k: v for k, v in doc["files"].items() if not k.startswith("data/fg_size_low/")}
    doc["configs"]["fg_size_low"].update(rows=0, clip_ids=[], omitted=EMPTY_CONFIG_REASON)
    (ds / "manifest.json").write_text(json.dumps(doc))
    expected = f"config fg_size_low is not in this build: {EMPTY_CONFIG_REASON}"
    with pytest.raises(DevilError, match=r"config fg_size_low is not in this build: 0 rows in this build \(too few"):
        iter_slice(ds, "fg_size_low")  # at the call, before any row is asked for
    with pytest.raises(DevilError, match="Configs with rows: all, bg_scene_motion_high"):
        load_slice(ds, "fg_size_low", cache_dir=data_hf_cache)
    preds = tmp_path / "preds"
    assert main(["inpaint", "--method", "telea", "--dataset", str(ds), "--config", "fg_size_low", "--out",
                 str(preds)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and not preds.exists()
    preds.mkdir()
    assert main(["evaluate", "--dataset", str(ds), "--config", "fg_size_low", "--predictions", str(preds),
                 "--metrics", "psnr", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_hub_repo_id_fetches_one_config(data_tiny_dataset, tmp_path, monkeypatch):
    """A repo id goes through snapshot_download with that config's files only (a local copy stands in for the Hub)."""
    import shutil

    import huggingface_hub

    from devil_dataset.data import InpaintingTrainDataset, fetch_slice

    calls = []

    def fake_snapshot_download(repo_id, repo_type=None, revision=None, allow_patterns=None, cache_dir=None):
        import fnmatch

        calls.append((repo_id, repo_type, tuple(allow_patterns)))
        dest = tmp_path / "snapshot"
        for f in data_tiny_dataset.rglob("*"):
            rel = f.relative_to(data_tiny_dataset).as_posix()
            if f.is_file() and any(fnmatch.fnmatch(rel, p) for p in allow_patterns):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, dest / rel)
        return str(dest)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    rows = list(iter_slice("org/devil", "camera_motion_high"))
    assert [r["clip_id"] for r in rows] == [r["clip_id"] for r in iter_slice(data_tiny_dataset, "camera_motion_high")]
    assert calls[0][:2] == ("org/devil", "dataset")
    fetched = {p.relative_to(tmp_path / "snapshot").parts[:2] for p in (tmp_path / "snapshot").rglob("*.parquet")}
    assert fetched == {("data", "camera_motion_high")}  # one config, not the whole repo
    train = InpaintingTrainDataset("org/devil", "camera_motion_high", num_frames=4, mask_renderer=_fake_renderer)
    assert len(train) == 2 and fetch_slice("org/devil", "camera_motion_high").is_dir()


def test_hub_repo_id_offline_error_names_what_to_do(tmp_path, monkeypatch):
    from devil_dataset.data import fetch_slice

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DevilError, match=r"org/devil: cannot fetch config fg_size_high.*network access.*local folder"):
        fetch_slice("org/devil", "fg_size_high", cache_dir=tmp_path / "empty-cache")
    with pytest.raises(DevilError, match="no such folder"):
        list(iter_slice(tmp_path / "missing", "all"))

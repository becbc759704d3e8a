"""`import-release`: the release's flickr-*/fvi-* tars become the same dataset layout, pixels kept exactly."""
from __future__ import annotations

import io
import os
import tarfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
from PIL import Image

from devil_dataset.builder.release_import import import_release, parse_split_name
from devil_dataset.core.errors import DevilError
from devil_dataset.data import iter_slice


def _png(array) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def release_videos(path, names, frames=4, size=(24, 16), seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    with tarfile.open(path, "w") as tar:
        for name in names:
            v = (rng.random((frames, size[1], size[0], 3)) * 255).astype(np.uint8)
            out[name] = v
            for t in range(frames):
                _add(tar, f"{name}/frame_{t:04d}_gt.png", _png(v[t]))
    return out


def release_masks(path, names, frames=4, size=(24, 16), seed=1):
    rng = np.random.default_rng(seed)
    out = {}
    with tarfile.open(path, "w") as tar:
        for name in names:
            hole = rng.random((frames, size[1], size[0])) < 0.3
            out[name] = hole
            for t in range(frames):
                _add(tar, f"{name}/frame_{t:04d}_mask.png", _png(~hole[t]))  # bool -> mode '1', 1 = known
    return out


def test_parse_split_names():
    assert parse_split_name("x/flickr-bsm-l.tar") == ("flickr", "bsm-l")
    assert parse_split_name("fvi-fgs-h.tar") == ("fvi", "fgs-h")
    for bad in ("flickr-fgd-h.tar", "fvi-cm-h.tar", "videos.tar", "flickr-all.zip"):
        with pytest.raises(DevilError):
            parse_split_name(bad)


def test_import_pairs_sorted_and_keeps_pixels(tmp_path):
    videos = release_videos(tmp_path / "flickr-all.tar", ["userb-v1-00001", "usera-v2-00000", "usera-v2-00001"])
    masks = release_masks(tmp_path / "fvi-fgd-h.tar", ["devil_fgs-l_fgm-h_fgd-h_00007", "devil_fgs-h_fgm-l_fgd-h_00002",
                                                       "devil_fgs-h_fgm-h_fgd-h_00900"])
    cm_videos = release_videos(tmp_path / "flickr-cm-h.tar", ["userc-v9-00000", "usera-v2-00000"], frames=6, seed=5)
    cm_masks = release_masks(tmp_path / "fvi-all.tar", ["m-a", "m-b"], frames=4, seed=6)  # shorter mask: cycled
    out = tmp_path / "ds"
    archives = [tmp_path / n for n in ("flickr-all.tar", "fvi-fgd-h.tar", "flickr-cm-h.tar", "fvi-all.tar")]
    result = import_release(archives, out, progress=False)
    assert set(result.config_rows) == {"fg_displacement_high", "camera_motion_high", "all"}
    assert result.missing["camera_motion_low"] == ["flickr-cm-l"]
    rows = list(iter_slice(out, "fg_displacement_high"))
    assert [r["clip_id"] for r in rows] == sorted(videos)
    assert [r["clip_id"] for r in iter_slice(out, "camera_motion_high")] == sorted(cm_videos)
    assert [r["mask_id"] for r in rows] == sorted(masks)  # mask i pairs with video i, both sorted by name
    for r in rows:
        assert np.array_equal(r["frames"], videos[r["clip_id"]])  # PNG: the release's exact pixels
        assert np.array_equal(r["hole"], masks[r["mask_id"]])
        assert r["fg_displacement_label"] == "high" and r["preset"].endswith("fgd-h")
    assert rows[0]["mask_index"] == 900 and rows[0]["source"] == "usera-v2"
    cm = list(iter_slice(out, "camera_motion_high"))
    assert all(r["camera_motion_label"] == "high" for r in cm) and cm[0]["mask_index"] == -1
    first = cm[0]
    expect = cm_masks[first["mask_id"]][[0, 1, 2, 3, 2, 1]]  # 6 frames from a 4-frame mask: back and forth
    assert np.array_equal(first["hole"], expect)
    all_rows = list(iter_slice(out, "all"))
    usera = [r for r in all_rows if r["clip_id"] == "usera-v2-00000"][0]
    assert usera["camera_motion_label"] == "high"  # the video is also in flickr-cm-h

    import datasets

    ds = datasets.load_dataset(str(out), "fg_displacement_high", split="test", cache_dir=str(tmp_path / "cache"))
    assert ds["clip_id"] == sorted(videos)
    # the default config: all
    assert datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "cache")).num_rows == 2
    assert "flickr-cm-h.tar" in (out / "README.md").read_text()


def test_import_errors(tmp_path):
    release_videos(tmp_path / "flickr-all.tar", ["a-b-00000"])
    with pytest.raises(DevilError, match="no config can be imported"):
        import_release([tmp_path / "flickr-all.tar"], tmp_path / "out", progress=False)
    (tmp_path / "fvi-all.tar").write_bytes(b"not a tar")
    with pytest.raises(DevilError, match="unreadable tar"):
        import_release([tmp_path / "flickr-all.tar", tmp_path / "fvi-all.tar"], tmp_path / "out", progress=False)
    release_masks(tmp_path / "fvi-fgs-l.tar", ["m"], size=(20, 16))
    with pytest.raises(DevilError, match="mask size"):
        import_release([tmp_path / "flickr-all.tar", tmp_path / "fvi-fgs-l.tar"], tmp_path / "out2", progress=False)
    with tarfile.open(tmp_path / "fvi-fgm-l.tar", "w") as tar:
        _add(tar, "m/frame_0001_mask.png", _png(np.ones((16, 24), bool)))
    with pytest.raises(DevilError, match="not numbered"):
        import_release([tmp_path / "flickr-all.tar", tmp_path / "fvi-fgm-l.tar"], tmp_path / "out3", progress=False)


def test_import_of_release_layout_agrees_with_the_slice_writer(tmp_path):
    """Archives in the release's layout (folder ``{i:05d}`` = entry i of each list) import to the same rows, in the
    same order, as ``plan_slices`` + ``materialize_pair`` give for the same clips and scores."""
    from devil_dataset.builder.assemble import ClipInfo, SliceSizes, materialize_pair, plan_slices

    size = (24, 16)
    rng = np.random.default_rng(3)
    clips = [ClipInfo(f"u{i % 4}-v-{i // 4:05d}", f"u{i % 4}-v", 5 + i % 3, camera_motion_score=float(rng.random()),
                      bg_scene_motion_score=float(rng.random())) for i in range(20)]
    plan = plan_slices(clips, sizes=SliceSizes(tail=4, per_slice=3))
    clip_frames = {c.clip_id: (rng.random((c.num_frames, size[1], size[0], 3)) * 255).astype(np.uint8) for c in clips}

    def load_mask(preset, index):  # a distinct 90-frame mask per (preset, index): frame k has k+1 hole pixels
        hole = np.zeros((90, size[1], size[0]), bool)
        start = (sum(map(ord, preset)) % 7 + index) % (size[0] * size[1])
        for k in range(90):
            hole.reshape(90, -1)[k, (start + np.arange(k % 40 + 1)) % (size[0] * size[1])] = True
        return hole

    expected = {}
    for name, (vsub, msub) in {"camera_motion_high": ("cm-h", "all"), "fg_size_low": ("all", "fgs-l")}.items():
        rows = [materialize_pair(p, lambda c: clip_frames[c.clip_id], load_mask, size=size) for p in plan.pairs[name]]
        expected[name] = rows
        # The release's archives: folder i holds video i and (already reversed, cut) mask i
        with tarfile.open(tmp_path / f"flickr-{vsub}.tar", "w") as tar:
            for i, (frames, _) in enumerate(rows):
                for t in range(len(frames)):
                    _add(tar, f"{i:05d}/frame_{t:04d}_gt.png", _png(frames[t]))
        with tarfile.open(tmp_path / f"fvi-{msub}.tar", "w") as tar:
            for i, (_, hole) in enumerate(reversed(rows)):  # member order in the tar must not matter
                i = len(rows) - 1 - i
                for t in range(len(hole)):
                    _add(tar, f"{i:05d}/frame_{t:04d}_mask.png", _png(~hole[t]))
    archives = [tmp_path / n for n in ("flickr-cm-h.tar", "fvi-all.tar", "flickr-all.tar", "fvi-fgs-l.tar")]
    import_release(archives, tmp_path / "out", progress=False)
    for name, rows in expected.items():
        got = list(iter_slice(tmp_path / "out", name))
        assert [r["release_index"] for r in got] == [p.release_index for p in plan.pairs[name]] == [0, 1, 2]
        for r, (frames, hole), _pair in zip(got, rows, plan.pairs[name]):
            assert np.array_equal(r["frames"], frames)  # same clip ...
            assert np.array_equal(r["hole"], hole)  # ... same mask with the same reversal flag, same row
        # rows really differ, so a wrong order could not pass
        assert len({r["frames"].tobytes() for r in got}) == 3 and len({r["hole"].tobytes() for r in got}) == 3
    assert any(p.mask.reversed for ps in plan.pairs.values() for p in ps)


def _bomb_png(width: int = 30000, height: int = 30000) -> bytes:
    """A tiny PNG whose header claims ``width x height`` (900 M pixels): a decompression bomb for Pillow."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("pixels", [30000 * 30000, 12000 * 12000])  # above 2x Pillow's limit: error; above 1x: warning
def test_decompression_bomb_png_in_a_release_tar_names_the_member(tmp_path, pixels):
    side = int(pixels ** 0.5)
    release_videos(tmp_path / "flickr-all.tar", ["a-b-00000"])
    release_masks(tmp_path / "fvi-all.tar", ["m", "n"])  # two masks: both videos are paired
    with tarfile.open(tmp_path / "flickr-all.tar", "a") as tar:
        _add(tar, "bomb-c-00001/frame_0000_gt.png", _bomb_png(side, side))
    with pytest.raises(DevilError, match=r"flickr-all\.tar: bomb-c-00001/frame_0000_gt\.png: refused, image too large"):
        import_release([tmp_path / "flickr-all.tar", tmp_path / "fvi-all.tar"], tmp_path / "out", progress=False)

"""The DAVIS / YouTube-VOS layout reader of the ProPainter protocol: which videos, which frames, how read."""
from __future__ import annotations

import shutil

import cv2
import numpy as np
import pytest
from PIL import Image

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.protocols.propainter.layout import (
    PROTOCOL_SIZE,
    list_davis_videos,
    list_prediction_frames,
    read_davis_video,
    read_prediction_video,
    read_protocol_frame,
    read_protocol_mask,
)

from ...davis_data import SOURCE_SIZE, TEST_SIZE, reference_frame, write_davis_layout


def test_video_list_comes_from_the_mask_folder_and_frame_counts_from_the_ground_truth(tmp_path):
    data = write_davis_layout(tmp_path, (4, 2, 3))
    (data.gt_dir / "JPEGImages" / "zz_unmasked").mkdir()  # a ground-truth video without masks is not evaluated
    cv2.imwrite(str(data.gt_dir / "JPEGImages" / "zz_unmasked" / "00000.jpg"), np.zeros((8, 8, 3), np.uint8))
    videos = list_davis_videos(data.gt_dir, data.mask_dir)
    assert [v.name for v in videos] == ["v0", "v1", "v2"]
    assert [len(v.frame_paths) for v in videos] == [4, 2, 3]
    assert [p.name for p in videos[0].mask_paths] == ["00000.png", "00001.png", "00002.png", "00003.png"]
    assert videos[0].frame_paths[0].parent == data.gt_dir / "JPEGImages" / "v0"


def test_flat_ground_truth_layout_and_png_frames(tmp_path):
    data = write_davis_layout(tmp_path, (2,), nested=False, gt_suffix=".png")
    [video] = list_davis_videos(data.gt_dir, data.mask_dir)
    assert video.frame_paths[0] == data.gt_dir / "v0" / "00000.png"


def test_frames_pair_with_masks_by_sorted_position_not_by_name(tmp_path):
    data = write_davis_layout(tmp_path, (2,))
    folder = data.gt_dir / "JPEGImages" / "v0"
    (folder / "00000.jpg").rename(folder / "a.jpg")
    (folder / "00001.jpg").rename(folder / "b.jpg")
    [video] = list_davis_videos(data.gt_dir, data.mask_dir)
    assert [p.name for p in video.frame_paths] == ["a.jpg", "b.jpg"]
    assert [p.name for p in video.mask_paths] == ["00000.png", "00001.png"]


def test_every_layout_problem_in_one_error_naming_folders_and_files(tmp_path):
    data = write_davis_layout(tmp_path, (3, 3, 3))
    shutil.rmtree(data.gt_dir / "JPEGImages" / "v0")  # no ground truth
    (data.mask_dir / "v1" / "00002.png").unlink()  # a missing mask
    Image.new("L", (8, 8)).save(data.mask_dir / "v2" / "00003.png")  # an extra mask
    with pytest.raises(DevilError) as err:
        list_davis_videos(data.gt_dir, data.mask_dir)
    text = str(err.value)
    assert "3 problem(s)" in text
    assert f"v0: no ground-truth folder {data.gt_dir / 'JPEGImages' / 'v0'}" in text
    assert "v1: 3 frames in" in text and "lacks 00002.png" in text
    assert "v2: 3 frames in" in text and "but 4 mask PNGs" in text


def test_missing_folders_and_empty_layouts(tmp_path):
    with pytest.raises(DevilError, match="ground-truth folder does not exist"):
        list_davis_videos(tmp_path / "GT", tmp_path)
    (tmp_path / "GT").mkdir()
    (tmp_path / "MASKS").mkdir()
    with pytest.raises(DevilError, match="no video folders"):
        list_davis_videos(tmp_path / "GT", tmp_path / "MASKS")
    (tmp_path / "MASKS" / "bear").mkdir()
    (tmp_path / "GT" / "bear").mkdir()
    with pytest.raises(DevilError, match="holds no .jpg"):
        list_davis_videos(tmp_path / "GT", tmp_path / "MASKS")


def test_unreadable_images_are_named(tmp_path):
    data = write_davis_layout(tmp_path, (2,))
    bad = data.gt_dir / "JPEGImages" / "v0" / "00001.jpg"
    bad.write_bytes(b"not a jpeg")
    [video] = list_davis_videos(data.gt_dir, data.mask_dir)
    with pytest.raises(DevilError, match=f"{bad}: unreadable image"):
        read_davis_video(video, TEST_SIZE)
    (data.mask_dir / "v0" / "00000.png").write_bytes(b"")
    with pytest.raises(DevilError, match="00000.png: unreadable mask image"):
        read_protocol_mask(data.mask_dir / "v0" / "00000.png")


def test_frames_are_read_bgr_to_rgb_then_resized_with_inter_linear(tmp_path):
    data = write_davis_layout(tmp_path, (2,))
    path = data.gt_dir / "JPEGImages" / "v0" / "00000.jpg"
    ours = read_protocol_frame(path, TEST_SIZE)
    assert ours.shape == (TEST_SIZE[1], TEST_SIZE[0], 3)
    assert np.array_equal(ours, reference_frame(path, TEST_SIZE))
    # the DEVIL way reads with Pillow and would resize with an antialiased filter: other bytes
    pil = np.asarray(Image.open(path).convert("RGB").resize(TEST_SIZE, Image.Resampling.BILINEAR))
    assert not np.array_equal(ours, pil)
    # BGR would be a channel swap of the same pixels
    assert not np.array_equal(ours, ours[..., ::-1])
    # at the protocol size the resize is skipped: the decoded pixels themselves
    native = read_protocol_frame(path, SOURCE_SIZE)
    decoded = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    assert np.array_equal(native, decoded)


def test_masks_resize_nearest_then_grey_then_nonzero_and_are_not_dilated(tmp_path):
    mask = np.zeros((96, 160), np.uint8)
    mask[40:50, 60:90] = 1  # a faint nonzero value is a hole (> 0), not only 255
    path = tmp_path / "00000.png"
    Image.fromarray(mask).save(path)
    hole = read_protocol_mask(path, TEST_SIZE)
    expected = np.asarray(Image.fromarray(mask).resize(TEST_SIZE, Image.Resampling.NEAREST)) > 0
    assert hole.dtype == bool and np.array_equal(hole, expected)
    bilinear = np.asarray(Image.fromarray(mask * 255).resize(TEST_SIZE, Image.Resampling.BILINEAR)) > 0
    assert bilinear.sum() > hole.sum()  # a smooth resize would grow the hole
    # an RGB (palette-like) mask: any colour is a hole after the grey conversion
    rgb = np.zeros((96, 160, 3), np.uint8)
    rgb[10:20, 10:20] = (0, 0, 9)
    Image.fromarray(rgb).save(path)
    assert read_protocol_mask(path, (160, 96))[10:20, 10:20].all()


def test_read_davis_video_shapes(tmp_path):
    data = write_davis_layout(tmp_path, (3,))
    [video] = list_davis_videos(data.gt_dir, data.mask_dir)
    frames, hole = read_davis_video(video, TEST_SIZE)
    assert frames.shape == (3, 72, 112, 3) and frames.dtype == np.uint8
    assert hole.shape == (3, 72, 112) and hole.dtype == bool and 0 < hole.mean() < 0.5
    assert read_davis_video(video)[0].shape == (3, PROTOCOL_SIZE[1], PROTOCOL_SIZE[0], 3)


def test_prediction_folders_are_checked(tmp_path):
    data = write_davis_layout(tmp_path, (3, 2))
    videos = list_davis_videos(data.gt_dir, data.mask_dir)
    assert len(list_prediction_frames(data.pred_dir, videos)["v0"]) == 3
    (data.pred_dir / "v0" / "00002.png").unlink()
    shutil.rmtree(data.pred_dir / "v1")
    with pytest.raises(DevilError) as err:
        list_prediction_frames(data.pred_dir, videos)
    assert "2 PNG frames in" in str(err.value) and "expected 3" in str(err.value)
    assert "v1: no output folder" in str(err.value)
    with pytest.raises(DevilError, match="prediction folder does not exist"):
        list_prediction_frames(tmp_path / "nope", videos)


def test_predictions_at_another_size_are_refused(tmp_path):
    path = tmp_path / "00000.png"
    cv2.imwrite(str(path), np.zeros((10, 12, 3), np.uint8))
    with pytest.raises(DevilError, match="12x10 frame; the protocol scores outputs at 432x240"):
        read_prediction_video((path,))

"""Compositing, prediction layouts (frames, video files, single folder) and validation errors."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError, InvalidInputError
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.eval.kernels.composite import composite
from devil_dataset.eval.metrics.metric import VideoSample
from devil_dataset.eval.scoring.inputs import (
    DirectorySource,
    PredictionStore,
    VideoShapeInfo,
    read_video_file,
    validate_clips,
)


def test_composite_takes_known_pixels_from_gt(eval_make_video):
    gt, pred, hole = eval_make_video(0, t=2)
    c = composite(pred, gt, hole)
    assert np.array_equal(c[hole], pred[hole]) and np.array_equal(c[~hole], gt[~hole])
    assert np.array_equal(c, np.where(hole[..., None], pred, gt))
    assert np.array_equal(c, VideoSample("x", gt, pred, hole).composite)


@pytest.mark.parametrize("bad", ["pred_frames", "hole_size", "hole_3d", "pred_dtype", "hole_dtype"])
def test_composite_rejects_mismatched_inputs_naming_them(eval_make_video, bad):
    gt, pred, hole = eval_make_video(0, t=2)
    args = {"pred_frames": (pred[:1], gt, hole), "hole_size": (pred, gt, hole[:, 1:]),
            "hole_3d": (pred[0], gt[0], hole[0]), "pred_dtype": (pred.astype(np.float32), gt, hole),
            "hole_dtype": (pred, gt, hole.astype(np.uint8))}[bad]
    kind = "dtype" if bad.endswith("dtype") else "shape"
    with pytest.raises(InvalidInputError, match=rf"composite: {kind} mismatch: pred .*, gt .*, hole "):
        composite(*args)
    with pytest.raises(InvalidInputError, match="composite: "):  # the same check wherever the composite is made
        _ = VideoSample("x", args[1], args[0], args[2]).composite


def test_validate_lists_every_offending_clip():
    gt = {c: VideoShapeInfo(c, 5, (64, 48)) for c in ("a", "b", "c", "d")}
    pred = {"a": VideoShapeInfo("a", 5, (64, 48)), "b": VideoShapeInfo("b", 4, (64, 48)),
            "c": VideoShapeInfo("c", 5, (32, 48))}
    with pytest.raises(DevilError) as err:
        validate_clips(gt, pred, "preds/")
    msg = str(err.value)
    assert msg.startswith("preds/: 3 of 4 clips cannot be evaluated")
    assert "b: 4 predicted frames, expected 5" in msg
    assert "c: prediction is 32x48, expected 64x48" in msg
    assert "d: prediction missing" in msg
    assert "  a:" not in msg
    validate_clips({"a": gt["a"]}, pred)  # no error


def test_directory_source_reads_release_layout(eval_release_dirs, eval_samples):
    gt_dir, pred_dir = eval_release_dirs
    src = DirectorySource(gt_dir, pred_dir)
    assert src.clip_ids == ["clip0", "clip1", "clip2"] and src.predictions.layout == "frames"
    src.validate()
    for got, want in zip(src, eval_samples):
        assert got.clip_id == want.clip_id
        assert np.array_equal(got.gt, want.gt) and np.array_equal(got.pred, want.pred)
        assert np.array_equal(got.hole, want.hole)


def test_directory_validation_names_all_problems(eval_release_dirs):
    gt_dir, pred_dir = eval_release_dirs
    shutil.rmtree(pred_dir / "clip0")
    (pred_dir / "clip1" / "frame_0004_pred.png").unlink()
    (gt_dir / "clip2" / "frame_0002_mask.png").unlink()
    with pytest.raises(DevilError) as err:
        DirectorySource(gt_dir, pred_dir).validate()
    msg = str(err.value)
    assert "3 of 3 clips cannot be evaluated" in msg
    assert "clip0: prediction missing" in msg
    assert "clip1: 4 predicted frames (frame_%04d_pred.png), expected 5" in msg
    assert "clip2: 2 mask frames, expected 3" in msg


def test_frames_named_otherwise_get_the_expected_pattern(eval_release_dirs):
    """Frames saved as 00000.png: the message names what was found and the names expected."""
    gt_dir, pred_dir = eval_release_dirs
    for i, frame in enumerate(sorted((pred_dir / "clip0").glob("frame_*_pred.png"))):
        frame.rename(pred_dir / "clip0" / f"{i:05d}.png")
    with pytest.raises(DevilError) as err:
        DirectorySource(gt_dir, pred_dir).validate()
    msg = str(err.value)
    n = len(list((pred_dir / "clip0").glob("*.png")))
    assert f"clip0: 0 predicted frames (frame_%04d_pred.png), expected {n}; " in msg
    assert (f"found {n} image(s) (00000.png, 00001.png, ...) but predicted frames must be named "
            "frame_%04d_pred.png (frame_0000_pred.png, frame_0001_pred.png, ...)") in msg


def test_single_folder_layout(tmp_path, eval_make_video):
    gt, pred, hole = eval_make_video(1, t=2)
    from devil_dataset.core.release_format import write_mask_pngs

    write_frame_pngs(gt, tmp_path / "inputs", "gt")
    write_mask_pngs(hole, tmp_path / "inputs")
    write_frame_pngs(pred, tmp_path / "outputs", "pred")
    src = DirectorySource(tmp_path / "inputs", tmp_path / "outputs")
    assert src.predictions.layout == "single" and src.clip_ids == ["inputs"]
    src.validate()
    (sample,) = list(src)
    assert np.array_equal(sample.pred, pred)


def _write_video(path, frames: np.ndarray) -> None:
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264rgb" if "libx264rgb" in av.codecs_available else "mpeg4", rate=10)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "rgb24" if stream.codec_context.name == "libx264rgb" else "yuv420p"
        if stream.codec_context.name == "libx264rgb":
            stream.options = {"qp": "0"}
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def test_video_file_layout(tmp_path, eval_make_video):
    _, pred, _ = eval_make_video(2, t=4, h=48, w=64)
    _write_video(tmp_path / "clipA.mp4", pred)
    store = PredictionStore(tmp_path)
    assert store.layout == "video"
    info = store.info("clipA")
    assert (info.num_frames, info.size) == (4, (64, 48))
    assert store.info("missing") is None
    frames = store.read("clipA")
    assert frames.shape == pred.shape and frames.dtype == np.uint8
    if "libx264rgb" in __import__("av").codecs_available:
        assert np.array_equal(frames, pred)  # lossless
    with pytest.raises(DevilError):
        (tmp_path / "bad.mp4").write_bytes(b"not a video")
        read_video_file(tmp_path / "bad.mp4")

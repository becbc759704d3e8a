"""Run by tests/core/test_determinism.py in a subprocess: every path to a published number, on small generated
inputs, printed as one JSON object (metric values as ``repr`` floats, arrays and files as SHA-256 of their bytes).

Sections (``DEVIL_PROBE_SECTIONS``, comma-separated; all by default):

- ``media``: the sample renderer, the clip round trip (x264 encode, H.264 decode, swscale), the dataset's stored
  bytes (JPEG and PNG frames, 1-bit PNG masks, a parquet shard) and the predictions' PNG (ISA-L);
- ``labels``: camera- and scene-motion scores (SIFT, DIS, RANSAC, warps);
- ``baselines``: Telea, aligned copy, flow propagation, and the weight-free metrics on one of them;
- ``networks``: LPIPS, FID, PVCS, VFID and the RAFT warp error through ``evaluate_methods`` with seeded random weights
  planted in a private weights cache (the real loading path; ``DEVIL_PROBE_WEIGHTS`` names a folder where the test
  planted them once);
- ``removal``: RC-S and RC-T (PROVE's metrics, both MMD arithmetics) of a tiny generated video with a moving mask,
  scored by a seeded random DINOv2 written with ``save_pretrained`` and read through the package's loader (the
  portable network path), and the features of its crops; values as ``float.hex``.

Simulated CPUs: ``DEVIL_TEST_AV_CPU_FLAGS`` (an integer) forces FFmpeg's CPU flags through ``av_force_cpu_flags``
(0 = no SIMD), the one dispatch that has no environment variable of its own; ``DEVIL_TEST_X264_ASM`` sets x264's
``asm=`` parameter (its CPU flags; ``none`` = ``no-asm``), which no environment variable reaches either. The other
libraries read their own variables (see ``SIMULATED_CPUS`` in the test).
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import devil_dataset

devil_dataset.pin_process()  # as the devil command: the CPU pins before torch and scipy load

import numpy as np  # noqa: E402

SECTIONS = ("media", "labels", "baselines", "networks", "removal")


def _force_av_cpu_flags() -> None:
    flags = os.environ.get("DEVIL_TEST_AV_CPU_FLAGS")
    if flags is None:
        return
    import av

    libs = glob.glob(os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs", "libavutil*.so*"))
    if not libs:
        sys.exit("DEVIL_TEST_AV_CPU_FLAGS: no bundled libavutil next to PyAV")
    ctypes.CDLL(libs[0]).av_force_cpu_flags(int(flags))


def _force_x264_asm() -> None:
    """x264 takes its CPU flags from ``asm=`` (or ``no-asm=1``): appended to the package's x264 parameters."""
    asm = os.environ.get("DEVIL_TEST_X264_ASM")
    if not asm:
        return
    from devil_dataset.core import video_io

    extra = "no-asm=1" if asm == "none" else f"asm={asm}"
    base = video_io.encoder_options

    def options() -> dict[str, str]:
        out = base()
        out["x264-params"] = ":".join(p for p in (out.get("x264-params", ""), extra) if p)
        return out

    video_io.encoder_options = options


def digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes."""
    array = np.ascontiguousarray(array)
    return hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()


def bytes_digest(*parts: bytes) -> str:
    return hashlib.sha256(b"".join(parts)).hexdigest()


def _video() -> np.ndarray:
    from devil_dataset.builder.samples import render_scene, scene

    return render_scene(scene("handheld_static"), size=(192, 128), num_frames=8, seed=3)


def _hole(shape: tuple[int, ...]) -> np.ndarray:
    hole = np.zeros(shape[:3], bool)
    hole[:, 40:80, 60:110] = True
    return hole


def _round_trip(video: np.ndarray, tmp: Path) -> tuple[str, np.ndarray]:
    from devil_dataset.core.video_io import load_clip, write_video

    path = write_video(tmp / "clip.mp4", video, fps=25)
    return hashlib.sha256(path.read_bytes()).hexdigest(), load_clip(path)


def media(tmp: Path) -> dict[str, str]:
    """Renderer, clip round trip, the dataset's stored bytes and the predictions' PNG."""
    from devil_dataset.builder.dataset_writer import write_shard
    from devil_dataset.core.dataset_schema import decode_frames, encode_frames, encode_hole
    from devil_dataset.core.png_encode import encode_rgb_png

    video = _video()
    out = {"render": digest(video)}
    out["encoded"], decoded = _round_trip(video, tmp)
    out["decoded"] = digest(decoded)
    jpeg = encode_frames(video[:3], "jpeg")
    out["jpeg"] = bytes_digest(*(f["bytes"] for f in jpeg))
    out["jpeg_decoded"] = digest(decode_frames(jpeg))
    png = encode_frames(video[:2], "png")
    out["png_frames"] = bytes_digest(*(f["bytes"] for f in png))
    hole = encode_hole(_hole(video.shape)[:3])
    out["png_hole"] = bytes_digest(*(f["bytes"] for f in hole))
    out["png_prediction"] = bytes_digest(*(encode_rgb_png(f) for f in video[:3]))
    row = {"clip_id": "probe-00000", "mask_id": "devil_fgs-h_fgm-h_fgd-h_00000", "frames": jpeg, "hole": hole,
           "num_frames": 3, "height": 128, "width": 192, "fps": 25.0, "preset": "fgs-h_fgm-h_fgd-h", "mask_index": 0,
           "mask_seed": 1, "reversed": False, "source": "probe.mp4", "source_first_frame": 0, "attribution": "probe",
           "license": "MIT", "camera_motion_score": 0.25, "camera_motion_label": "high",
           "bg_scene_motion_score": float("nan"), "bg_scene_motion_label": "", "fg_displacement_label": "high",
           "fg_motion_label": "high", "fg_size_label": "high", "mask_mean_area": 0.3, "mask_centroid_speed": 0.0,
           "mask_pose_motion": 0.1, "mask_union_coverage": 0.9}
    out["parquet"] = bytes_digest(write_shard(tmp / "shard.parquet", [row]).read_bytes())
    return out


def labels() -> dict[str, str]:
    """Camera- and scene-motion scores of a rendered clip."""
    from devil_dataset.builder.camera_motion import camera_motion_score
    from devil_dataset.builder.samples import render_scene, scene
    from devil_dataset.builder.scene_motion import scene_motion_score

    clip = render_scene(scene("jitter_water"), size=(160, 96), num_frames=14, seed=2)
    return {"camera_motion_score": repr(camera_motion_score(clip, detector="sift", scoring_size=None)),
            "scene_motion_score": repr(scene_motion_score(clip, detector="sift", scoring_size=None))}


def baselines(tmp: Path) -> dict[str, str]:
    """The three baselines on a stored clip, and every weight-free metric on flow propagation's output."""
    from devil_dataset.eval import functional as F
    from devil_dataset.inpaint import get_inpainter

    _, gt = _round_trip(_video(), tmp)
    hole = _hole(gt.shape)
    out: dict[str, str] = {}
    for name in ("telea", "aligned-copy", "flow-propagation"):
        pred = get_inpainter(name)(gt, hole)
        out[name] = digest(pred)
    out["psnr"] = repr(F.psnr(pred, gt, hole))
    out["ssim"] = repr(F.ssim(pred, gt, hole))
    out["pcons"] = repr(F.pcons(pred, gt, hole))
    out["warp_error"] = repr(F.warp_error(pred, gt, hole, flow="dis"))
    return out


#: The network metrics of the probe and the random weights planted for each (seeded: the same on every run).
NETWORK_METRICS = ("lpips", "fid", "pvcs", "vfid")


def plant_random_weights(directory: Path) -> None:
    """Seeded random weights of every network, saved under the cache's file names (``DEVIL_WEIGHTS_DIR``)."""
    import torch

    from devil_dataset.core.networks.i3d import random_i3d_state
    from devil_dataset.core.networks.inception import random_inception_state
    from devil_dataset.core.networks.lpips import random_alexnet_state
    from devil_dataset.core.networks.raft import random_raft_state
    from devil_dataset.core.weights import KNOWN_WEIGHTS

    states = {"alexnet": random_alexnet_state, "inception": random_inception_state, "i3d": random_i3d_state,
              "raft": random_raft_state}
    for name, make in states.items():
        torch.save(make(seed=0), directory / KNOWN_WEIGHTS[name].filename)


def network_videos() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Three (clip id, gt, prediction, hole) of 11 frames at 64x48: PVCS has two windows, VFID three videos."""
    rng = np.random.default_rng(5)
    out = []
    for i in range(3):
        gt = rng.integers(0, 256, (11, 48, 64, 3), dtype=np.uint8)
        hole = np.zeros(gt.shape[:3], bool)
        hole[:, 12:30, 16:40] = True
        pred = gt.copy()
        pred[hole] = rng.integers(0, 256, (int(hole.sum()), 3), dtype=np.uint8)
        out.append((f"probe-{i}", gt, pred, hole))
    return out


def networks(batch_size: int = 8) -> dict[str, str]:
    """The network metrics through the package's evaluation, with random weights in a private weights cache."""
    from devil_dataset.core.flow import flow_estimator
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.metrics.registry import build_metrics
    from devil_dataset.eval.scoring.one_pass import evaluate_methods

    videos = network_videos()
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.environ.get("DEVIL_PROBE_WEIGHTS") or tmp  # planted once by the test, else here
        os.environ["DEVIL_WEIGHTS_DIR"] = weights
        os.environ["DEVIL_WEIGHTS_ALLOW_UNVERIFIED"] = "1"
        if weights == tmp:
            plant_random_weights(Path(weights))
        metrics, skipped = build_metrics(list(NETWORK_METRICS), EvalOptions(batch_size=batch_size))
        assert not skipped, skipped
        preds = {c: p for c, _, p, _ in videos}
        with warnings.catch_warnings():  # VFID of 3 videos: sqrtm of a singular product warns
            warnings.simplefilter("ignore")
            result = evaluate_methods([(c, g, h) for c, g, _, h in videos], {"m": preds.__getitem__},
                                      {"m": metrics}, progress=False)["m"]
        flows = flow_estimator("raft", "cpu").batch(videos[0][1][:2], videos[0][1][1:3])  # RAFT of the warp error
    return {**{f"network_{k}": repr(v) for k, v in sorted(result.summary.items())}, "network_raft": digest(flows)}


def removal_video() -> tuple[np.ndarray, np.ndarray]:
    """Three 64x48 frames of seeded noise and a 16x20 white square (the removed object) moving 4 px a frame."""
    frames = np.random.default_rng(11).integers(0, 256, (3, 48, 64, 3), dtype=np.uint8)
    masks = np.zeros((3, 48, 64), np.uint8)
    for t in range(3):
        masks[t, 14:30, 16 + 4 * t:36 + 4 * t] = 255
    return frames, masks


def removal() -> dict[str, str]:
    """RC-S and RC-T of :func:`removal_video` in both MMD arithmetics (``float32``: PROVE's own, the ``release``
    parity; ``float64``: ``corrected``) with a seeded random DINOv2 (hidden 32, 2 layers, 2 heads) loaded from its
    ``save_pretrained`` folder as ``--dino-model`` is, and a digest of the network's features of every crop."""
    from devil_dataset.core.networks.dinov2 import save_random_dinov2
    from devil_dataset.eval.protocols.prove.kernels import MMD_ARITHMETICS
    from devil_dataset.eval.protocols.prove.removal import dinov2, removal_scores

    frames, masks = removal_video()
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        network = dinov2(str(save_random_dinov2(tmp, hidden_size=32, layers=2, heads=2, seed=0)), "cpu")
        seen: list[np.ndarray] = []

        def features(images):
            f = network.patch_features(images)
            seen.append(f)
            return f

        for arithmetic in MMD_ARITHMETICS:
            scores = removal_scores(frames, masks, features, arithmetic=arithmetic)
            out[f"removal_rc_s_{arithmetic}"] = float(scores.rc_s).hex()
            out[f"removal_rc_t_{arithmetic}"] = float(scores.rc_t).hex()
        out["removal_features"] = bytes_digest(*(np.ascontiguousarray(f, np.float32).tobytes() for f in seen))
    return out


def probe(sections: tuple[str, ...] = SECTIONS) -> dict[str, str]:
    """The values of the chosen sections (see the module docstring)."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if "media" in sections:
            out.update(media(Path(tmp)))
        if "labels" in sections:
            out.update(labels())
        if "baselines" in sections:
            out.update(baselines(Path(tmp)))
        if "networks" in sections:
            out.update(networks(int(os.environ.get("DEVIL_PROBE_BATCH", "8"))))
        if "removal" in sections and importlib.util.find_spec("transformers") is not None:  # the removal extra
            out.update(removal())
    return out


if __name__ == "__main__":
    _force_av_cpu_flags()
    _force_x264_asm()
    chosen = tuple(s for s in os.environ.get("DEVIL_PROBE_SECTIONS", ",".join(SECTIONS)).split(",") if s)
    print(json.dumps(probe(chosen), sort_keys=True))

"""Run by tests/core/test_determinism.py in a subprocess: the label, evaluate and baseline paths on small generated
clips, printed as one JSON object (metric values as ``repr`` floats, arrays as SHA-256 of their bytes).

``DEVIL_TEST_AV_CPU_FLAGS`` (an integer) forces FFmpeg's CPU flags through ``av_force_cpu_flags`` (0 = no SIMD), the
one dispatch that has no environment variable of its own.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np


def _force_av_cpu_flags() -> None:
    flags = os.environ.get("DEVIL_TEST_AV_CPU_FLAGS")
    if flags is None:
        return
    import av

    libs = glob.glob(os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs", "libavutil*.so*"))
    if not libs:
        sys.exit("DEVIL_TEST_AV_CPU_FLAGS: no bundled libavutil next to PyAV")
    ctypes.CDLL(libs[0]).av_force_cpu_flags(int(flags))


def digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes."""
    array = np.ascontiguousarray(array)
    return hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()


def probe() -> dict[str, str]:
    """Hashes and values of every path checked (see the module docstring)."""
    from devil_dataset.builder.camera_motion import camera_motion_score
    from devil_dataset.builder.samples import render_scene, scene
    from devil_dataset.builder.scene_motion import scene_motion_score
    from devil_dataset.core.video_io import load_clip, write_video
    from devil_dataset.eval import functional as F
    from devil_dataset.inpaint import get_inpainter

    out: dict[str, str] = {}
    label_clip = render_scene(scene("jitter_water"), size=(160, 96), num_frames=14, seed=2)
    video = render_scene(scene("handheld_static"), size=(192, 128), num_frames=8, seed=3)
    out["render"] = digest(np.stack([label_clip[:8, :96, :160], video[:, :96, :160]]))
    out["camera_motion_score"] = repr(camera_motion_score(label_clip, detector="sift", scoring_size=None))
    out["scene_motion_score"] = repr(scene_motion_score(label_clip, detector="sift", scoring_size=None))
    with tempfile.TemporaryDirectory() as tmp:  # the stored clip round trip: x264 encode, decode, YUV -> RGB
        path = write_video(Path(tmp) / "clip.mp4", video, fps=25)
        out["encoded"] = hashlib.sha256(path.read_bytes()).hexdigest()
        gt = load_clip(path)
    out["decoded"] = digest(gt)
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, 40:80, 60:110] = True
    for name in ("telea", "aligned-copy", "flow-propagation"):
        pred = get_inpainter(name)(gt, hole)
        out[name] = digest(pred)
        if name == "flow-propagation":  # the evaluation: every metric that runs without weights
            out["psnr"] = repr(F.psnr(pred, gt, hole))
            out["ssim"] = repr(F.ssim(pred, gt, hole))
            out["pcons"] = repr(F.pcons(pred, gt, hole))
            out["warp_error"] = repr(F.warp_error(pred, gt, hole, flow="dis"))
    return out


if __name__ == "__main__":
    _force_av_cpu_flags()
    print(json.dumps(probe(), sort_keys=True))

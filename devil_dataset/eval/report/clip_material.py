"""The HTML report's clip streams: how a stream's frames are made and encoded, and clip material made ahead.

A *stream* is one player of the report (:mod:`devil_dataset.eval.report.html`): a clip's ground truth, its masked
input, a method's output or its error map, shrunk to :data:`CLIP_MAX_SIDE` and encoded as H.264 with a JPEG poster
(its first frame). The functions here make those frames and files; the report calls them after decoding the frames.

*Clip material* (:class:`ClipMaterial`) is a folder of such stream files made ahead, where the frames are already in
memory: ``devil benchmark`` and ``devil demo`` write every (clip, hole) unit's streams while inpainting and scoring
it, so that their report stage copies the clips it shows instead of decoding frames again. A stream is found by
its :func:`stream_key`: the kind of stream and the identities of what it is made of (the ground truth's, the hole's
and the prediction files' digests), with the encoding settings and the encoder's version. The same key, the same
frames, hence the same bytes as a report that decodes them: the encoding is deterministic (one x264 thread, fixed
settings; OpenCV's area resize on uint8 frames).

    >>> error_grey(np.zeros((1, 2, 2, 3), np.uint8), np.full((1, 2, 2, 3), 10, np.uint8))[0].tolist()
    [[40, 40], [40, 40]]
    >>> stream_key("gt", "abc") == stream_key("gt", "abc") != stream_key("gt", "abd")
    True
"""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import cv2
import numpy as np

from ...core.atomic import atomic_path
from ...core.release_format import list_frames
from ...core.version import __version__

# Clip video: longest side in pixels, frame rate and H.264 quality. Small on purpose (the demo's
# report stays under 50 MB); baseline profile + yuv420p play in every Chromium build, Debian's included.
CLIP_MAX_SIDE = 256
CLIP_FPS = 10
CLIP_CRF = 28
# Error map: mean absolute RGB error times this gain, clipped to 255 (a 64-level error is full white).
ERROR_GAIN = 4
POSTER_QUALITY = 80  # JPEG quality of each player's poster (its first frame: never a blank player)
MASK_COLOUR = (0, 160, 0)  # the hole's pixels in the masked input (mid-grey-green)

# Grey error of a summed absolute RGB difference 0..765: min(255, sum * ERROR_GAIN / 3) in float32, truncated (the
# arithmetic of error_grey, tabulated once).
_ERROR_LUT = np.minimum(np.arange(3 * 255 + 1, dtype=np.float32) * (ERROR_GAIN / 3.0), 255).astype(np.uint8)


def error_grey(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Grey error per frame, ``min(255, ERROR_GAIN * mean_c |pred - gt|)`` as uint8 ``[T, H, W]``.

    >>> error_grey(np.zeros((1, 2, 2, 3), np.uint8), np.full((1, 2, 2, 3), 10, np.uint8))[0].tolist()
    [[40, 40], [40, 40]]
    """
    out = np.empty(gt.shape[:3], np.uint8)
    total = np.empty(gt.shape[1:3], np.uint16)
    for t, (a, b) in enumerate(zip(gt, pred)):
        d = cv2.absdiff(a, b)
        np.add(d[..., 0], d[..., 1], out=total, dtype=np.uint16)
        total += d[..., 2]
        np.take(_ERROR_LUT, total, out=out[t])
    return out


def error_map(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """:func:`error_grey` as uint8 RGB ``[T, H, W, 3]``."""
    return np.repeat(error_grey(gt, pred)[..., None], 3, axis=-1)


def even_size(h: int, w: int, max_side: int = CLIP_MAX_SIDE) -> tuple[int, int]:
    """The clip size of an ``h`` x ``w`` frame: longest side at most ``max_side``, both sides even.

    >>> even_size(480, 832)
    (148, 256)
    """
    s = min(1.0, max_side / max(h, w))
    return max(2, int(round(h * s / 2)) * 2), max(2, int(round(w * s / 2)) * 2)


def shrink(frames: np.ndarray, max_side: int = CLIP_MAX_SIDE) -> np.ndarray:
    """Frames resized (area interpolation) to the clip size, so that encoding only converts colours."""
    oh, ow = even_size(frames.shape[1], frames.shape[2], max_side)
    if (oh, ow) == frames.shape[1:3]:
        return frames
    out = np.empty((frames.shape[0], oh, ow, *frames.shape[3:]), frames.dtype)
    for i, f in enumerate(frames):
        out[i] = cv2.resize(f, (ow, oh), interpolation=cv2.INTER_AREA)
    return out


def masked_input(gt: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """The method's input as a person sees it: hole pixels painted mid-grey-green."""
    out = gt.copy()
    colour = np.asarray(MASK_COLOUR, np.uint8)
    for f, h in zip(out, np.asarray(hole, bool)):  # frame by frame: 3x faster than one mask over the whole clip
        f[h] = colour
    return out


def shrink_masked(gt: np.ndarray, hole: np.ndarray, max_side: int = CLIP_MAX_SIDE) -> np.ndarray:
    """``shrink(masked_input(gt, hole))``, one frame at a time (no full-size copy of the clip)."""
    oh, ow = even_size(gt.shape[1], gt.shape[2], max_side)
    if (oh, ow) == gt.shape[1:3]:
        return masked_input(gt, hole)
    out = np.empty((gt.shape[0], oh, ow, 3), np.uint8)
    for i in range(gt.shape[0]):
        out[i] = cv2.resize(masked_input(gt[i:i + 1], hole[i:i + 1])[0], (ow, oh), interpolation=cv2.INTER_AREA)
    return out


def grey_to_rgb(grey: np.ndarray) -> np.ndarray:
    """uint8 ``[T, H, W]`` as RGB ``[T, H, W, 3]`` (the error map's stream)."""
    return np.repeat(grey[..., None], 3, axis=-1)


def write_clip_mp4(frames: np.ndarray, path: str | Path, fps: int = CLIP_FPS, max_side: int = CLIP_MAX_SIDE) -> Path:
    """Encode uint8 RGB ``[T, H, W, 3]`` as H.264 (baseline, yuv420p, faststart) with PyAV, atomically."""
    import av
    from av.video.reformatter import VideoReformatter

    path = Path(path)
    t, h, w = frames.shape[:3]
    oh, ow = even_size(h, w, max_side)
    to_yuv = VideoReformatter()  # one for the clip: VideoFrame.reformat makes one per frame (the same conversion)
    with atomic_path(path) as tmp:
        with av.open(str(tmp), "w", format="mp4", options={"movflags": "+faststart"}) as c:
            st = c.add_stream("libx264", rate=fps)
            st.width, st.height, st.pix_fmt = ow, oh, "yuv420p"
            st.options = {"profile": "baseline", "crf": str(CLIP_CRF), "preset": "veryfast", "threads": "1"}
            for i in range(t):
                f = av.VideoFrame.from_ndarray(np.ascontiguousarray(frames[i]), format="rgb24")
                f = to_yuv.reformat(f, width=ow, height=oh, format="yuv420p")
                f.pts = i
                for pkt in st.encode(f):
                    c.mux(pkt)
            for pkt in st.encode():
                c.mux(pkt)
    return path


def write_stream(frames: np.ndarray, mp4: Path, poster: Path) -> None:
    """One stream's files: the H.264 clip of ``frames`` (RGB, already at the clip size) and its JPEG poster (the
    first frame), each written atomically."""
    write_clip_mp4(frames, mp4)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(frames[0], cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, POSTER_QUALITY])
    with atomic_path(poster) as tmp:
        Path(tmp).write_bytes(buf.tobytes())


def copy_stream(files: tuple[Path, Path], mp4: Path, poster: Path) -> None:
    """Copy a stream's (mp4, poster) ``files`` to ``mp4`` and ``poster``, each atomically."""
    for src, dst in zip(files, (mp4, poster)):
        with atomic_path(dst) as tmp:
            shutil.copyfile(src, tmp)


def _encoder_version() -> str:
    import av

    return f"{av.__version__}/{av.library_versions.get('libavcodec')}"


def stream_key(kind: str, *parts: str) -> str:
    """The name of a stream in clip material: a SHA-256 hex of the stream's ``kind`` (``gt``, ``masked``, ``pred``,
    ``error``), the identities of what it is made of (``parts``), the clip settings, the package version and the
    encoder's (another encoder or setting, another key: material made by another version is not used)."""
    h = hashlib.sha256(repr((CLIP_MAX_SIDE, CLIP_FPS, CLIP_CRF, ERROR_GAIN, POSTER_QUALITY, MASK_COLOUR,
                             __version__, _encoder_version(), kind, *parts)).encode())
    return h.hexdigest()


def frame_files_digest(files: Sequence[Path], layout: str) -> str:
    """SHA-256 of a prediction's files (in order) and its layout: the same files, the same frames."""
    h = hashlib.sha256(layout.encode())
    for f in files:
        h.update(Path(f).read_bytes())
    return h.hexdigest()


def prediction_folder_digest(folder: str | Path) -> str | None:
    """:func:`frame_files_digest` of a release-layout clip folder's ``frame_%04d_pred.png`` files; None when it holds
    none."""
    folder = Path(folder)
    files = list_frames(folder, "pred") if folder.is_dir() else []
    return frame_files_digest(files, "frames") if files else None


@dataclass(frozen=True)
class ClipSource:
    """Where the streams of a (slice, clip) shown by a report come from in clip material: the dataset folder its
    results name (the material is used only for that one), the identity of the clip's ground truth frames, of its
    hole (the unit's hole fingerprint) and its number of frames."""

    dataset: str
    gt: str
    hole: str
    num_frames: int


class ClipMaterial:
    """A folder of streams made ahead: ``<key>.mp4`` and ``<key>.jpg`` per :func:`stream_key` (written atomically,
    the poster last: a stream is there when its poster is).

    >>> import tempfile
    >>> material = ClipMaterial(tempfile.mkdtemp())
    >>> key = stream_key("gt", "clip")
    >>> material.find(key) is None
    True
    >>> material.put(key, np.zeros((2, 8, 8, 3), np.uint8))
    >>> [p.suffix for p in material.find(key)]
    ['.mp4', '.jpg']
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def find(self, key: str) -> tuple[Path, Path] | None:
        """The stream's (mp4, poster) files, or None when it was not made."""
        mp4, poster = self.folder / f"{key}.mp4", self.folder / f"{key}.jpg"
        return (mp4, poster) if poster.is_file() and mp4.is_file() else None

    def put(self, key: str, frames: np.ndarray) -> None:
        """Encode ``frames`` (RGB, at the clip size) as the stream ``key``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_stream(frames, self.folder / f"{key}.mp4", self.folder / f"{key}.jpg")

    def _make(self, key: str, frames: Callable[[], np.ndarray]) -> None:
        """The stream ``key`` from ``frames()``, computed and encoded only when it is not already made."""
        if self.find(key) is None:
            self.put(key, frames())

    def make_unit(self, gt_id: str, gt: np.ndarray, hole_id: str, hole: np.ndarray) -> None:
        """The ground truth's and the masked input's streams of a (clip, hole) unit, each unless already made."""
        self._make(stream_key("gt", gt_id), lambda: shrink(gt))
        self._make(stream_key("masked", gt_id, hole_id), lambda: shrink_masked(gt, hole))

    def make_prediction(self, gt_id: str, gt: np.ndarray, pred_id: str, pred: np.ndarray) -> None:
        """A prediction's streams (its output and its error map), each unless already made."""
        self._make(stream_key("pred", pred_id), lambda: shrink(pred))
        self._make(stream_key("error", gt_id, pred_id), lambda: grey_to_rgb(shrink(error_grey(gt, pred))))


__all__ = ["CLIP_CRF", "CLIP_FPS", "CLIP_MAX_SIDE", "ClipMaterial", "ClipSource", "ERROR_GAIN", "MASK_COLOUR",
           "POSTER_QUALITY", "copy_stream", "error_grey", "error_map", "even_size", "frame_files_digest",
           "grey_to_rgb", "masked_input", "prediction_folder_digest", "shrink", "shrink_masked", "stream_key",
           "write_clip_mp4", "write_stream"]

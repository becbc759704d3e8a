"""The DAVIS / YouTube-VOS test layout the ProPainter / E2FGVI evaluation reads (issue 38;
``docs/propainter-protocol.md``), and the frames and holes it reads from it.

- ground truth: ``GT/JPEGImages/<video>/*.jpg`` or ``GT/<video>/*.jpg|*.png`` (any names; frame *i* is the *i*-th
  file in sorted order);
- masks: ``MASKS/<video>/00000.png, 00001.png, ...`` (one per frame, named by index; nonzero = hole);
- a method's output (read by :func:`list_prediction_frames`): ``PRED/<video>/*.png`` at 432x240.

As their code does, the **video list comes from the mask folder** (sorted names) and each video's **frame count from
its ground-truth folder**. Every problem of the layout (a video without frames, missing or extra masks) is collected
into ONE :class:`~devil_dataset.core.errors.DevilError` naming the folders and files, before anything is decoded.

Reading follows their ``TestDataset``: frames decoded with OpenCV (BGR -> RGB) and resized to 432x240 with
``INTER_LINEAR`` (skipped when already that size: an exact no-op); masks opened with Pillow, resized with
``NEAREST`` *before* the conversion to grey, then ``> 0``. The hole returned is NOT dilated: the protocol's 3x3-cross
x4 dilation is :func:`devil_dataset.eval.kernels.propainter.dilate_hole`.

    >>> import tempfile, pathlib, cv2, numpy as np
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for t in range(2):
    ...     (root / "GT/JPEGImages/bear").mkdir(parents=True, exist_ok=True)
    ...     (root / "MASKS/bear").mkdir(parents=True, exist_ok=True)
    ...     _ = cv2.imwrite(str(root / f"GT/JPEGImages/bear/{t:05d}.jpg"), np.zeros((48, 64, 3), np.uint8))
    ...     _ = cv2.imwrite(str(root / f"MASKS/bear/{t:05d}.png"), np.full((48, 64), 255, np.uint8))
    >>> [video] = list_davis_videos(root / "GT", root / "MASKS")
    >>> video.name, len(video.frame_paths), len(video.mask_paths)
    ('bear', 2, 2)
    >>> frames, hole = read_davis_video(video)
    >>> frames.shape, frames.dtype, hole.shape, bool(hole.all())
    ((2, 240, 432, 3), dtype('uint8'), (2, 240, 432), True)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from ...core.cv_determinism import pin_opencv
from ...core.errors import DevilError

pin_opencv()  # CPU-independent OpenCV results (issue 27, core/cv_determinism.py)

#: The protocol's frame size (W, H): ProPainter ``scripts/evaluate_propainter.py`` defaults ``--width 432
#: --height 240``; E2FGVI ``evaluate.py`` hard-codes ``w, h = 432, 240``.
PROTOCOL_SIZE: tuple[int, int] = (432, 240)
#: Ground-truth frame files: DAVIS / YouTube-VOS ship JPEG; PNG frames are accepted too.
FRAME_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png")
#: Mask file of frame i: ``f"{i:05d}.png"`` (ProPainter ``core/dataset.py`` TestDataset: ``str(i).zfill(5)+'.png'``).
MASK_NAME = "{:05d}.png"
#: The subfolder DAVIS / YouTube-VOS keep their frames in (``GT/JPEGImages/<video>``), when present.
JPEG_FOLDER = "JPEGImages"
MAX_PROBLEMS = 20  # problems listed in one layout error (then a count), so one bad folder does not flood it


@dataclass(frozen=True)
class DavisVideo:
    """One test video: its name (the mask folder's subfolder), its ground-truth frame files in order and its mask
    files (``00000.png`` ...), one per frame."""

    name: str
    frame_paths: tuple[Path, ...]
    mask_paths: tuple[Path, ...]


def frames_root(gt_dir: str | Path) -> Path:
    """The folder holding one subfolder of frames per video: ``gt_dir/JPEGImages`` when it exists, else ``gt_dir``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> frames_root(d) == d
    True
    """
    gt_dir = Path(gt_dir)
    nested = gt_dir / JPEG_FOLDER
    return nested if nested.is_dir() else gt_dir


def image_files(folder: Path, suffixes: tuple[str, ...] = FRAME_SUFFIXES) -> tuple[Path, ...]:
    """The files of ``folder`` whose suffix (any case) is one of ``suffixes``, in sorted name order (the order their
    code pairs frames with masks by)."""
    return tuple(sorted((p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes),
                        key=lambda p: p.name))


def _raise_problems(problems: list[str], what: str) -> None:
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = f"\n  ... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise DevilError(f"{what}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in shown) + more)


def _video_problems(name: str, frame_dir: Path, mask_dir: Path) -> tuple[DavisVideo | None, list[str]]:
    if not frame_dir.is_dir():
        return None, [f"{name}: no ground-truth folder {frame_dir}"]
    frames = image_files(frame_dir)
    if not frames:
        return None, [f"{name}: {frame_dir} holds no {'/'.join(FRAME_SUFFIXES)} frames"]
    masks = tuple(mask_dir / MASK_NAME.format(i) for i in range(len(frames)))
    missing = [p.name for p in masks if not p.is_file()]
    problems = []
    if missing:
        listed = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        problems.append(f"{name}: {len(frames)} frames in {frame_dir} but {mask_dir} lacks {listed}")
    else:
        n_masks = len(image_files(mask_dir, (".png",)))
        if n_masks != len(frames):
            problems.append(f"{name}: {len(frames)} frames in {frame_dir} but {n_masks} mask PNGs in {mask_dir} "
                            f"(masks must be {MASK_NAME.format(0)} ... {MASK_NAME.format(len(frames) - 1)})")
    return (None if problems else DavisVideo(name, frames, masks)), problems


def list_davis_videos(gt_dir: str | Path, mask_dir: str | Path) -> list[DavisVideo]:
    """The test videos of a DAVIS / YouTube-VOS layout: names from ``mask_dir``'s subfolders (sorted), frames from
    ``gt_dir/JPEGImages/<video>`` (or ``gt_dir/<video>``), masks ``mask_dir/<video>/00000.png ...``.

    Raises one :class:`~devil_dataset.core.errors.DevilError` naming every problem: a missing folder, a video without
    a ground-truth folder or frames, mask files missing or extra for its frame count.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "MASKS/bear").mkdir(parents=True); (d / "GT").mkdir()
    >>> list_davis_videos(d / "GT", d / "MASKS")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: .../MASKS vs .../GT: 1 problem(s):
      bear: no ground-truth folder .../GT/bear
    """
    gt_dir, mask_dir = Path(gt_dir), Path(mask_dir)
    for folder, what in ((gt_dir, "ground-truth"), (mask_dir, "mask")):
        if not folder.is_dir():
            raise DevilError(f"{folder}: {what} folder does not exist")
    names = sorted(p.name for p in mask_dir.iterdir() if p.is_dir())
    if not names:
        raise DevilError(f"{mask_dir}: no video folders (expected {mask_dir}/<video>/{MASK_NAME.format(0)} ...)")
    root = frames_root(gt_dir)
    videos, problems = [], []
    for name in names:
        video, found = _video_problems(name, root / name, mask_dir / name)
        problems += found
        if video is not None:
            videos.append(video)
    _raise_problems(problems, f"{mask_dir} vs {root}")
    return videos


def read_protocol_frame(path: str | Path, size: tuple[int, int] = PROTOCOL_SIZE) -> np.ndarray:
    """One frame as their code reads it: OpenCV decode (BGR), converted to RGB, resized to ``size`` (W, H) with
    ``INTER_LINEAR`` unless already that size. uint8 [H, W, 3]; an unreadable file is a DevilError naming it."""
    path = Path(path)
    try:
        data = np.fromfile(path, np.uint8)
    except OSError as exc:
        raise DevilError(f"{path}: unreadable image ({exc})") from None
    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if bgr is None:
        raise DevilError(f"{path}: unreadable image (OpenCV cannot decode it)")
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    if (rgb.shape[1], rgb.shape[0]) != tuple(size):
        rgb = cv2.resize(rgb, tuple(size), interpolation=cv2.INTER_LINEAR)
    return rgb


def read_protocol_mask(path: str | Path, size: tuple[int, int] = PROTOCOL_SIZE) -> np.ndarray:
    """One mask as their code reads it: Pillow, resized to ``size`` (W, H) with ``NEAREST``, then converted to grey,
    then ``> 0``. bool [H, W], True = hole (not dilated)."""
    try:
        with Image.open(path) as im:
            grey = im.resize(tuple(size), Image.Resampling.NEAREST).convert("L")
    except OSError as exc:
        raise DevilError(f"{path}: unreadable mask image ({exc})") from None
    return np.asarray(grey) > 0


def read_davis_video(video: DavisVideo, size: tuple[int, int] = PROTOCOL_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """A video's frames (uint8 [T, H, W, 3] RGB, resized per the protocol) and hole (bool [T, H, W], resized and
    ``> 0``, NOT dilated). See the module docstring for an example."""
    frames = np.stack([read_protocol_frame(p, size) for p in video.frame_paths])
    hole = np.stack([read_protocol_mask(p, size) for p in video.mask_paths])
    return frames, hole


def list_prediction_frames(pred_dir: str | Path, videos: list[DavisVideo]) -> dict[str, tuple[Path, ...]]:
    """Each video's output frames ``pred_dir/<video>/*.png`` (sorted), checked against its frame count: one
    DevilError names every video whose folder is missing or holds another number of PNGs.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> list_prediction_frames(d, [DavisVideo("bear", (d / "0.jpg",), (d / "00000.png",))])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: ...: 1 problem(s):
      bear: no output folder .../bear
    """
    pred_dir = Path(pred_dir)
    if not pred_dir.is_dir():
        raise DevilError(f"{pred_dir}: prediction folder does not exist")
    found, problems = {}, []
    for video in videos:
        folder = pred_dir / video.name
        if not folder.is_dir():
            problems.append(f"{video.name}: no output folder {folder}")
            continue
        pngs = image_files(folder, (".png",))
        if len(pngs) != len(video.frame_paths):
            problems.append(f"{video.name}: {len(pngs)} PNG frames in {folder}, expected {len(video.frame_paths)}")
        found[video.name] = pngs
    _raise_problems(problems, f"{pred_dir}")
    return found


def read_prediction_video(paths: tuple[Path, ...], size: tuple[int, int] = PROTOCOL_SIZE) -> np.ndarray:
    """A method's output frames as uint8 [T, H, W, 3] RGB (OpenCV decode, BGR -> RGB); each must already be ``size``
    (W, H): another size is a DevilError naming the file (the protocol scores outputs at 432x240, never resized)."""
    frames = []
    for p in paths:
        data = np.fromfile(p, np.uint8) if p.is_file() else np.zeros(0, np.uint8)
        bgr = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
        if bgr is None:
            raise DevilError(f"{p}: unreadable image (OpenCV cannot decode it)")
        if (bgr.shape[1], bgr.shape[0]) != tuple(size):
            raise DevilError(f"{p}: {bgr.shape[1]}x{bgr.shape[0]} frame; the protocol scores outputs at "
                             f"{size[0]}x{size[1]}")
        frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    return np.stack(frames)


__all__ = ["FRAME_SUFFIXES", "JPEG_FOLDER", "MASK_NAME", "PROTOCOL_SIZE", "DavisVideo", "frames_root", "image_files",
           "list_davis_videos", "list_prediction_frames", "read_davis_video", "read_prediction_video",
           "read_protocol_frame", "read_protocol_mask"]

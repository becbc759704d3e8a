"""The DAVIS / YouTube-VOS test layout the ProPainter / E2FGVI evaluation reads
(``docs/propainter-protocol.md``), and the frames and holes it reads from it.

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
x4 dilation is :func:`devil_dataset.eval.protocols.propainter.kernels.dilate_hole`.

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

from ....core.errors import DevilError

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


def is_hidden(path: Path) -> bool:
    """A hidden file (``.name``), among them macOS's AppleDouble metadata ``._00000.png`` beside every file copied
    from a Mac: never an image, whatever its suffix.

    >>> is_hidden(Path("._00000.png")), is_hidden(Path("00000.png"))
    (True, False)
    """
    return path.name.startswith(".")


def image_files(folder: Path, suffixes: tuple[str, ...] = FRAME_SUFFIXES) -> tuple[Path, ...]:
    """The files of ``folder`` whose suffix (any case) is one of ``suffixes``, in sorted name order (the order their
    code pairs frames with masks by); hidden files (``._*`` AppleDouble, :func:`is_hidden`) are not images and are
    left out (:func:`layout_notes` says so)."""
    return tuple(sorted((p for p in folder.iterdir()
                         if p.is_file() and p.suffix.lower() in suffixes and not is_hidden(p)),
                        key=lambda p: p.name))


def layout_notes(gt_dir: str | Path, mask_dir: str | Path, videos: list[DavisVideo],
                 pred_dir: str | Path | None = None) -> tuple[dict[str, str], list[str]]:
    """What a run over ``videos`` leaves out, for the results and stderr: ground-truth videos without a mask
    folder (video -> why; their code takes the video list from the mask folder), and the hidden ``._*`` files
    ignored (one line per kind of folder, with the first of them named).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for f in ("GT/bear", "GT/boat", "MASKS/bear"): (d / f).mkdir(parents=True)
    >>> _ = (d / "MASKS/bear/._00000.png").write_bytes(b"")
    >>> left, notes = layout_notes(d / "GT", d / "MASKS", [DavisVideo("bear", (), ())])
    >>> left["boat"].startswith("no mask folder"), notes[0].startswith("ignored 1 hidden file (._00000.png")
    (True, True)
    """
    mask_dir, root = Path(mask_dir), frames_root(gt_dir)
    have_masks = {p.name for p in mask_dir.iterdir() if p.is_dir()} if mask_dir.is_dir() else set()
    left_out = {p.name: f"no mask folder {mask_dir / p.name} (the video list comes from --mask-dir, as in their "
                        "code); the ground truth has it"
                for p in sorted(root.iterdir()) if p.is_dir() and not is_hidden(p) and p.name not in have_masks} \
        if root.is_dir() else {}
    notes = []
    kinds = [("ground-truth", root), ("mask", mask_dir)] + ([("output", Path(pred_dir))] if pred_dir else [])
    for kind, base in kinds:
        hidden = [f for v in videos if (base / v.name).is_dir() for f in sorted((base / v.name).iterdir())
                  if f.is_file() and f.name.startswith("._")]
        if hidden:
            notes.append(f"ignored {len(hidden)} hidden file{'s' if len(hidden) > 1 else ''} ({hidden[0].name} in "
                         f"{hidden[0].parent}{' ...' if len(hidden) > 1 else ''}) in the {kind} folders: macOS "
                         "AppleDouble metadata, not images (`dot_clean` or `find . -name '._*' -delete` removes them)")
    if left_out:
        notes.append(f"left out {len(left_out)} ground-truth video{'s' if len(left_out) > 1 else ''} without masks: "
                     + "; ".join(f"{v}: {why}" for v, why in left_out.items()))
    return left_out, notes


def describe_folder(folder: Path, limit: int = 4) -> str:
    """What ``folder`` holds, for an error message: its files counted by suffix with the first names, and its
    subfolders (hidden ``._*`` / ``.*`` entries are left out).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in ("00000.jpg", "00001.jpg", "notes.txt"): _ = (d / n).write_text("x")
    >>> (d / "480p").mkdir(); describe_folder(d)
    'holds 2 .jpg (00000.jpg, 00001.jpg), 1 .txt (notes.txt) and the folder 480p'
    >>> describe_folder(d / "missing")
    'does not exist'
    """
    if not folder.is_dir():
        return "does not exist"
    entries = sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)
    files, dirs = [p for p in entries if p.is_file()], [p.name for p in entries if p.is_dir()]
    by_suffix: dict[str, list[str]] = {}
    for f in files:
        by_suffix.setdefault(f.suffix.lower() or "(no suffix)", []).append(f.name)
    parts = [f"{len(names)} {suffix} ({', '.join(names[:2])}{', ...' if len(names) > 2 else ''})"
             for suffix, names in by_suffix.items()]
    if dirs:
        shown = ", ".join(dirs[:limit]) + (f" and {len(dirs) - limit} more" if len(dirs) > limit else "")
        parts.append(f"the folder{'s' if len(dirs) > 1 else ''} {shown}")
    if not parts:
        return "is empty"
    return "holds " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def _missing_frames_folder(name: str, frame_dir: Path, gt_dir: Path) -> str:
    """The problem of a video without a ground-truth folder: where it looked (``JPEGImages/`` included), what the
    folder it looked in holds, and a subfolder that does hold the video (``JPEGImages/480p/<video>``)."""
    root = frame_dir.parent
    looked = (f"looked in {root}/ (the JPEGImages/ of --gt-dir {gt_dir}, used when present)" if root != gt_dir
              else f"looked in {root}/ and in {root / JPEG_FOLDER}/ (absent)")
    hint = ""
    if root.is_dir():
        deeper = [p for p in sorted(root.iterdir()) if p.is_dir() and (p / name).is_dir()]
        if deeper:
            hint = f"; {deeper[0] / name} exists: give --gt-dir {deeper[0]}"
    return f"{name}: no ground-truth folder {frame_dir} ({looked}; {root.name}/ {describe_folder(root)}){hint}"


def _raise_problems(problems: list[str], what: str) -> None:
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = f"\n  ... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise DevilError(f"{what}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in shown) + more)


def _video_problems(name: str, frame_dir: Path, mask_dir: Path,
                    gt_dir: Path | None = None) -> tuple[DavisVideo | None, list[str]]:
    if not frame_dir.is_dir():
        return None, [_missing_frames_folder(name, frame_dir, gt_dir or frame_dir.parent)]
    frames = image_files(frame_dir)
    if not frames:
        return None, [f"{name}: {frame_dir} holds no {'/'.join(FRAME_SUFFIXES)} frames (it "
                      f"{describe_folder(frame_dir)})"]
    masks = tuple(mask_dir / MASK_NAME.format(i) for i in range(len(frames)))
    missing = [p.name for p in masks if not p.is_file()]
    problems = []
    if missing:
        listed = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        problems.append(f"{name}: {len(frames)} frames in {frame_dir} but {mask_dir} lacks {listed} (it "
                        f"{describe_folder(mask_dir)}; masks must be PNG files named {MASK_NAME.format(0)}, "
                        f"{MASK_NAME.format(1)} ...)")
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
      bear: no ground-truth folder .../GT/bear (looked in .../GT/ and in .../GT/JPEGImages/ (absent); GT/ is empty)
    """
    gt_dir, mask_dir = Path(gt_dir), Path(mask_dir)
    for folder, what in ((gt_dir, "ground-truth"), (mask_dir, "mask")):
        if not folder.is_dir():
            raise DevilError(f"{folder}: {what} folder does not exist")
    names = sorted(p.name for p in mask_dir.iterdir() if p.is_dir() and not is_hidden(p))
    if not names:
        raise DevilError(f"{mask_dir}: no video folders (expected {mask_dir}/<video>/{MASK_NAME.format(0)} ...)")
    root = frames_root(gt_dir)
    videos, problems = [], []
    for name in names:
        video, found = _video_problems(name, root / name, mask_dir / name, gt_dir)
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
            problems.append(f"{video.name}: {len(pngs)} PNG frames in {folder}, expected {len(video.frame_paths)} "
                            f"(it {describe_folder(folder)}; outputs are read as PNG only: save them losslessly "
                            "as .png)")
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


__all__ = ["FRAME_SUFFIXES", "JPEG_FOLDER", "MASK_NAME", "PROTOCOL_SIZE", "DavisVideo", "describe_folder",
           "frames_root", "image_files", "is_hidden", "layout_notes",
           "list_davis_videos", "list_prediction_frames", "read_davis_video", "read_prediction_video",
           "read_protocol_frame", "read_protocol_mask"]

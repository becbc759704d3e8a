"""The layout PROVE's removal evaluation reads (``docs/removal.md``): three folders matched by name —
inputs (the videos with the object), results (a method's removals), masks (white = the removed object) — each entry a
``<name>.mp4`` or a ``<name>/`` folder of PNG / JPEG frames (sorted file names).

Reading follows xiaomi-research/prove's ``utils/media_utils.py`` and ``run_prove_metrics.py``: frames decoded with
OpenCV (BGR -> RGB), at most :data:`MAX_FRAMES` per video; all three cut to the shortest (their code cuts the input
and the mask to the result's length; :attr:`ProveFrames.frame_counts` keeps every count, so a cut is noted); the
result resized to the mask's size (``INTER_LINEAR``). Unlike their code, names missing from a folder are listed
(:attr:`ProveLayout.unmatched`), never dropped without a word; a link that cannot be followed stays listed under its
name, and :mod:`.input_check` names it and every other unreadable source before scoring.

    >>> import tempfile, pathlib, cv2, numpy as np
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for d in ("IN/cat", "OUT/cat", "MASKS/cat", "IN/dog"):
    ...     (root / d).mkdir(parents=True)
    >>> for t in range(2):
    ...     for d in ("IN/cat", "OUT/cat", "MASKS/cat"):
    ...         _ = cv2.imwrite(str(root / d / f"{t:05d}.png"), np.zeros((28, 28, 3), np.uint8))
    >>> layout = list_prove_videos(root / "IN", root / "OUT", root / "MASKS")
    >>> [v.name for v in layout.videos], layout.unmatched
    (['cat'], {'dog': ['results', 'masks']})
    >>> read_prove_video(layout.videos[0]).result.shape
    (2, 28, 28, 3)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np
from PIL import Image

from ....core.errors import DevilError
from ....core.thread_map import default_threads, thread_map
from ..propainter.layout import FRAME_SUFFIXES, image_files, read_protocol_frame

#: Frames read per video (``run_prove_metrics.py``: ``get_video_frames(gen_path)[:81]``, ``max_frames=81``).
MAX_FRAMES = 81
#: Video files matched by name (``utils/media_utils.py`` ``get_media_pairs``: ``ext = [".mp4"]``).
VIDEO_SUFFIXES: tuple[str, ...] = (".mp4",)
FOLDERS: tuple[str, ...] = ("inputs", "results", "masks")


@dataclass(frozen=True)
class ProveVideo:
    """One video's three sources: a ``.mp4`` file or a folder of frames each."""

    name: str
    inputs: Path
    results: Path
    masks: Path


@dataclass(frozen=True)
class ProveLayout:
    """The matched videos (sorted names) and, per unmatched name, the folders it is missing from."""

    videos: list[ProveVideo]
    unmatched: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class ProveFrames:
    """One video as scored: ``result`` uint8 [T, H, W, 3] RGB at the mask's size, ``masks`` uint8 [T, H, W, 3],
    ``inputs`` uint8 [T, H', W', 3] (the attribute labelling reads them), and what reading changed: the result's
    size before its resize (None when already the mask's), the frame counts before the cut."""

    name: str
    inputs: np.ndarray
    result: np.ndarray
    masks: np.ndarray
    resized_from: tuple[int, int] | None
    frame_counts: dict[str, int]
    masks_palette: bool = False  # the masks are palette PNGs (DAVIS annotations): ``masks`` holds their indices


def _entries(folder: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() in VIDEO_SUFFIXES and (p.is_file() or p.is_symlink()):
            out[p.stem] = p  # a link that cannot be followed is kept: the source check names it
        elif not p.name.startswith(".") and (p.is_dir() or (p.is_symlink() and not p.suffix and not p.exists())):
            out.setdefault(p.name, p)
    return out


def list_prove_videos(inputs: str | Path, results: str | Path, masks: str | Path) -> ProveLayout:
    """Match the three folders by name (``.mp4`` stem or subfolder name); see the module docstring. No common name
    at all is a DevilError listing what each folder holds."""
    folders = {k: Path(v) for k, v in zip(FOLDERS, (inputs, results, masks))}
    for what, folder in folders.items():
        if not folder.is_dir():
            raise DevilError(f"{folder}: {what} folder does not exist")
    found = {what: _entries(folder) for what, folder in folders.items()}
    names = sorted(set().union(*found.values()))
    unmatched = {n: [w for w in FOLDERS if n not in found[w]] for n in names if any(n not in found[w] for w in FOLDERS)}
    videos = [ProveVideo(n, found["inputs"][n], found["results"][n], found["masks"][n]) for n in names
              if n not in unmatched]
    if not videos:
        held = "; ".join(f"{folders[w]}: {len(found[w])} ({', '.join(sorted(found[w])[:5]) or 'nothing'})"
                         for w in FOLDERS)
        raise DevilError(f"no video name is in all three folders (<name>.mp4 or <name>/ of frames): {held}")
    return ProveLayout(videos, unmatched)


def read_frames(path: Path, limit: int = MAX_FRAMES) -> np.ndarray:
    """Up to ``limit`` frames of a ``.mp4`` (OpenCV decode) or a folder of PNG / JPEG frames, RGB uint8
    [T, H, W, 3]; an unreadable or empty source is a DevilError naming it."""
    if path.is_dir():
        files = image_files(path, FRAME_SUFFIXES)[:limit]
        if not files:
            raise DevilError(f"{path}: holds no {'/'.join(FRAME_SUFFIXES)} frames")
        frames = [read_protocol_frame(f, _size_of(f)) for f in files]
        if len({f.shape for f in frames}) > 1:
            raise DevilError(f"{path}: frames of different sizes")
        return np.stack(frames)
    cap = cv2.VideoCapture(str(path))
    out: list[np.ndarray] = []
    while cap.isOpened() and len(out) < limit:
        ok, frame = cap.read()
        if not ok:
            break
        out.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    cap.release()
    if not out:
        raise DevilError(f"{path}: unreadable video (OpenCV decodes no frame)")
    return np.stack(out)


def palette_pngs(path: Path) -> bool:
    """Whether ``path`` is a folder of palette PNG frames (Pillow mode ``P``: DAVIS's annotations, index 0 =
    background, 1, 2, ... = objects), judged by its first frame."""
    files = image_files(path, (".png",)) if path.is_dir() else ()
    if not files:
        return False
    try:
        with Image.open(files[0]) as im:
            return im.mode == "P"
    except OSError:
        return False


def read_palette_indices(path: Path, limit: int = MAX_FRAMES) -> np.ndarray:
    """The palette indices of a folder of palette PNGs as uint8 [T, H, W, 3] (the index in every channel): OpenCV
    would expand them to the palette's colours (DAVIS's object 1 is dark red, grey 38: no object above 127)."""
    frames = []
    for f in image_files(path, (".png",))[:limit]:
        try:
            with Image.open(f) as im:
                index = np.asarray(im if im.mode == "P" else im.convert("L"), np.uint8)
        except OSError as exc:
            raise DevilError(f"{f}: unreadable image ({exc})") from None
        frames.append(np.repeat(index[:, :, None], 3, 2))
    if len({f.shape for f in frames}) > 1:
        raise DevilError(f"{path}: frames of different sizes")
    return np.stack(frames)


def read_masks(path: Path, limit: int = MAX_FRAMES) -> tuple[np.ndarray, bool]:
    """A mask video's frames as uint8 [T, H, W, 3] and whether they are palette indices (a folder of palette PNGs,
    :func:`read_palette_indices`; else the frames as :func:`read_frames` reads them): what
    :func:`~devil_dataset.eval.protocols.prove.mask_reading.prepare_masks` takes."""
    palette = palette_pngs(path)
    return (read_palette_indices(path, limit) if palette else read_frames(path, limit)), palette


def _size_of(path: Path) -> tuple[int, int]:
    """(W, H) of an image file, so that :func:`read_protocol_frame` keeps its size."""
    data = np.fromfile(path, np.uint8)
    image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED) if data.size else None
    if image is None:
        raise DevilError(f"{path}: unreadable image (OpenCV cannot decode it)")
    return int(image.shape[1]), int(image.shape[0])


def read_prove_video(video: ProveVideo, limit: int = MAX_FRAMES) -> ProveFrames:
    """The three sources of one video, cut and resized as their code does (module docstring); the three are decoded
    at once on the CPUs this process may use (OpenCV decodes outside the GIL)."""
    readers: list[Callable[[], Any]] = [partial(read_frames, video.results, limit),
                                        partial(read_frames, video.inputs, limit),  # in full: a short result is noted
                                        partial(read_masks, video.masks, limit)]
    result, inputs, (masks, palette) = thread_map(lambda read: read(), readers, threads=default_threads())
    counts = {"inputs": len(inputs), "results": len(result), "masks": len(masks)}
    n = min(counts.values())
    result, masks, inputs = result[:n], masks[:n], inputs[:n]
    h, w = masks.shape[1:3]
    resized_from = None
    if result.shape[1:3] != (h, w):
        resized_from = (int(result.shape[2]), int(result.shape[1]))
        result = np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_LINEAR) for f in result])
    return ProveFrames(video.name, inputs, result, masks, resized_from, counts, palette)


__all__ = ["FOLDERS", "MAX_FRAMES", "VIDEO_SUFFIXES", "ProveFrames", "ProveLayout", "ProveVideo",
           "list_prove_videos", "palette_pngs", "read_frames", "read_masks", "read_palette_indices",
           "read_prove_video"]

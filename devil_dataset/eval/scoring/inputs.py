"""Prediction layouts and input validation for the evaluator (the release's metrics).

The release scores the composite C = M*GT + (1-M)*Pred (M = 1 on known pixels;
:func:`devil_dataset.eval.kernels.composite.composite`, which :class:`~devil_dataset.eval.metrics.metric.VideoSample`
applies). Predictions come in one of three layouts, detected per folder:

- ``frames``: the release's ``PRED/<clip id>/frame_%04d_pred.png``;
- ``video``: one video file per clip, ``PRED/<clip id>.mp4`` (also .avi .mkv .mov .webm), decoded with PyAV;
- ``single``: ``PRED/frame_%04d_pred.png`` directly (one video; the release devkit's sample layout).

Everything is checked before any metric runs: :func:`validate_clips` raises ONE DevilError listing every
offending clip (missing, frame count or size mismatch).

    >>> validate_clips({"a": VideoShapeInfo("a", 3, (8, 8))}, {"a": VideoShapeInfo("a", 3, (8, 8))})  # all fine
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np
from PIL import Image

from ...core.errors import DevilError
from ...core.release_format import list_frames, read_frame_pngs, read_mask_pngs
from ...core.slices import SLICES
from ...core.video_io import frame_to_rgb
from ...inpaint.run import read_prediction_manifest
from ..metrics.metric import VideoSample

# Video containers accepted for the one-file-per-clip prediction layout.
VIDEO_EXTENSIONS: tuple[str, ...] = (".mp4", ".avi", ".mkv", ".mov", ".webm")


@dataclass(frozen=True)
class VideoShapeInfo:
    """The shape of one clip's video as validation reads it without decoding: frame count and size (W, H), where
    it was read (``source``) and the faults found on the way."""

    clip_id: str
    num_frames: int
    size: tuple[int, int]
    source: str = ""
    problems: tuple[str, ...] = ()  # per-frame faults found by validation (unreadable, mode, size), files named


def _png_size(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as im:
            return im.size
    except OSError as exc:
        raise DevilError(f"{path}: unreadable image ({exc})") from None


# Frame images: 8-bit RGB and 8-bit grey (L) are read as they are; palette images (P, 8-bit entries) are
# converted exactly to RGB. Every other mode is refused, naming the file: scoring it as 8-bit RGB would be wrong
# (a 16-bit PNG read as its high bytes, float NaN as black, alpha dropped silently).
EXACT_MODES: tuple[str, ...] = ("RGB", "L", "P")
MAX_PROBLEMS_PER_CLIP = 5  # frame faults listed per clip (then a count), so one bad clip does not flood the error


def _png_bit_depth(path: Path) -> int | None:
    """Bit depth from a PNG's IHDR (Pillow opens 16-bit RGB PNGs as 8-bit "RGB"); ``None`` for other files."""
    with open(path, "rb") as f:
        head = f.read(26)
    if len(head) == 26 and head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return head[24]
    return None


def frame_mode_problem(path: str | Path, mode: str) -> str | None:
    """Why an image of ``mode`` at ``path`` cannot be scored as 8-bit RGB, or ``None`` when it can.

    >>> frame_mode_problem("x.png", "RGBA")
    'has an alpha channel (mode RGBA); save 8-bit RGB'
    """
    depth = _png_bit_depth(Path(path)) if Path(path).is_file() else None
    if depth == 16 or mode.startswith("I;16"):
        return f"16-bit image (mode {mode}); save 8-bit RGB (it would be scored as 8-bit)"
    if mode in EXACT_MODES:
        return None
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        return f"has an alpha channel (mode {mode}); save 8-bit RGB"
    if mode == "1":
        return "1-bit image (mode 1); save 8-bit RGB"
    if mode == "F":
        return "32-bit float image (mode F); save 8-bit RGB"
    if mode.startswith("I"):
        return f"32-bit integer image (mode {mode}); save 8-bit RGB"
    return f"colour mode {mode}; save 8-bit RGB"


def read_prediction_frame(path: str | Path) -> np.ndarray:
    """One frame as uint8 RGB [H, W, 3]: RGB as is, L and P converted exactly; other modes a DevilError.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "frame_0000_pred.png"
    >>> Image.new("L", (2, 1), 7).save(p)
    >>> read_prediction_frame(p).tolist()
    [[[7, 7, 7], [7, 7, 7]]]
    """
    try:
        with Image.open(path) as im:
            problem = frame_mode_problem(path, im.mode)
            if problem is None:
                return np.asarray(im.convert("RGB"))
    except OSError as exc:
        raise DevilError(f"{path}: unreadable image ({exc})") from None
    raise DevilError(f"{path}: {problem}")


def _png_info(directory: Path, kind: str, clip_id: str) -> VideoShapeInfo:
    """Frame count and size of a frame folder; every frame's header is read and each fault recorded by file."""
    paths = list_frames(directory, kind)
    size: tuple[int, int] | None = None
    problems = []
    for path in paths:
        try:
            with Image.open(path) as im:
                frame_size, mode = im.size, im.mode
        except OSError as exc:
            problems.append(f"{path}: unreadable image ({exc})")
            continue
        problem = frame_mode_problem(path, mode) if kind != "mask" else None
        if problem:
            problems.append(f"{path}: {problem}")
        if size is None:
            size, first = frame_size, path.name
        elif frame_size != size:
            problems.append(f"{path}: {frame_size[0]}x{frame_size[1]}, expected {size[0]}x{size[1]} (as {first})")
    if len(problems) > MAX_PROBLEMS_PER_CLIP:
        problems[MAX_PROBLEMS_PER_CLIP:] = [f"... and {len(problems) - MAX_PROBLEMS_PER_CLIP} more faulty frames"]
    if not paths and kind == "pred":  # e.g. 00000.png: name what is there and the names expected
        others = sorted(p.name for p in directory.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        if others:
            shown = ", ".join(others[:2]) + (", ..." if len(others) > 2 else "")
            problems.append(f"found {len(others)} image(s) ({shown}) but predicted frames must be named "
                            "frame_%04d_pred.png (frame_0000_pred.png, frame_0001_pred.png, ...)")
    return VideoShapeInfo(clip_id, len(paths), size or (0, 0), str(directory), tuple(problems))


def read_video_file(path: str | Path) -> np.ndarray:
    """Decode every frame of a video file to uint8 RGB [T, H, W, 3] with PyAV."""
    import av


    try:
        with av.open(str(path)) as container:
            frames = [frame_to_rgb(f) for f in container.decode(video=0)]  # CPU-independent YUV -> RGB
    except (av.error.FFmpegError, IndexError) as exc:
        raise DevilError(f"{path}: unreadable video ({exc})") from None
    if not frames:
        raise DevilError(f"{path}: no video frames")
    return np.stack(frames)


def video_file_info(path: str | Path, clip_id: str) -> VideoShapeInfo:
    """Frame count and size of a video file (container metadata when present, else a decoding pass)."""
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            size = (int(stream.codec_context.width), int(stream.codec_context.height))
            n = int(stream.frames or 0)
            if n <= 0:
                n = sum(1 for _ in container.decode(video=0))
    except (av.error.FFmpegError, IndexError) as exc:
        raise DevilError(f"{path}: unreadable video ({exc})") from None
    return VideoShapeInfo(clip_id, n, size, str(path))


class PredictionStore:
    """Predictions of a method in one of the layouts above; ``layout`` says which was detected.

    >>> import tempfile, pathlib
    >>> PredictionStore(pathlib.Path(tempfile.mkdtemp())).layout
    'frames'
    """

    def __init__(self, root: str | Path, single_clip_id: str | None = None) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise DevilError(f"{self.root}: predictions folder does not exist")
        if list_frames(self.root, "pred"):
            self.layout = "single"
        elif any(p.suffix.lower() in VIDEO_EXTENSIONS for p in self.root.iterdir() if p.is_file()):
            self.layout = "video"
        else:
            self.layout = "frames"
        self.single_clip_id = single_clip_id

    def inpaint_manifest(self) -> dict:
        """The folder's ``.devil-inpaint.json`` (``devil inpaint`` writes it: the run and each clip's hole
        fingerprint), or ``{}`` when it has none."""

        return read_prediction_manifest(self.root)

    def _video_path(self, clip_id: str) -> Path | None:
        for ext in VIDEO_EXTENSIONS:
            for cand in (self.root / f"{clip_id}{ext}", self.root / f"{clip_id}{ext.upper()}"):
                if cand.is_file():
                    return cand
        return None

    def info(self, clip_id: str) -> VideoShapeInfo | None:
        """Frame count and size of a clip's prediction; ``None`` when it is missing."""
        if self.layout == "single":
            if self.single_clip_id is not None and clip_id != self.single_clip_id:
                return None
            return _png_info(self.root, "pred", clip_id)
        if self.layout == "video":
            path = self._video_path(clip_id)
            return video_file_info(path, clip_id) if path else None
        folder = self.root / clip_id
        if not folder.is_dir():
            return None
        return _png_info(folder, "pred", clip_id)

    def source(self, clip_id: str) -> Path:
        """The file or folder the clip's prediction is read from (what its values depend on).

        >>> import tempfile, pathlib
        >>> PredictionStore(pathlib.Path(tempfile.mkdtemp())).source("a").name
        'a'
        """
        if self.layout == "single":
            return self.root
        if self.layout == "video":
            path = self._video_path(clip_id)
            if path is None:
                raise DevilError(f"{self.root}: no prediction video for clip {clip_id}")
            return path
        return self.root / clip_id

    def read(self, clip_id: str) -> np.ndarray:
        """The clip's prediction as uint8 RGB [T, H, W, 3]."""
        if self.layout == "single":
            return _read_prediction_pngs(self.root)
        if self.layout == "video":
            path = self._video_path(clip_id)
            if path is None:
                raise DevilError(f"{self.root}: no prediction video for clip {clip_id}")
            return read_video_file(path)
        return _read_prediction_pngs(self.root / clip_id)


def _read_prediction_pngs(directory: Path) -> np.ndarray:
    paths = list_frames(directory, "pred")
    if not paths:
        raise DevilError(f"{directory}: no frame_%04d_pred.png files")
    frames = [read_prediction_frame(p) for p in paths]
    if len({f.shape for f in frames}) > 1:
        raise DevilError(f"{directory}: frame sizes differ within the clip")
    return np.stack(frames)


def slice_folders_hint(pred_dir: str | Path, config: str | None = None) -> str:
    """When ``pred_dir`` holds slice folders (``preds/<method>/<slice>/``, as ``devil benchmark`` writes them)
    rather than clip folders, the line that says which folder to give instead; else ``""``.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "fg_size_low").mkdir()
    >>> print(slice_folders_hint(root, "fg_size_low").replace(str(root), "mine"))
    hint: mine holds one folder per slice (fg_size_low), not clip folders: give --predictions mine/fg_size_low
    """
    root = Path(pred_dir)
    if not root.is_dir():
        return ""
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name in SLICES)
    if not found:
        return ""
    target = root / config if config in found else root / "<slice>"
    return (f"hint: {root} holds one folder per slice ({', '.join(found)}), not clip folders: give --predictions "
            f"{target}")


def validate_clips(gt: Mapping[str, VideoShapeInfo], pred: Mapping[str, VideoShapeInfo | None],
                   where: str = "", hint: str = "") -> None:
    """Check every clip has a prediction with the same frame count and size; ONE DevilError lists every problem.

    >>> a = VideoShapeInfo("a", 3, (8, 8)); b = VideoShapeInfo("b", 3, (8, 8))
    >>> validate_clips({"a": a, "b": b}, {"a": VideoShapeInfo("a", 2, (8, 8)), "b": None})
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: 2 of 2 clips cannot be evaluated:
      a: 2 predicted frames, expected 3
      b: prediction missing
    """
    problems = []
    for clip_id, g in gt.items():
        p = pred.get(clip_id)
        issues = []
        if g.num_frames == 0:
            issues.append("ground truth has no frames")
        issues.extend(g.problems)
        if p is None:
            issues.append("prediction missing")
        else:
            if p.num_frames != g.num_frames:
                named = " (frame_%04d_pred.png)" if p.source and Path(p.source).is_dir() else ""
                issues.append(f"{p.num_frames} predicted frames{named}, expected {g.num_frames}")
            if p.size != g.size and p.size != (0, 0):
                issues.append(f"prediction is {p.size[0]}x{p.size[1]}, expected {g.size[0]}x{g.size[1]}")
            issues.extend(p.problems)
        if issues:
            problems.append(f"  {clip_id}: {'; '.join(issues)}")
    if problems:
        head = f"{where}: " if where else ""
        if hint and all(pred.get(c) is None for c in gt):
            problems.append(hint)
        raise DevilError(f"{head}{len(problems)} of {len(gt)} clips cannot be evaluated:\n" + "\n".join(problems))


def check_slice_manifest(pred_dir: str | Path, manifest: Mapping, config: str, fingerprints: Mapping[str, str]) -> None:
    """Refuse predictions whose ``.devil-inpaint.json`` records other hole masks than the slice being scored.

    ``manifest``: the folder's inpaint manifest (:func:`devil_dataset.inpaint.run.read_prediction_manifest`);
    ``fingerprints``: clip id -> hole fingerprint of the slice ``config``. The six foreground slices share clip ids
    with other masks, so only the masks tell a wrong slice: a :class:`DevilError` names both slices. Predictions
    made for another config with the same masks (the same inputs) pass.

    >>> m = {"run": {"config": "fg_size_high"}, "clips": {"a": "1111"}}
    >>> check_slice_manifest("preds", m, "fg_size_high", {"a": "1111"})
    >>> check_slice_manifest("preds", m, "fg_size_low", {"a": "2222"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: preds: these predictions were made for slice fg_size_high, not for ...
    """
    recorded = manifest.get("clips") or {}
    wrong = [c for c, fp in fingerprints.items() if c in recorded and recorded[c] != fp]
    if not wrong:
        return
    made_for = (manifest.get("run") or {}).get("config")
    listed = ", ".join(wrong[:MAX_PROBLEMS_PER_CLIP]) + (f" and {len(wrong) - MAX_PROBLEMS_PER_CLIP} more"
                                                        if len(wrong) > MAX_PROBLEMS_PER_CLIP else "")
    why = (f"its .devil-inpaint.json records other hole masks for {len(wrong)} of {len(fingerprints)} clips "
           f"({listed})")
    if made_for and made_for != config:
        raise DevilError(f"{pred_dir}: these predictions were made for slice {made_for}, not for slice {config} (the "
                         f"slice being scored): {why}; score them with --config {made_for}, or inpaint {config} "
                         "into another folder")
    raise DevilError(f"{pred_dir}: these predictions were made for other masks than slice {config}'s (another "
                     f"build of the dataset?): {why}; inpaint {config} again into another folder")


# A prediction made for another slice's masks: composited (it keeps at least KEPT_FRACTION of the known pixels
# exactly) yet it differs from the ground truth on more than OUTSIDE_FRACTION of the known pixels, i.e. outside
# this slice's hole. A method that changes every pixel a little (lossy video, whole-frame output) is not flagged.
KEPT_FRACTION = 0.5
OUTSIDE_FRACTION = 0.001


def differs_outside_hole(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> bool:
    """True when ``pred`` keeps the known pixels of ``gt`` but changed some outside ``hole``: inpainted for other
    masks (see :data:`KEPT_FRACTION`).

    >>> gt = np.zeros((1, 10, 10, 3), np.uint8); hole = np.zeros((1, 10, 10), bool); hole[:, :2] = True
    >>> pred = gt.copy(); pred[:, :2] = 9
    >>> differs_outside_hole(pred, gt, hole), differs_outside_hole(pred, gt, np.roll(hole, 5, axis=1))
    (False, True)
    """
    known = ~np.asarray(hole, bool)
    n_known = int(np.count_nonzero(known))
    if n_known == 0 or pred.shape != gt.shape:
        return False
    changed = np.any(pred != gt, axis=-1) & known
    n_changed = int(np.count_nonzero(changed))
    return n_changed <= (1 - KEPT_FRACTION) * n_known and n_changed > OUTSIDE_FRACTION * n_known


def _holds_frames(directory: Path, kind: str) -> bool:
    try:
        return bool(list_frames(directory, kind))
    except DevilError:  # frames with gaps in the numbering: a clip folder, reported by validate()
        return True


class DirectorySource:
    """Directory mode: ground truth and masks in the release's layout, predictions in any layout above.

    ``gt_dir`` holds one folder per video with ``frame_%04d_gt.png`` and ``frame_%04d_mask.png`` (mask 1 = known),
    or those files directly (a single video named after the folder). Frames are evaluated at their native size.
    """

    def __init__(self, gt_dir: str | Path, pred_dir: str | Path) -> None:
        self.gt_dir = Path(gt_dir)
        if not self.gt_dir.is_dir():
            raise DevilError(f"{self.gt_dir}: ground-truth folder does not exist")
        single: str | None  # the clip id of a single-video layout
        if list_frames(self.gt_dir, "gt"):
            self.clip_dirs = {self.gt_dir.resolve().name: self.gt_dir}
            single = self.gt_dir.resolve().name
        else:
            self.clip_dirs = {p.name: p for p in sorted(self.gt_dir.iterdir()) if p.is_dir() and _holds_frames(p, "gt")}
            single = next(iter(self.clip_dirs)) if len(self.clip_dirs) == 1 else None
            if not self.clip_dirs:
                raise DevilError(f"{self.gt_dir}: no frame_%04d_gt.png files and no video folders holding them")
        self.predictions = PredictionStore(pred_dir, single_clip_id=single)
        if self.predictions.layout == "single" and len(self.clip_dirs) > 1:
            raise DevilError(
                f"{pred_dir}: holds the frames of one video, but {self.gt_dir} has {len(self.clip_dirs)} videos"
            )

    @property
    def clip_ids(self) -> list[str]:
        return list(self.clip_dirs)

    def validate(self) -> None:
        """Check masks, ground truth and predictions of every clip (one error listing every problem)."""
        gt: dict[str, VideoShapeInfo] = {}
        pred: dict[str, VideoShapeInfo | None] = {}
        problems: dict[str, list[str]] = {}
        for c in self.clip_ids:
            folder = self.clip_dirs[c]
            issues = problems.setdefault(c, [])
            try:
                gt[c] = info = _png_info(folder, "gt", c)
                n_masks = len(list_frames(folder, "mask"))
                if n_masks != info.num_frames:
                    issues.append(f"{n_masks} mask frames, expected {info.num_frames}")
                elif n_masks and _png_size(folder / "frame_0000_mask.png") != info.size:
                    issues.append(f"mask size differs from the ground truth's {info.size[0]}x{info.size[1]}")
            except DevilError as exc:
                issues.append(str(exc))
            try:
                pred[c] = self.predictions.info(c)
            except DevilError as exc:
                issues.append(str(exc))
                g = gt.get(c)  # reported above; do not report it twice
                pred[c] = VideoShapeInfo(c, g.num_frames, g.size) if g is not None else None
            if c in gt:
                try:
                    validate_clips({c: gt[c]}, pred)
                except DevilError as exc:
                    issues.append(str(exc).split("\n", 1)[1].strip().split(": ", 1)[1])
        bad = {c: v for c, v in problems.items() if v}
        if bad:
            lines = [f"  {c}: {'; '.join(v)}" for c, v in bad.items()]
            raise DevilError(
                f"{self.gt_dir} vs {self.predictions.root}: {len(bad)} of {len(self.clip_ids)} clips cannot be "
                "evaluated:\n" + "\n".join(lines)
            )

    def __len__(self) -> int:
        return len(self.clip_dirs)

    def __iter__(self) -> Iterator[VideoSample]:
        for c in self.clip_ids:
            folder = self.clip_dirs[c]
            gt = read_frame_pngs(folder, "gt")
            hole = read_mask_pngs(folder)
            pred = self.predictions.read(c)
            if gt.shape != pred.shape or gt.shape[:3] != hole.shape:
                raise DevilError(f"{folder}: frame sizes differ within the clip (gt {gt.shape}, pred {pred.shape})")
            yield VideoSample(c, gt, pred, hole)

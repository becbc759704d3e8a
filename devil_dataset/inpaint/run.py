"""Run an inpainter over clips and write the release's prediction layout, resumably.

Layout: ``<PRED_DIR>/<clip id>/frame_%04d_pred.png`` (RGB, one per input frame; the release's layout). Each clip folder
appears atomically once all its frames are written, so a clip folder with the right number of frames is
complete and is skipped when the run is repeated (resume after an interruption).

``<PRED_DIR>/.devil-inpaint.json`` records what the folder holds: the run's description (method, slice, ...) and
a fingerprint of each clip's hole mask. The same clip id appears in several slices with different masks, so a
resumed run refuses a folder made by another method or for another slice, and redoes a clip whose mask changed.
For an external method it also records, per clip, the method's identity (:meth:`~devil_dataset.inpaint.method_spec.
MethodSpec.identity`: a hash of its code), so a clip made by an older version of the method is redone. The manifest
is rewritten atomically after each clip; a clip folder that is complete but missing from it (a run killed between
the two) is recorded again when the run is repeated.

    >>> import numpy as np, tempfile, pathlib
    >>> from devil_dataset.inpaint import get_inpainter
    >>> hole = np.zeros((2, 16, 16), bool); hole[:, 4:8, 4:8] = True
    >>> rows = [{"clip_id": "a", "frames": np.zeros((2, 16, 16, 3), np.uint8), "hole": hole}]
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> run_inpainter(get_inpainter("telea"), rows, out, progress=False).written
    ['a']
    >>> sorted(p.name for p in (out / "a").iterdir())
    ['frame_0000_pred.png', 'frame_0001_pred.png']
    >>> run_inpainter(get_inpainter("telea"), rows, out, progress=False).skipped
    ['a']
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sized

import numpy as np

from ..core.atomic import atomic_directory, atomic_write_text, remove_stale_temporaries
from ..core.errors import DevilError
from ..core.folder_lock import acquire_folder_lock
from ..core.hole_check import CHANGED_LEVELS, OUTSIDE_CHANGED_FRACTION, check_hole, hole_problem, hole_warning
from ..core.progress import progress_bar
from ..core.release_format import PRED_PATTERN, list_frames, read_frame_pngs, read_mask_pngs, write_frame_pngs

# Hidden file in PRED_DIR recording the run and per-clip input fingerprints (not part of the release layout).
MANIFEST_NAME = ".devil-inpaint.json"
MANIFEST_FORMAT = "devil-inpaint-manifest"


def hole_fingerprint(hole: np.ndarray) -> str:
    """A short hash of a bool hole mask [T, H, W] (shape included), identifying a clip's inputs for resuming.

    >>> import numpy as np
    >>> hole_fingerprint(np.zeros((2, 3, 4), bool)) == hole_fingerprint(np.zeros((2, 3, 5), bool))
    False
    """
    digest = hashlib.sha256(repr(tuple(hole.shape)).encode())
    digest.update(np.packbits(np.ascontiguousarray(hole, dtype=bool)).tobytes())
    return digest.hexdigest()[:16]


def _read_manifest(out_dir: Path) -> dict:
    path = out_dir / MANIFEST_NAME
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DevilError(f"{path}: unreadable ({exc}); delete it to start over") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise DevilError(f"{path}: not a devil inpaint manifest; delete it to start over")
    return manifest


def recorded_method(predictions: str | os.PathLike) -> str | None:
    """The method a predictions folder records in its manifest (``run.method``), or None (no manifest, or a file).

    >>> import tempfile
    >>> folder = PredictionFolder(Path(tempfile.mkdtemp()) / "fg_size_high", {"method": "telea"})
    >>> folder.record("a", "0123")  # the manifest is written with the first clip
    >>> recorded_method(folder.path), recorded_method(folder.path.parent)
    ('telea', None)
    """
    path = Path(predictions)
    if not path.is_dir():
        return None
    method = _read_manifest(path).get("run", {}).get("method")
    return method if isinstance(method, str) and method else None


def read_prediction_manifest(out_dir: str | Path) -> dict:
    """The ``.devil-inpaint.json`` of a predictions folder (``run`` and ``clips``: clip id -> hole fingerprint), or
    ``{}`` when it has none; an unreadable one is a :class:`DevilError`.

    >>> import tempfile
    >>> read_prediction_manifest(tempfile.mkdtemp())
    {}
    """
    return _read_manifest(Path(out_dir))


def dataset_run_info(method: str, dataset: str, config: str, split: str = "test",
                     size_divisor: int | None = None) -> dict:
    """The manifest's ``run`` record of a baseline run over a dataset slice, as ``devil inpaint --dataset``
    writes it.

    >>> sorted(dataset_run_info("telea", "dataset", "fg_size_low"))
    ['config', 'dataset', 'method', 'size_divisor', 'split']
    """
    return {"method": method, "dataset": dataset, "config": config, "split": split, "size_divisor": size_divisor}


class PredictionFolder:
    """A predictions folder (``<clip id>/frame_%04d_pred.png``) opened for one run, and its manifest.

    Opening creates the folder, removes temporaries an interrupted run left, and refuses (:class:`DevilError`) a
    folder whose manifest records another run: predictions are never mixed or silently deleted. ``clips`` maps
    clip id -> hole fingerprint of the clips written; :meth:`record` adds one and rewrites the manifest.

        >>> import tempfile
        >>> folder = PredictionFolder(Path(tempfile.mkdtemp()) / "telea", {"method": "telea"})
        >>> folder.record("a", "0123"); folder.clips
        {'a': '0123'}
        >>> PredictionFolder(folder.path, {"method": "other"})
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.DevilError: ...: holds predictions of another run ({"method": "telea"}), ...
    """

    def __init__(self, path: str | Path, run_info: dict | None = None, identity: str | None = None):
        self.path = Path(path)
        self.identity = identity  # the method's identity (a hash of its code), or None (a baseline)
        # one writer per folder (held until close() or the object is collected): see core/folder_lock.py
        self._lock = acquire_folder_lock(self.path)
        self._release = weakref.finalize(self, self._lock.release)
        try:
            self._open(run_info)
        except BaseException:
            self.close(failed=True)
            raise

    def _open(self, run_info: dict | None) -> None:
        remove_stale_temporaries(self.path)
        manifest = _read_manifest(self.path)
        self.run_info = json.loads(json.dumps(run_info or {}))  # normalised as it will read back
        if manifest and manifest.get("run") != self.run_info:
            raise DevilError(
                f"{self.path}: holds predictions of another run ({json.dumps(manifest.get('run'))}), not of "
                f"{json.dumps(self.run_info)}; use another --out folder, or delete {self.path / MANIFEST_NAME} "
                "to reuse it"
            )
        self.clips: dict[str, str] = dict(manifest.get("clips", {}))
        self.identities: dict[str, str] = dict(manifest.get("identities", {}))

    def close(self, *, failed: bool = False) -> None:
        """Release the folder's lock; ``failed=True`` also removes the folder if this run created it and wrote
        nothing into it."""
        if self._release.detach() is not None:
            self._lock.release(failed=failed)

    def holds(self, clip_id: str, fingerprint: str, num_frames: int) -> bool:
        """True when the clip's folder is complete and was written for the hole ``fingerprint`` by this version of
        the method (:attr:`identity`)."""
        return (self.clips.get(clip_id) == fingerprint and not self.stale(clip_id)
                and clip_complete(self.path / clip_id, num_frames))

    def stale(self, clip_id: str) -> bool:
        """True when ``clip_id`` is recorded as made by another version of the method (another identity)."""
        return clip_id in self.clips and self.identity is not None and self.identities.get(clip_id) != self.identity

    def forget(self, clip_id: str) -> None:
        """Drop ``clip_id``'s record (it is about to be made again); writes the manifest when it had one."""
        if self.clips.pop(clip_id, None) is not None:
            self.identities.pop(clip_id, None)
            self._write()

    def record(self, clip_id: str, fingerprint: str) -> None:
        """Record that ``clip_id``'s predictions (for the hole ``fingerprint``) are in place; writes the manifest."""
        self.clips[clip_id] = fingerprint
        if self.identity is not None:
            self.identities[clip_id] = self.identity
        self._write()

    def _write(self) -> None:
        manifest: dict = {"format": MANIFEST_FORMAT, "run": self.run_info, "clips": self.clips}
        if self.identities:
            manifest["identities"] = self.identities
        atomic_write_text(self.path / MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def write_prediction(clip_dir: str | Path, pred: np.ndarray) -> None:
    """Write a clip's predicted frames as ``clip_dir/frame_%04d_pred.png``; the folder appears atomically."""
    with atomic_directory(Path(clip_dir), overwrite=True) as tmp:
        write_frame_pngs(pred, tmp, "pred")


def link_prediction(source_dir: str | Path, clip_dir: str | Path) -> None:
    """Make ``clip_dir`` hold ``source_dir``'s prediction files (hard links; copies where linking fails),
    atomically: the same prediction in two folders without writing it twice."""
    with atomic_directory(Path(clip_dir), overwrite=True) as tmp:
        for f in sorted(Path(source_dir).iterdir()):
            try:
                os.link(f, tmp / f.name)
            except OSError:
                shutil.copy2(f, tmp / f.name)


@dataclass
class RunSummary:
    """Clip ids written in this run and those skipped because their predictions were already complete;
    ``outside_hole``: clip id -> fraction of its known pixels the method changed (:func:`known_pixels_changed`),
    and ``hole_problems``: clip id -> what looked wrong, for the clips the package's inverted-mask check
    (:func:`devil_dataset.core.hole_check.hole_problem`) flags."""

    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # redone: made by another version of the method (identity)
    outside_hole: dict[str, float] = field(default_factory=dict)
    hole_problems: dict[str, str] = field(default_factory=dict)  # clip id -> hole_problem (core/hole_check.py)


# A method that reads the masks inverted (release PNGs and --command inputs: white = known; the dataset's hole:
# white = hole) inpaints the known region: most known pixels change a lot. Known pixels changed by more than
# WROTE_OUTSIDE_LEVELS (8-bit levels, above the noise of a lossy round trip) on more than WROTE_OUTSIDE_FRACTION of
# them get a warning; methods that keep the known pixels (every baseline) or re-render them closely do not.
# The thresholds are the package's one inverted-mask check's (core/hole_check.py).
WROTE_OUTSIDE_LEVELS = CHANGED_LEVELS
WROTE_OUTSIDE_FRACTION = OUTSIDE_CHANGED_FRACTION
#: Where the inverted-mask warning of ``devil inpaint`` says the problem was seen (core/hole_check.py's one wording).
OUTSIDE_HOLE_WHERE = "your method wrote outside the hole"


def known_pixels_changed(pred: np.ndarray, frames: np.ndarray, hole: np.ndarray) -> float:
    """The fraction of known pixels (outside ``hole``) where ``pred`` differs from the input ``frames`` by more than
    :data:`WROTE_OUTSIDE_LEVELS` on some channel (0 when there is no known pixel).

    >>> frames = np.zeros((1, 4, 4, 3), np.uint8); hole = np.zeros((1, 4, 4), bool); hole[:, :2] = True
    >>> pred = frames.copy(); pred[:, 2:] = 200  # the known half changed: masks read inverted
    >>> known_pixels_changed(pred, frames, hole), known_pixels_changed(frames, frames, hole)
    (1.0, 0.0)
    """
    changed = check_hole(hole, pred, frames).known_changed
    return 0.0 if changed != changed else changed


def _warn_outside_hole(summary: RunSummary) -> None:
    line = hole_warning(summary.hole_problems, len(summary.written), OUTSIDE_HOLE_WHERE)
    if line:
        print(f"devil inpaint: {line}", file=sys.stderr)


def _check_clip_id(clip_id: object) -> str:
    text = str(clip_id)
    if not text or text in (".", "..") or "/" in text or "\\" in text or text.startswith("."):
        raise DevilError(f"clip id {text!r}: not usable as a folder name")
    return text


def clip_complete(clip_dir: str | Path, num_frames: int) -> bool:
    """True when ``clip_dir`` holds exactly ``frame_0000_pred.png`` .. ``frame_{num_frames-1}_pred.png``."""
    clip_dir = Path(clip_dir)
    if not clip_dir.is_dir():
        return False
    try:
        return len(list_frames(clip_dir, "pred")) == num_frames
    except DevilError:  # gaps in the numbering: incomplete
        return False


def check_prediction(pred: object, frames: np.ndarray, clip_id: str) -> np.ndarray:
    """Return ``pred`` as a uint8 array, or raise :class:`DevilError` naming the clip if its shape or type is wrong."""
    pred = np.asarray(pred)
    if pred.shape != frames.shape:
        raise DevilError(f"clip {clip_id}: the inpainter returned shape {pred.shape}, "
                         f"expected {frames.shape} [T, H, W, 3]")
    if pred.dtype != np.uint8:
        raise DevilError(f"clip {clip_id}: the inpainter returned {pred.dtype} frames, expected uint8 (0..255)")
    return pred


def inpaint_clip(inpainter: Callable, frames: np.ndarray, hole: np.ndarray, clip_id: str) -> np.ndarray:
    """``inpainter``'s checked prediction of one clip (its clip id passed when it ``wants_clip_id``); an error
    names the clip."""
    return check_prediction(_inpaint(inpainter, frames, hole, clip_id), frames, clip_id)


def _inpaint(inpainter: Callable, frames: np.ndarray, hole: np.ndarray, clip_id: str) -> np.ndarray:
    try:
        if getattr(inpainter, "wants_clip_id", False):
            return inpainter(frames, hole, clip_id=clip_id)
        return inpainter(frames, hole)
    except DevilError as exc:
        text = str(exc)
        raise DevilError(text if text.startswith(f"clip {clip_id}:") else f"clip {clip_id}: {text}") from None
    except Exception as exc:  # the method's own code raised: a user error naming the clip, not a traceback
        raise DevilError(f"clip {clip_id}: the method raised {method_error(exc)}") from None


def method_error(exc: BaseException) -> str:
    """``ValueError: boom (at mine.py:12 in inpaint)``: an exception and the innermost line of code that raised
    it, for a message that names the method's failure without a traceback.

    >>> try:
    ...     int("x")
    ... except ValueError as exc:
    ...     method_error(exc).split(" (at ")[0]
    "ValueError: invalid literal for int() with base 10: 'x'"
    """
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def run_inpainter(
    inpainter: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rows: Iterable[dict],
    out_dir: str | Path,
    *,
    limit: int | None = None,
    progress: bool = True,
    description: str = "inpaint",
    run_info: dict | None = None,
    identity: str | None = None,
) -> RunSummary:
    """Inpaint each row ``{clip_id, frames uint8 [T, H, W, 3], hole bool [T, H, W], ...}`` into ``out_dir``.

    Clips whose folder is already complete (for the same hole mask) are skipped; ``limit`` takes the first N rows.
    ``run_info`` (JSON-able, e.g. ``{"method": "telea", "config": "fg_size_high"}``) is stored in the manifest;
    a folder whose manifest holds a different ``run_info`` is refused with a :class:`DevilError`. ``identity``
    (:meth:`~devil_dataset.inpaint.method_spec.MethodSpec.identity`): clips recorded with another one are redone.
    A complete clip folder the manifest lacks (a run killed between writing it and recording it) is recorded.
    """

    folder = PredictionFolder(out_dir, run_info, identity)
    summary = RunSummary()
    rows = itertools.islice(rows, limit) if limit is not None else rows
    total = limit if limit is not None else (len(rows) if isinstance(rows, Sized) else None)
    bar = progress_bar(rows, total=total, desc=description, unit="clip", enabled=progress)
    try:
        for row in bar:
            clip_id = _check_clip_id(row["clip_id"])
            frames, hole = np.asarray(row["frames"]), np.asarray(row["hole"])
            clip_dir = folder.path / clip_id
            fingerprint = hole_fingerprint(hole)
            if (clip_complete(clip_dir, len(frames)) and folder.clips.get(clip_id, fingerprint) == fingerprint
                    and not folder.stale(clip_id)):
                if clip_id not in folder.clips:  # finished by a run killed before it recorded the clip
                    folder.record(clip_id, fingerprint)
                summary.skipped.append(clip_id)
                continue
            if folder.stale(clip_id):
                summary.stale.append(clip_id)
            pred = inpaint_clip(inpainter, frames, hole, clip_id)
            check = check_hole(hole, pred, frames)
            problem = hole_problem(check)
            if problem:  # masks read inverted, or the method wrote outside the hole
                summary.hole_problems[clip_id] = problem
                summary.outside_hole[clip_id] = 0.0 if check.known_changed != check.known_changed \
                    else check.known_changed
            write_prediction(clip_dir, pred)
            folder.record(clip_id, fingerprint)
            summary.written.append(clip_id)
        bar.close()
        _warn_outside_hole(summary)
    except BaseException:
        getattr(bar, "interrupt", bar.close)()  # the log says "interrupted", not "done"
        folder.close(failed=True)  # a folder this run created and left empty is removed
        raise
    folder.close()
    return summary


def iter_release_inputs(directory: str | Path) -> Iterator[dict]:
    """Rows from folders in the release's method-input layout (``frame_%04d_gt.png`` + ``frame_%04d_mask.png``).

    ``directory`` is one such clip folder (clip id = its name) or a folder of them (sorted by name).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DevilError(f"{directory}: not a directory")
    if any(directory.glob("frame_*_gt.png")):
        clip_dirs = [directory]
    else:
        clip_dirs = sorted(p for p in directory.iterdir() if p.is_dir() and any(p.glob("frame_*_gt.png")))
        if not clip_dirs:
            raise DevilError(f"{directory}: no frame_%04d_gt.png files here or in its sub-folders")
    for clip_dir in clip_dirs:
        frames, hole = read_frame_pngs(clip_dir, "gt"), read_mask_pngs(clip_dir)
        if frames.shape[:3] != hole.shape:
            raise DevilError(f"{clip_dir}: {len(frames)} gt frames of {frames.shape[2]}x{frames.shape[1]} but "
                             f"{len(hole)} masks of {hole.shape[2]}x{hole.shape[1]}")
        yield {"clip_id": clip_dir.name, "frames": frames, "hole": hole}


__all__ = ["MANIFEST_NAME", "PRED_PATTERN", "PredictionFolder", "RunSummary", "check_prediction", "clip_complete",
           "dataset_run_info", "hole_fingerprint", "inpaint_clip", "iter_release_inputs", "known_pixels_changed",
           "link_prediction", "method_error", "read_prediction_manifest",
           "recorded_method", "run_inpainter", "write_prediction"]

"""Every source of a removal run checked before anything is scored (``docs/removal.md``): each video of the inputs,
results and masks folders is opened and decoded once (frames counted, not kept), and every bad one is named in ONE
:class:`~devil_dataset.core.errors.DevilError` — as the DEVIL protocol validates its predictions
(:func:`devil_dataset.eval.scoring.inputs.validate_clips`) — instead of the first surfacing after other videos were
scored:

- a path that cannot be read at all (a symlink loop, a dangling link, no permission);
- a ``.mp4`` that OpenCV cannot open or decodes no frame of;
- a ``.mp4`` that decodes fewer frames than its container declares (cut short or damaged: libav's "Invalid NAL
  unit size"); PROVE's code scores the frames that decode, which silently scores a part of the video;
- a frame folder without frames, with an unreadable frame or with frames of different sizes.

    >>> import tempfile, pathlib
    >>> from devil_dataset.eval.protocols.prove.layout import list_prove_videos
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for d in ("IN", "OUT", "MASKS"):
    ...     (root / d).mkdir()
    ...     _ = (root / d / "cat.mp4").write_bytes(b"not a video")
    >>> check_prove_sources(list_prove_videos(root / "IN", root / "OUT", root / "MASKS"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: 3 bad input file(s), nothing scored:
      .../IN/cat.mp4: unreadable video (OpenCV cannot open it)...
    ...
"""
from __future__ import annotations

from pathlib import Path

import cv2

from ....core.errors import DevilError
from ....core.thread_map import default_threads, thread_map
from ....core.video_io import libav_messages, quiet_libav
from ..propainter.layout import FRAME_SUFFIXES, image_files
from .layout import FOLDERS, MAX_FRAMES, ProveLayout

#: Bad inputs listed in the error (then a count).
MAX_LISTED = 20


def _with_libav_reasons(path: Path, problem: str) -> str:
    """A video file's problem with libav's own reasons for it (PyAV's log level is process-wide: one file at a time);
    a frame folder's, or a path that cannot be read, as it is."""
    if not path.is_file():
        return problem
    reasons = [m.split(": libav: ", 1)[-1] for m in libav_messages(path, limit=2)]
    return problem + (f"; libav: {'; '.join(reasons)}" if reasons else "")


def _decoding_problem(path: Path, limit: int) -> str | None:
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            return "unreadable video (OpenCV cannot open it)"
        declared = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        decoded = 0
        while decoded < limit and cap.grab():
            decoded += 1
    finally:
        cap.release()
    if decoded == 0:
        return "unreadable video (OpenCV decodes no frame)"
    if declared > 0 and decoded < min(declared, limit):
        return (f"damaged or cut-short video: its container declares {declared} frames, {decoded} decode "
                "(re-encode or replace it; scoring the frames that decode would score part of the video)")
    return None


def _folder_problem(path: Path, limit: int) -> str | None:
    files = image_files(path, FRAME_SUFFIXES)[:limit]
    if not files:
        return f"holds no {'/'.join(FRAME_SUFFIXES)} frames"
    sizes = set()
    for f in files:
        image = cv2.imread(str(f), cv2.IMREAD_UNCHANGED)
        if image is None:
            return f"{f.name}: unreadable image (OpenCV cannot decode it)"
        sizes.add(image.shape[:2])
    return "frames of different sizes" if len(sizes) > 1 else None


def _decoded_problem(path: Path, limit: int) -> str | None:
    """What decoding finds wrong with one source (libav's reasons not yet added), or ``None``."""
    try:
        path.stat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return _folder_problem(path, limit) if path.is_dir() else _decoding_problem(path, limit)


def source_problem(path: str | Path, limit: int = MAX_FRAMES) -> str | None:
    """What is wrong with one source (a ``.mp4`` or a folder of frames), in words, or ``None``."""
    path = Path(path)
    problem = _decoded_problem(path, limit)
    return None if problem is None else _with_libav_reasons(path, problem)


def check_prove_sources(layout: ProveLayout, limit: int = MAX_FRAMES) -> None:
    """Decode every source of ``layout``'s videos once; raise ONE DevilError naming every bad file (see the module
    docstring), or return when all are readable. libav's own lines stay off the terminal: each bad file's message
    carries libav's reasons, attributed (:func:`~devil_dataset.core.video_io.libav_messages`). The files are
    decoded on the CPUs this process may use (OpenCV decodes outside the GIL); the error lists them in layout order."""
    paths = [Path(getattr(video, what)) for video in layout.videos for what in FOLDERS]
    with quiet_libav():
        problems = thread_map(lambda p: _decoded_problem(p, limit), paths, threads=default_threads())
        bad = [f"{path}: {_with_libav_reasons(path, problem)}" for path, problem in zip(paths, problems)
               if problem is not None]
    if bad:
        listed = bad[:MAX_LISTED] + ([f"... and {len(bad) - MAX_LISTED} more"] if len(bad) > MAX_LISTED else [])
        raise DevilError(f"{len(bad)} bad input file(s), nothing scored:\n  " + "\n  ".join(listed))


__all__ = ["MAX_LISTED", "check_prove_sources", "source_problem"]

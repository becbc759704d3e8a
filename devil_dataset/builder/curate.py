"""Curation (SPEC section 1): source videos -> shot-cut-free clips of 45-90 native frames + a manifest.

For each source: hash it, probe it, apply the resolution/orientation filter, decode it to detect shot cuts
(:mod:`.shot_cuts`), then (from memory when the frames fit :data:`DECODE_CACHE_BYTES`, else by decoding again) cut
consecutive non-overlapping 90-frame chunks from the first frame of each
shot (a final chunk shorter than 45 frames is dropped; a chunk never crosses a cut), optionally score each chunk with
a foreground detector, and store each clip as one H.264 mp4 (:func:`.video_io.write_video`).

Layout of ``out_dir``::

    manifest.jsonl          one JSON object per line: a "settings" line, then per source (in the order given)
                            its "clip" and "dropped" records, or one "skipped" record with the reason
    clips/<clip_id>.mp4     the clips (native size and frame rate, every frame kept)
    .state/<sha256>.json    per-source progress, so interrupted or repeated runs resume

Clip ids are ``<source stem>-<clip index, 5 digits>``; the stem keeps ``[A-Za-z0-9._-]`` (other runs of characters
become ``_``). A second, different source with the same stem gets ``<stem>_<first 8 hex of its sha256>``; an id,
once given to a source in ``out_dir``, is kept on later runs.

    >>> plan_chunks(0, 200)
    [(0, 90), (90, 180)]
    >>> plan_chunks(0, 135)
    [(0, 90), (90, 135)]
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

import numpy as np

from ..core import video_io
from ..core.atomic import atomic_write_text, file_sha256, remove_stale_temporaries
from ..core.errors import DevilError
from ..core.progress import progress_bar
from .shot_cuts import CUT_THRESHOLD, MIN_SHOT_FRAMES, CutDetector

# SPEC section 1: consecutive non-overlapping chunks of 90 frames; a final chunk shorter than 45 frames is dropped.
CLIP_FRAMES = 90
MIN_CLIP_FRAMES = 45
# Decoders FFmpeg uses for single images: a source decoded by one of them is an image renamed as a video.
STILL_IMAGE_CODECS = frozenset({"png", "apng", "bmp", "tiff", "webp", "gif", "mjpeg", "jpeg2000", "ppm", "pgm"})
# SPEC section 1 / issue 3: default filter keeps landscape sources of at least 832x480 (the evaluation size).
DEFAULT_MIN_SIZE: tuple[int, int] = (832, 480)
# Sources whose decoded frames fit in this many bytes are decoded once (kept in memory between the cut pass and the
# cutting pass); larger ones are decoded twice, streaming, so memory stays bounded (about one 90-frame chunk).
DECODE_CACHE_BYTES = 768 * 2**20
MANIFEST_NAME = "manifest.jsonl"
CLIPS_DIRNAME = "clips"
STATE_DIRNAME = ".state"
CLIP_SUFFIX = ".mp4"
MANIFEST_FORMAT = "devil-curation/1"
VIDEO_SUFFIXES: tuple[str, ...] = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts")

ForegroundDetector = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class ClipRecord:
    """One curated clip (a ``"clip"`` line of the manifest).

    ``path`` is relative to the curation directory; ``fps`` is the source's average frame rate (``fps_fraction``
    exactly, e.g. ``"30000/1001"``); ``cut_score`` the largest PySceneDetect content score between consecutive
    frames inside the clip; ``sha256`` the clip file's checksum; ``foreground_fraction`` is None without a detector.
    """

    clip_id: str
    path: str
    source: str
    source_sha256: str
    shot_index: int
    first_frame: int
    frame_count: int
    fps: float
    fps_fraction: str
    width: int
    height: int
    cut_score: float
    sha256: str
    foreground_fraction: float | None = None

    def to_json(self) -> dict:
        return {"kind": "clip", **asdict(self)}

    @classmethod
    def from_json(cls, obj: dict) -> "ClipRecord":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in obj.items() if k in names})


@dataclass(frozen=True)
class DroppedClip:
    """A chunk that was cut but not stored (its foreground fraction exceeded ``max_foreground``)."""

    clip_id: str
    source: str
    source_sha256: str
    first_frame: int
    frame_count: int
    foreground_fraction: float
    reason: str

    def to_json(self) -> dict:
        return {"kind": "dropped", **asdict(self)}


_Record = TypeVar("_Record", ClipRecord, DroppedClip)  # a kept or a dropped clip: with_source returns the same kind


@dataclass(frozen=True)
class SkippedSource:
    """A source that produced no clips, with the reason (unreadable, corrupt, truncated, too small, portrait...)."""

    source: str
    source_sha256: str | None
    reason: str

    def to_json(self) -> dict:
        return {"kind": "skipped", **asdict(self)}


@dataclass
class CurationReport:
    """What :func:`curate` did: every clip of the run, skipped sources and dropped chunks, and resume counts."""

    out_dir: Path
    clips: list[ClipRecord] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)
    dropped: list[DroppedClip] = field(default_factory=list)
    written: int = 0
    reused: int = 0
    sources: list[str] = field(default_factory=list)  # every source of the run, in order

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / MANIFEST_NAME

    def summary(self) -> str:
        """A short human-readable summary (the CLI prints it)."""
        lines = [
            f"{len(self.clips)} clips in {self.out_dir} ({self.written} written, {self.reused} reused)"
            + (f", {len(self.dropped)} dropped by the foreground filter" if self.dropped else "")
        ]
        if self.sources:
            lines.append("clips per source:")
            lines += self.source_lines()
        if self.skipped:
            lines.append(f"{len(self.skipped)} source(s) skipped:")
            lines += [f"  {s.source}: {s.reason}" for s in self.skipped]
        return "\n".join(lines)

    def source_lines(self) -> list[str]:
        """One line per source: its clip count (and dropped chunks), or ``skipped: <reason>``."""
        clips: dict[str, int] = {}
        for c in self.clips:
            clips[c.source] = clips.get(c.source, 0) + 1
        dropped: dict[str, int] = {}
        for d in self.dropped:
            dropped[d.source] = dropped.get(d.source, 0) + 1
        reasons = {s.source: s.reason for s in self.skipped}
        lines = []
        for src in self.sources:
            if src in reasons:
                lines.append(f"  {src}: skipped: {reasons[src]}")
            else:
                n, k = clips.get(src, 0), dropped.get(src, 0)
                kept = f"  {src}: {n} clip{'s' if n != 1 else ''}"
                lines.append(kept + (f", {k} dropped by the foreground filter" if k else ""))
        return lines


def curation_backend(backend: str) -> str:
    """The decoder curation uses for ``backend``: ``auto`` is PyAV here, whether or not decord is installed.

    Curation streams every source twice at the pace of the shot-cut detector and the encoder. decord 0.6 keeps
    memory it decoded ahead whenever its consumer is slower than it (peak RSS grows with the source length even
    with a fresh reader per window; ``benchmarks/curation_memory.py``), while PyAV's streaming stays flat, so
    ``auto`` picks PyAV and an explicit ``decord`` is honoured (issue 16 item 10).

    >>> curation_backend("auto"), curation_backend("decord")
    ('pyav', 'decord')
    """
    if backend == "auto":
        return "pyav"
    return video_io._resolve_backend(backend)


def plan_chunks(
    start: int, end: int, *, clip_frames: int = CLIP_FRAMES, min_frames: int = MIN_CLIP_FRAMES
) -> list[tuple[int, int]]:
    """Split the shot ``[start, end)`` into consecutive ``clip_frames`` chunks; drop a tail shorter than ``min_frames``.

    >>> plan_chunks(10, 140)   # 130 frames: 90 + a 40-frame tail that is dropped
    [(10, 100)]
    >>> plan_chunks(0, 44)
    []
    """
    chunks = []
    for s in range(start, end, clip_frames):
        e = min(s + clip_frames, end)
        if e - s >= min_frames:
            chunks.append((s, e))
    return chunks


def plan_clips(shots: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Chunks of every shot as ``(shot_index, start, end)``, in frame order.

    >>> plan_clips([(0, 60), (60, 260)])
    [(0, 0, 60), (1, 60, 150), (1, 150, 240)]
    """
    return [(i, s, e) for i, (a, b) in enumerate(shots) for s, e in plan_chunks(a, b)]


def safe_stem(path: str | os.PathLike) -> str:
    """The file stem reduced to ``[A-Za-z0-9._-]`` (other runs of characters become ``_``), never empty.

    >>> safe_stem("/videos/Mountain lake (4K).mp4")
    'Mountain_lake_4K'
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(path).stem).strip("._-")
    return stem or "video"


def clip_id(prefix: str, index: int) -> str:
    """``<prefix>-<index, 5 digits>`` as the release named clips.

    >>> clip_id("lake", 3)
    'lake-00003'
    """
    return f"{prefix}-{index:05d}"


def expand_sources(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Paths as given; a directory expands to its video files (by suffix, sorted by name, not recursive).

    >>> expand_sources(["a.mp4"])
    [PosixPath('a.mp4')]
    """
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out += sorted(q for q in p.iterdir() if q.is_file() and q.suffix.lower() in VIDEO_SUFFIXES)
        else:
            out.append(p)
    return out




def _size_reason(w: int, h: int, min_size: tuple[int, int], landscape_only: bool) -> str | None:
    min_w, min_h = min_size
    if landscape_only:
        if w <= h:
            return f"not landscape ({w}x{h}); pass --allow-portrait to keep portrait and square sources"
        if w < min_w or h < min_h:
            return f"too small ({w}x{h} < {min_w}x{min_h})"
        return None
    long_side, short_side = max(w, h), min(w, h)
    need_long, need_short = max(min_w, min_h), min(min_w, min_h)
    if long_side < need_long or short_side < need_short:
        return f"too small ({w}x{h} < {min_w}x{min_h} in either orientation)"
    return None


def _detector_name(detector: ForegroundDetector | None) -> str | None:
    if detector is None:
        return None
    name = getattr(detector, "__qualname__", None) or type(detector).__qualname__
    return f"{getattr(detector, '__module__', '')}.{name}"


def curate(
    sources: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    min_size: tuple[int, int] = DEFAULT_MIN_SIZE,
    landscape_only: bool = True,
    foreground_detector: ForegroundDetector | None = None,
    max_foreground: float | None = None,
    backend: str = "auto",
    cut_threshold: float = CUT_THRESHOLD,
    progress: bool = True,
) -> CurationReport:
    """Curate ``sources`` into ``out_dir`` (clips + ``manifest.jsonl``); resumable and byte-reproducible.

    ``min_size=(W, H)``: with ``landscape_only`` a source must be wider than tall and at least ``W x H``; without
    it the larger/smaller side must reach the larger/smaller of ``W, H``. ``foreground_detector(frames) -> fraction``
    is called on each chunk (uint8 ``[T, H, W, 3]``) and recorded; chunks above ``max_foreground`` are dropped.
    Bad sources are skipped with a reason, never raised. Directories expand to their video files.

        >>> import numpy as np, tempfile, pathlib
        >>> from devil_dataset.core.video_io import write_video
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> src = write_video(d / "src.mp4", np.zeros((100, 32, 48, 3), np.uint8), fps=25)
        >>> report = curate([src], d / "out", min_size=(48, 32), progress=False)
        >>> [(c.clip_id, c.first_frame, c.frame_count) for c in report.clips]
        [('src-00000', 0, 90)]
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    (out / CLIPS_DIRNAME).mkdir(parents=True, exist_ok=True)
    (out / STATE_DIRNAME).mkdir(parents=True, exist_ok=True)
    for d in (out, out / CLIPS_DIRNAME, out / STATE_DIRNAME):
        remove_stale_temporaries(d)
    if max_foreground is not None and foreground_detector is None:
        raise DevilError("max_foreground needs a foreground_detector")

    resolved_backend = curation_backend(backend)
    settings = {
        "kind": "settings",
        "format": MANIFEST_FORMAT,
        "clip_frames": CLIP_FRAMES,
        "min_clip_frames": MIN_CLIP_FRAMES,
        "cut_detector": "pyscenedetect.ContentDetector",
        "cut_threshold": float(cut_threshold),
        "min_shot_frames": MIN_SHOT_FRAMES,
        "decoder": resolved_backend,
        "encoder": {
            "codec": video_io.ENCODER_CODEC,
            "crf": video_io.ENCODER_CRF,
            "preset": video_io.ENCODER_PRESET,
            "threads": video_io.ENCODER_THREADS,
        },
        "foreground_detector": _detector_name(foreground_detector),
        "max_foreground": max_foreground,
        "min_size": list(min_size),
        "landscape_only": bool(landscape_only),
    }
    # the fields that change a source's clips (not the accept/reject filter): a mismatch recomputes the source
    fingerprint = json.dumps({k: v for k, v in settings.items() if k not in {"min_size", "landscape_only"}},
                             sort_keys=True)

    states = _load_states(out)
    taken: dict[str, str] = {st["prefix"]: sha for sha, st in states.items() if "prefix" in st}
    result = CurationReport(out_dir=out)
    records: list[dict] = [settings]
    seen: dict[str, str] = {}

    source_list = expand_sources(sources)
    with progress_bar(total=len(source_list), desc="curate: sources", unit="video", enabled=progress) as bar:
        for src in source_list:
            result.sources.append(os.fspath(src))
            bar.set_postfix_str(src.name[-40:])
            outcome = _curate_source(
                src, out, states, taken, seen, fingerprint,
                min_size=min_size, landscape_only=landscape_only,
                foreground_detector=foreground_detector, max_foreground=max_foreground,
                backend=resolved_backend, cut_threshold=cut_threshold, progress=progress, result=result,
            )
            records += [r.to_json() for r in outcome]
            bar.update(1)

    text = "".join(json.dumps(r, sort_keys=False) + "\n" for r in records)
    atomic_write_text(out / MANIFEST_NAME, text)
    return result


def _load_states(out: Path) -> dict[str, dict]:
    states: dict[str, dict] = {}
    for p in sorted((out / STATE_DIRNAME).glob("*.json")):
        try:
            st = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(st, dict) and st.get("source_sha256") == p.stem:
            states[p.stem] = st
    return states


def _save_state(out: Path, state: dict) -> None:
    atomic_write_text(out / STATE_DIRNAME / f"{state['source_sha256']}.json", json.dumps(state, indent=1) + "\n")


def _verified(out: Path, rec: ClipRecord) -> bool:
    path = out / rec.path
    try:
        return path.is_file() and file_sha256(path) == rec.sha256
    except OSError:
        return False


def _curate_source(
    src: Path,
    out: Path,
    states: dict[str, dict],
    taken: dict[str, str],
    seen: dict[str, str],
    fingerprint: str,
    *,
    min_size: tuple[int, int],
    landscape_only: bool,
    foreground_detector: ForegroundDetector | None,
    max_foreground: float | None,
    backend: str,
    cut_threshold: float,
    progress: bool,
    result: CurationReport,
) -> list:
    source = os.fspath(src)

    def skip(reason: str, sha: str | None = None) -> list:
        rec = SkippedSource(source=source, source_sha256=sha, reason=reason)
        result.skipped.append(rec)
        return [rec]

    if not src.exists():
        return skip("no such file")
    if not src.is_file():
        return skip("not a regular file")
    try:
        sha = file_sha256(src)
    except OSError as exc:
        return skip(f"unreadable ({exc.strerror or exc})")
    if sha in seen:
        return skip(f"duplicate of {seen[sha]} (same sha256)", sha)
    seen[sha] = source

    try:
        info = video_io.probe_video(src)
    except DevilError as exc:
        return skip(_reason(exc, src), sha)
    if info.rotation:
        return skip(f"rotated by {info.rotation} degrees in its display matrix (not supported: re-encode upright)",
                    sha)
    size_reason = _size_reason(info.width, info.height, min_size, landscape_only)
    if size_reason:
        return skip(size_reason, sha)

    # the clip-id prefix: kept from an earlier run, else the stem, else stem + hash when the stem is taken
    state = states.get(sha)
    prefix = state["prefix"] if state and "prefix" in state else None
    if prefix is None:
        prefix = safe_stem(src)
        if taken.get(prefix, sha) != sha:
            prefix = f"{prefix}_{sha[:8]}"
    taken[prefix] = sha

    # resume: a complete state with the same settings and verified clip files needs no decoding at all
    if state and state.get("fingerprint") == fingerprint and state.get("complete") and state.get("prefix") == prefix \
            and (state.get("clips") or state.get("dropped")):  # a state without any clip is re-examined for its reason
        clips: list[ClipRecord] = [ClipRecord.from_json(c) for c in state["clips"]]
        if all(_verified(out, c) for c in clips):
            dropped: list[DroppedClip] = [
                DroppedClip(**{k: v for k, v in d.items() if k != "kind"}) for d in state.get("dropped", [])
            ]
            clips = [with_source(c, source) for c in clips]
            dropped = [with_source(d, source) for d in dropped]
            result.clips += clips
            result.dropped += dropped
            result.reused += len(clips)
            return _in_frame_order(clips, dropped)

    fps = info.fps if info.fps > 0 else Fraction(25)
    # pass 1: shot cuts (streaming). Frames are also kept while they fit DECODE_CACHE_BYTES, so short sources are
    # decoded once; longer ones are decoded a second time for cutting (same decoder, same frames).
    frame_bytes = info.width * info.height * 3
    cache: list[np.ndarray] | None = []
    try:
        detector = CutDetector(fps=fps, threshold=cut_threshold)
        n = 0
        with progress_bar(total=info.frame_count or None, desc=f"cuts {src.name[-24:]}", unit="frame",
                          leave=False, enabled=progress) as fbar:
            for frame in video_io.iter_frames(src, backend=backend):
                if frame.shape[:2] != (info.height, info.width):
                    return skip(f"frame {n} has size {frame.shape[1]}x{frame.shape[0]}, expected "
                                f"{info.width}x{info.height}", sha)
                detector.push(frame)
                n += 1
                if cache is not None:
                    if n * frame_bytes <= DECODE_CACHE_BYTES:
                        cache.append(frame)
                    else:
                        cache = None
                fbar.update(1)
        cuts = detector.finish()
    except DevilError as exc:
        return skip("corrupt: " + _reason(exc, src), sha)
    if n == 0:
        return skip("corrupt: no frames could be decoded", sha)
    if info.frame_count and n < info.frame_count:
        return skip(f"truncated: decoded {n} of the {info.frame_count} frames the container declares", sha)

    plan = plan_clips(cuts.shots())
    if not plan:  # issue 16 item 12: a source without clips is recorded with its reason, never dropped silently
        if n == 1 and info.codec in STILL_IMAGE_CODECS:
            return skip(f"no clip: 1 frame: a still image ({info.codec}), not a video", sha)
        return skip(f"no clip: {n} frame{'s' if n != 1 else ''}, no shot of at least {MIN_CLIP_FRAMES} frames "
                    f"without a cut (SPEC section 1)", sha)
    old = {}
    if state and state.get("fingerprint") == fingerprint and state.get("prefix") == prefix:
        old = {c["clip_id"]: ClipRecord.from_json(c) for c in state.get("clips", [])}
    state = {
        "source_sha256": sha,
        "prefix": prefix,
        "fingerprint": fingerprint,
        "num_frames": n,
        "cuts": list(cuts.cuts),
        "complete": False,
        "clips": [],
        "dropped": [],
    }
    _save_state(out, state)

    clips, dropped = [], []
    # pass 2: cut, score, encode
    frames_iter = iter(cache) if cache is not None else video_io.iter_frames(src, backend=backend)
    try:
        pos = 0
        with progress_bar(total=len(plan), desc=f"clips {src.name[-24:]}", unit="clip", leave=False,
                          enabled=progress) as cbar:
            for index, (shot_index, start, end) in enumerate(plan):
                cid = clip_id(prefix, index)
                rel = f"{CLIPS_DIRNAME}/{cid}{CLIP_SUFFIX}"
                previous = old.get(cid)
                if (  # reusable
                    previous is not None and previous.first_frame == start and previous.frame_count == end - start
                    and _verified(out, previous)
                ):
                    # skip decoding-to-array work we do not need; the iterator still has to advance
                    for _ in range(end - pos):
                        next(frames_iter)
                    pos = end
                    rec = with_source(previous, source)
                    clips.append(rec)
                    result.reused += 1
                else:
                    chunk = np.empty((end - start, info.height, info.width, 3), np.uint8)
                    while pos < end:
                        frame = next(frames_iter)
                        if pos >= start:
                            chunk[pos - start] = frame
                        pos += 1
                    fg = None
                    if foreground_detector is not None:
                        fg = float(foreground_detector(chunk))
                    if fg is not None and max_foreground is not None and fg > max_foreground:
                        dropped.append(DroppedClip(cid, source, sha, start, end - start, fg,
                                                   f"foreground fraction {fg:.4f} > {max_foreground}"))
                    else:
                        video_io.write_video(out / rel, chunk, fps=fps)
                        rec = ClipRecord(
                            clip_id=cid, path=rel, source=source, source_sha256=sha, shot_index=shot_index,
                            first_frame=start, frame_count=end - start, fps=float(fps),
                            fps_fraction=f"{fps.numerator}/{fps.denominator}", width=info.width,
                            height=info.height, cut_score=round(cuts.max_score(start, end), 6),
                            sha256=file_sha256(out / rel), foreground_fraction=fg,
                        )
                        clips.append(rec)
                        result.written += 1
                state["clips"] = [c.to_json() for c in clips]
                state["dropped"] = [d.to_json() for d in dropped]
                _save_state(out, state)
                cbar.update(1)
    except (DevilError, StopIteration) as exc:
        msg = _reason(exc, src) if isinstance(exc, DevilError) else "fewer frames on the second decode"
        return skip("corrupt: " + msg, sha)
    finally:
        if hasattr(frames_iter, "close"):
            frames_iter.close()
        cache = None

    state["complete"] = True
    _save_state(out, state)
    result.clips += clips
    result.dropped += dropped
    return _in_frame_order(clips, dropped)


def with_source(rec: _Record, source: str) -> _Record:
    """The same record (a :class:`ClipRecord` or :class:`DroppedClip`) naming the source path as given in this run
    (the bytes are identified by sha256); ``rec`` itself when it already does."""
    return rec if rec.source == source else replace(rec, source=source)


def _in_frame_order(clips: list[ClipRecord], dropped: list[DroppedClip]) -> list:
    return sorted([*clips, *dropped], key=lambda r: r.first_frame)


def _reason(exc: BaseException, src: Path) -> str:
    text = str(exc)
    prefix = f"{src}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def _read_records(out_dir: str | os.PathLike) -> list[dict]:
    path = Path(out_dir)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise DevilError(f"{path}: cannot read manifest ({exc.strerror or exc})") from None
    records = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            raise DevilError(f"{path}: line {i} is not valid JSON") from None
    return records


def read_manifest(out_dir: str | os.PathLike) -> list[ClipRecord]:
    """The stored clips of a curation directory (or manifest file), in manifest order.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / MANIFEST_NAME).write_text('{"kind": "settings"}\\n')
    >>> read_manifest(d)
    []
    """
    return [ClipRecord.from_json(r) for r in _read_records(out_dir) if r.get("kind") == "clip"]


def skipped_sources(out_dir: str | os.PathLike) -> list[SkippedSource]:
    """The sources of the last run that produced no clips, with their reasons."""
    return [SkippedSource(r["source"], r.get("source_sha256"), r["reason"])
            for r in _read_records(out_dir) if r.get("kind") == "skipped"]


def dropped_clips(out_dir: str | os.PathLike) -> list[DroppedClip]:
    """Chunks the foreground filter dropped in the last run."""
    return [DroppedClip(**{k: v for k, v in r.items() if k != "kind"})
            for r in _read_records(out_dir) if r.get("kind") == "dropped"]


def clip_path(out_dir: str | os.PathLike, record: ClipRecord) -> Path:
    """Absolute location of a clip file: ``out_dir / record.path``."""
    return Path(out_dir) / record.path


def load_curated_clip(out_dir: str | os.PathLike, record: ClipRecord, *, verify: bool = False) -> np.ndarray:
    """Decode a curated clip to uint8 ``[T, H, W, 3]``; ``verify=True`` checks the file's sha256 first."""
    path = clip_path(out_dir, record)
    if verify and file_sha256(path) != record.sha256:
        raise DevilError(f"{path}: checksum does not match the manifest")
    frames = video_io.load_clip(path)
    if frames.shape[0] != record.frame_count:
        raise DevilError(f"{path}: {frames.shape[0]} frames, manifest says {record.frame_count}")
    return frames

"""Curation (the release's clips): source videos -> shot-cut-free clips of 45-90 native frames + a manifest.

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
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from ..core import video_io
from ..core.atomic import atomic_write_text, file_sha256, remove_stale_temporaries
from ..core.cpu_pins import cpu_pinned
from ..core.errors import DevilError
from ..core.progress import progress_bar
from .shot_cuts import CUT_THRESHOLD, MIN_SHOT_FRAMES, CutDetector, ShotCuts

# The release's clips: consecutive non-overlapping chunks of 90 frames; a final chunk shorter than 45 frames is dropped.
CLIP_FRAMES = 90
MIN_CLIP_FRAMES = 45
# Decoders FFmpeg uses for single images: a source decoded by one of them is an image renamed as a video.
STILL_IMAGE_CODECS = frozenset({"png", "apng", "bmp", "tiff", "webp", "gif", "mjpeg", "jpeg2000", "ppm", "pgm"})
# The release's clips: default filter keeps landscape sources of at least 832x480 (the evaluation size).
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
    ``auto`` picks PyAV and an explicit ``decord`` is honoured.

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


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
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
    _prepare_out_dir(out)
    if max_foreground is not None and foreground_detector is None:
        raise DevilError("max_foreground needs a foreground_detector")

    resolved_backend = curation_backend(backend)
    settings = _manifest_settings(
        cut_threshold=cut_threshold, backend=resolved_backend, foreground_detector=foreground_detector,
        max_foreground=max_foreground, min_size=min_size, landscape_only=landscape_only,
    )
    # the fields that change a source's clips (not the accept/reject filter): a mismatch recomputes the source
    fingerprint = json.dumps({k: v for k, v in settings.items() if k not in {"min_size", "landscape_only"}},
                             sort_keys=True)
    job = _CurationJob(
        out=out, fingerprint=fingerprint, min_size=min_size, landscape_only=landscape_only,
        foreground_detector=foreground_detector, max_foreground=max_foreground, backend=resolved_backend,
        cut_threshold=cut_threshold, progress=progress,
    )

    states = _load_states(out)
    ledger = _CurationLedger(
        states=states, taken={st["prefix"]: sha for sha, st in states.items() if "prefix" in st},
        seen={}, result=CurationReport(out_dir=out),
    )
    records: list[dict] = [settings]
    source_list = expand_sources(sources)
    with progress_bar(total=len(source_list), desc="curate: sources", unit="video", enabled=progress) as bar:
        for src in source_list:
            ledger.result.sources.append(os.fspath(src))
            bar.set_postfix_str(src.name[-40:])
            records += [r.to_json() for r in _curate_source(src, job, ledger)]
            bar.update(1)

    text = "".join(json.dumps(r, sort_keys=False) + "\n" for r in records)
    atomic_write_text(out / MANIFEST_NAME, text)
    return ledger.result


def _prepare_out_dir(out: Path) -> None:
    """The curation folder with its ``clips/`` and ``.state/`` folders, temporaries of an interrupted run removed."""
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    (out / CLIPS_DIRNAME).mkdir(parents=True, exist_ok=True)
    (out / STATE_DIRNAME).mkdir(parents=True, exist_ok=True)
    for d in (out, out / CLIPS_DIRNAME, out / STATE_DIRNAME):
        remove_stale_temporaries(d)


def _manifest_settings(
    *,
    cut_threshold: float,
    backend: str,
    foreground_detector: ForegroundDetector | None,
    max_foreground: float | None,
    min_size: tuple[int, int],
    landscape_only: bool,
) -> dict:
    """The manifest's ``"settings"`` line (``backend``: the resolved decoder)."""
    return {
        "kind": "settings",
        "format": MANIFEST_FORMAT,
        "clip_frames": CLIP_FRAMES,
        "min_clip_frames": MIN_CLIP_FRAMES,
        "cut_detector": "pyscenedetect.ContentDetector",
        "cut_threshold": float(cut_threshold),
        "min_shot_frames": MIN_SHOT_FRAMES,
        "decoder": backend,
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


@dataclass(frozen=True)
class _CurationJob:
    """The settings one :func:`curate` call applies to every source (``backend``: the resolved decoder;
    ``fingerprint``: the settings that change a source's clips, as JSON)."""

    out: Path
    fingerprint: str
    min_size: tuple[int, int]
    landscape_only: bool
    foreground_detector: ForegroundDetector | None
    max_foreground: float | None
    backend: str
    cut_threshold: float
    progress: bool


@dataclass(frozen=True)
class _CurationLedger:
    """What the sources of one :func:`curate` call share (the containers themselves are filled): the states of
    earlier runs by sha256, the clip-id prefixes given (prefix -> sha256), the sources seen (sha256 -> path as
    given) and the report."""

    states: dict[str, dict]
    taken: dict[str, str]
    seen: dict[str, str]
    result: CurationReport


@dataclass(frozen=True)
class _SourceContext:
    """One accepted source: its path as given, sha256, probed metadata, clip-id prefix and earlier state (if any)."""

    path: Path
    source: str
    sha: str
    info: video_io.VideoInfo
    prefix: str
    state: dict | None
    job: _CurationJob
    ledger: _CurationLedger

    @property
    def fps(self) -> Fraction:
        """The clips' frame rate: the source's average, 25 when the container does not say."""
        return self.info.fps if self.info.fps > 0 else Fraction(25)

    @property
    def same_settings(self) -> bool:
        """Whether the earlier state was made with this run's settings and prefix."""
        state = self.state
        return bool(state and state.get("fingerprint") == self.job.fingerprint and state.get("prefix") == self.prefix)


@dataclass(frozen=True)
class _CutPass:
    """The first decode of a source: its frame count, shot cuts, and the frames when they fit the decode cache."""

    num_frames: int
    cuts: ShotCuts
    cache: list[np.ndarray] | None


class _Skip(Exception):
    """A source that gives no clip: the reason recorded in the manifest, and its sha256 once known."""

    def __init__(self, reason: str, sha: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.sha = sha


def _curate_source(src: Path, job: _CurationJob, ledger: _CurationLedger) -> list:
    """The manifest records of one source: its clips and dropped chunks in frame order, or one skipped record."""
    try:
        ctx = _accept_source(src, job, ledger)
        reused = _reuse_complete_state(ctx)
        if reused is not None:
            return reused
        cut_pass = _detect_cuts(ctx)
        plan = _plan_source_clips(ctx, cut_pass)
        clips, dropped = _cut_clips(ctx, cut_pass, plan)
    except _Skip as skip:
        rec = SkippedSource(source=os.fspath(src), source_sha256=skip.sha, reason=skip.reason)
        ledger.result.skipped.append(rec)
        return [rec]
    ledger.result.clips += clips
    ledger.result.dropped += dropped
    return _in_frame_order(clips, dropped)


def _source_sha256(src: Path) -> str:
    """The sha256 of a source file (:class:`_Skip` when it is missing, not a file or unreadable)."""
    if not src.exists():
        raise _Skip("no such file")
    if not src.is_file():
        raise _Skip("not a regular file")
    try:
        return file_sha256(src)
    except OSError as exc:
        raise _Skip(f"unreadable ({exc.strerror or exc})") from None


def _probe_accepted(src: Path, sha: str, job: _CurationJob) -> video_io.VideoInfo:
    """The source's metadata when it passes the rotation and resolution/orientation filter (else :class:`_Skip`)."""
    try:
        info = video_io.probe_video(src)
    except DevilError as exc:
        raise _Skip(_reason(exc, src), sha) from None
    if info.rotation:
        raise _Skip(f"rotated by {info.rotation} degrees in its display matrix (not supported: re-encode upright)",
                    sha)
    size_reason = _size_reason(info.width, info.height, job.min_size, job.landscape_only)
    if size_reason:
        raise _Skip(size_reason, sha)
    return info


def _clip_prefix(src: Path, sha: str, state: dict | None, taken: dict[str, str]) -> str:
    """The clip-id prefix: kept from an earlier run, else the stem, else stem + hash when the stem is taken."""
    prefix = state["prefix"] if state and "prefix" in state else None
    if prefix is None:
        prefix = safe_stem(src)
        if taken.get(prefix, sha) != sha:
            prefix = f"{prefix}_{sha[:8]}"
    taken[prefix] = sha
    return prefix


def _accept_source(src: Path, job: _CurationJob, ledger: _CurationLedger) -> _SourceContext:
    """Hash, de-duplicate, probe and filter a source and give it its clip-id prefix (:class:`_Skip` if rejected)."""
    source = os.fspath(src)
    sha = _source_sha256(src)
    if sha in ledger.seen:
        raise _Skip(f"duplicate of {ledger.seen[sha]} (same sha256)", sha)
    ledger.seen[sha] = source
    info = _probe_accepted(src, sha, job)
    state = ledger.states.get(sha)
    prefix = _clip_prefix(src, sha, state, ledger.taken)
    return _SourceContext(path=src, source=source, sha=sha, info=info, prefix=prefix, state=state, job=job,
                          ledger=ledger)


def _reuse_complete_state(ctx: _SourceContext) -> list | None:
    """The source's records from a complete earlier state with the same settings and verified clip files (no
    decoding at all); None when the source must be examined again."""
    state = ctx.state
    # a state without any clip is re-examined for its reason
    if not (ctx.same_settings and state and state.get("complete") and (state.get("clips") or state.get("dropped"))):
        return None
    clips: list[ClipRecord] = [ClipRecord.from_json(c) for c in state["clips"]]
    if not all(_verified(ctx.job.out, c) for c in clips):
        return None
    dropped: list[DroppedClip] = [
        DroppedClip(**{k: v for k, v in d.items() if k != "kind"}) for d in state.get("dropped", [])
    ]
    clips = [with_source(c, ctx.source) for c in clips]
    dropped = [with_source(d, ctx.source) for d in dropped]
    result = ctx.ledger.result
    result.clips += clips
    result.dropped += dropped
    result.reused += len(clips)
    return _in_frame_order(clips, dropped)


def _detect_cuts(ctx: _SourceContext) -> _CutPass:
    """Pass 1: decode the source (streaming) to detect shot cuts, keeping the frames while they fit
    :data:`DECODE_CACHE_BYTES` (short sources are decoded once; longer ones again for cutting, same decoder)."""
    try:
        detector = CutDetector(fps=ctx.fps, threshold=ctx.job.cut_threshold)
        n, cache, mismatch = _scan_frames(ctx, detector)
        if mismatch is not None:
            raise _Skip(mismatch, ctx.sha)
        cuts = detector.finish()
    except DevilError as exc:
        raise _Skip("corrupt: " + _reason(exc, ctx.path), ctx.sha) from None
    if n == 0:
        raise _Skip("corrupt: no frames could be decoded", ctx.sha)
    if ctx.info.frame_count and n < ctx.info.frame_count:
        raise _Skip(f"truncated: decoded {n} of the {ctx.info.frame_count} frames the container declares", ctx.sha)
    return _CutPass(num_frames=n, cuts=cuts, cache=cache)


def _scan_frames(ctx: _SourceContext, detector: CutDetector) -> tuple[int, list[np.ndarray] | None, str | None]:
    """Push every decoded frame to ``detector``: (frames decoded, the cached frames or None, the reason when a
    frame's size differs from the container's, else None)."""
    info = ctx.info
    frame_bytes = info.width * info.height * 3
    cache: list[np.ndarray] | None = []
    n = 0
    with progress_bar(total=info.frame_count or None, desc=f"cuts {ctx.path.name[-24:]}", unit="frame",
                      leave=False, enabled=ctx.job.progress) as fbar:
        for frame in video_io.iter_frames(ctx.path, backend=ctx.job.backend):
            if frame.shape[:2] != (info.height, info.width):
                return n, cache, (f"frame {n} has size {frame.shape[1]}x{frame.shape[0]}, expected "
                                  f"{info.width}x{info.height}")
            detector.push(frame)
            n += 1
            if cache is not None:
                if n * frame_bytes <= DECODE_CACHE_BYTES:
                    cache.append(frame)
                else:
                    cache = None
            fbar.update(1)
    return n, cache, None


def _plan_source_clips(ctx: _SourceContext, cut_pass: _CutPass) -> list[tuple[int, int, int]]:
    """The source's chunks (:func:`plan_clips`); a source without any is skipped with its reason."""
    plan = plan_clips(cut_pass.cuts.shots())
    if plan:
        return plan
    # a source without clips is recorded with its reason, never dropped silently
    n = cut_pass.num_frames
    if n == 1 and ctx.info.codec in STILL_IMAGE_CODECS:
        raise _Skip(f"no clip: 1 frame: a still image ({ctx.info.codec}), not a video", ctx.sha)
    raise _Skip(f"no clip: {n} frame{'s' if n != 1 else ''}, no shot of at least {MIN_CLIP_FRAMES} frames "
                "without a cut", ctx.sha)


def _start_state(ctx: _SourceContext, cut_pass: _CutPass) -> dict:
    """A new, incomplete state of the source, saved (its clips are recorded as they are written)."""
    state = {
        "source_sha256": ctx.sha,
        "prefix": ctx.prefix,
        "fingerprint": ctx.job.fingerprint,
        "num_frames": cut_pass.num_frames,
        "cuts": list(cut_pass.cuts.cuts),
        "complete": False,
        "clips": [],
        "dropped": [],
    }
    _save_state(ctx.job.out, state)
    return state


class _FrameCursor:
    """A source's frames read once, in order: the index of the next frame, chunks taken from it."""

    def __init__(self, frames: Iterator[np.ndarray]):
        self.frames = frames
        self.pos = 0

    def skip_to(self, end: int) -> None:
        """Advance to frame ``end`` without keeping the frames (the iterator still has to advance)."""
        for _ in range(end - self.pos):
            next(self.frames)
        self.pos = end

    def chunk(self, start: int, end: int, info: video_io.VideoInfo) -> np.ndarray:
        """Frames ``[start, end)`` as uint8 ``[T, H, W, 3]`` (earlier frames not yet read are passed over)."""
        chunk = np.empty((end - start, info.height, info.width, 3), np.uint8)
        while self.pos < end:
            frame = next(self.frames)
            if self.pos >= start:
                chunk[self.pos - start] = frame
            self.pos += 1
        return chunk


def _cut_clips(ctx: _SourceContext, cut_pass: _CutPass,
               plan: list[tuple[int, int, int]]) -> tuple[list[ClipRecord], list[DroppedClip]]:
    """Pass 2: cut, score and encode every planned chunk (a clip of the earlier run with the same frames is kept);
    the state is saved after each chunk, and marked complete at the end."""
    old: dict[str, ClipRecord] = {}
    if ctx.same_settings:
        old = {c["clip_id"]: ClipRecord.from_json(c) for c in (ctx.state or {}).get("clips", [])}
    state = _start_state(ctx, cut_pass)
    clips: list[ClipRecord] = []
    dropped: list[DroppedClip] = []
    frames_iter: Iterator[np.ndarray] = (
        iter(cut_pass.cache) if cut_pass.cache is not None else video_io.iter_frames(ctx.path, backend=ctx.job.backend)
    )
    try:
        cursor = _FrameCursor(frames_iter)
        with progress_bar(total=len(plan), desc=f"clips {ctx.path.name[-24:]}", unit="clip", leave=False,
                          enabled=ctx.job.progress) as cbar:
            for index, (shot_index, start, end) in enumerate(plan):
                cid = clip_id(ctx.prefix, index)
                previous = _reusable_clip(ctx, old.get(cid), start, end)
                if previous is not None:
                    cursor.skip_to(end)  # skip decoding-to-array work we do not need
                    clips.append(with_source(previous, ctx.source))
                    ctx.ledger.result.reused += 1
                else:
                    chunk = cursor.chunk(start, end, ctx.info)
                    rec = _new_clip(ctx, chunk, cid, (shot_index, start, end), cut_pass.cuts)
                    if isinstance(rec, DroppedClip):
                        dropped.append(rec)
                    else:
                        clips.append(rec)
                        ctx.ledger.result.written += 1
                state["clips"] = [c.to_json() for c in clips]
                state["dropped"] = [d.to_json() for d in dropped]
                _save_state(ctx.job.out, state)
                cbar.update(1)
    except (DevilError, StopIteration) as exc:
        msg = _reason(exc, ctx.path) if isinstance(exc, DevilError) else "fewer frames on the second decode"
        raise _Skip("corrupt: " + msg, ctx.sha) from None
    finally:
        close = getattr(frames_iter, "close", None)
        if close is not None:
            close()
    state["complete"] = True
    _save_state(ctx.job.out, state)
    return clips, dropped


def _reusable_clip(ctx: _SourceContext, previous: ClipRecord | None, start: int, end: int) -> ClipRecord | None:
    """The earlier run's clip of this chunk when it has the same frames and its file is intact, else None."""
    if (
        previous is not None and previous.first_frame == start and previous.frame_count == end - start
        and _verified(ctx.job.out, previous)
    ):
        return previous
    return None


def _new_clip(ctx: _SourceContext, chunk: np.ndarray, cid: str, planned: tuple[int, int, int],
              cuts: ShotCuts) -> ClipRecord | DroppedClip:
    """Score the chunk ``planned = (shot index, start, end)`` with the foreground detector; a chunk over
    ``max_foreground`` is dropped, any other is encoded as clip ``cid``."""
    job = ctx.job
    shot_index, start, end = planned
    fg = None
    if job.foreground_detector is not None:
        fg = float(job.foreground_detector(chunk))
    if fg is not None and job.max_foreground is not None and fg > job.max_foreground:
        return DroppedClip(cid, ctx.source, ctx.sha, start, end - start, fg,
                           f"foreground fraction {fg:.4f} > {job.max_foreground}")
    rel = f"{CLIPS_DIRNAME}/{cid}{CLIP_SUFFIX}"
    fps = ctx.fps
    video_io.write_video(job.out / rel, chunk, fps=fps)
    return ClipRecord(
        clip_id=cid, path=rel, source=ctx.source, source_sha256=ctx.sha, shot_index=shot_index,
        first_frame=start, frame_count=end - start, fps=float(fps),
        fps_fraction=f"{fps.numerator}/{fps.denominator}", width=ctx.info.width,
        height=ctx.info.height, cut_score=round(cuts.max_score(start, end), 6),
        sha256=file_sha256(job.out / rel), foreground_fraction=fg,
    )


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

"""Rebuild the DEVIL benchmark the release's way from its downloaded source videos (``devil build --release-sources``).

Each stage as the release did it:

- every source is checked for 1920x1080; sources are named ``<flickr user>-<flickr video id>.<ext>`` (as
  ``devil sources download`` names them; its ``sources-manifest.json`` is read when present);
- consecutive 90-frame chunks from frame 0, a tail shorter than 45 frames dropped, every native frame kept; frames
  come from a plain decode of every frame in order (PyAV, no frame-rate conversion), which is what the release's
  ``ffmpeg -vf select=gte(n\\,START) -vsync 0`` gives (checked by the tests against that filter);
- clips are stored as JPEG quality 95 frame folders named ``<user>-<video id>-<5-digit clip index>``;
- no shot-cut filtering (the release's authors filtered the sources by hand): each clip's largest cut score is
  recorded and clips at or above the cut threshold are reported as suspicious;
- scores at 854x480, rank labels, slice pairing (:func:`devil_dataset.builder.assemble.plan_slices`) and masks are
  the regular build's (:func:`devil_dataset.builder.build.build`), which already follows the release.

Decoding streams frame by frame straight into JPEG files (memory: one frame per worker); each source's progress is
kept in ``.state/`` so an interrupted rebuild resumes. ``rebuild-report.json`` records what could and could not be
rebuilt, with every deviation from the release and its cause.

    >>> parse_source_name("122995322@N02-23467104578.mp4")
    ('122995322@N02', '23467104578')
    >>> parse_source_name("23467104578.mp4")
    (None, '23467104578')
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import numpy as np
from PIL import Image

from ..core import video_io
from ..core.alignment import resolve_detector
from ..core.atomic import atomic_write_text, file_sha256, remove_stale_temporaries
from ..core.cpu_pins import cpu_pinned
from ..core.errors import DevilError
from ..core.progress import progress_bar
from ..sources.catalog import load_catalog
from ..sources.download import read_sources_manifest
from . import dataset_writer as writer
from .build import build
from .build_options import BuildHooks, BuildOptions
from .curate import (
    CLIP_FRAMES,
    CLIPS_DIRNAME,
    MANIFEST_NAME,
    MIN_CLIP_FRAMES,
    STATE_DIRNAME,
    VIDEO_SUFFIXES,
    ClipRecord,
    CurationReport,
    SkippedSource,
    plan_chunks,
    with_source,
)
from .shot_cuts import CUT_THRESHOLD, CutDetector, ShotCuts

if TYPE_CHECKING:  # pragma: no cover
    from .build import BuildResult

# The release stored clip frames as JPEG quality 95.
RELEASE_JPEG_QUALITY = 95
RELEASE_SOURCE_SIZE: tuple[int, int] = (1920, 1080)  # the release's download filter
REPORT_NAME = "rebuild-report.json"
RELEASE_FORMAT = "devil-release-rebuild/1"
UNKNOWN_USER = "unknown"  # clip-name prefix when a source's owner is not known (yt-dlp without uploader id)
_SOURCE_NAME = re.compile(r"^(?:(?P<user>\d+@N\d+)-)?(?P<vid>\d+)$")
# Whole-benchmark figures of the paper (devil-sources.json `paper_clip_count`; the release's slices: 150 per slice).
PAPER_VIDEOS_PER_SLICE = 150


def parse_source_name(name: str) -> tuple[str | None, str] | None:
    """``(user or None, video id)`` from a source file name ``<user>-<video id>.<ext>`` / ``<video id>.<ext>``."""
    m = _SOURCE_NAME.match(Path(name).stem)
    return (m.group("user"), m.group("vid")) if m else None


@dataclass
class ReleaseCurationReport(CurationReport):
    """:class:`CurationReport` plus what the release rebuild needs for its report."""

    listed: int = 0
    found: dict = field(default_factory=dict)  # video id -> source file name
    suspicious: list = field(default_factory=list)  # (clip id, cut score)
    unknown_users: list = field(default_factory=list)  # video ids whose owner is not known


def iter_release_frames(path: str | os.PathLike) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(clip index, frame index in the clip, RGB frame)`` for every decoded frame, in order, native size.

    Frame ``n`` of the video belongs to clip ``n // 90`` (the release's clips); every decoded frame is yielded once, as
    ``ffmpeg -vf select=gte(n\\,START) -vsync 0`` passes them (no duplication or dropping).
    """
    for n, frame in enumerate(video_io.iter_frames(path, backend="pyav")):
        yield n // CLIP_FRAMES, n % CLIP_FRAMES, frame


def _save_jpeg(frame: np.ndarray, path: Path) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="JPEG", quality=RELEASE_JPEG_QUALITY)
    data = buf.getvalue()
    path.write_bytes(data)
    return data


def _dir_sha256(directory: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(directory.glob("*.jpg")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def find_release_sources(sources_dir: str | os.PathLike) -> tuple[list[tuple[Path, str | None, str]], list[str]]:
    """The source videos of ``sources_dir``: ``[(path, user, video id)]`` in name order, and unusable file names.

    ``sources-manifest.json`` (from ``devil sources download``) names the files and owners when present;
    otherwise files are recognised by name.
    """

    root = Path(sources_dir)
    if not root.is_dir():
        raise DevilError(f"{root}: not a directory of downloaded sources (see `devil sources download`)")
    found: dict[str, tuple[Path, str | None, str]] = {}
    for vid, rec in read_sources_manifest(root).items():
        if rec.status == "ok" and rec.file and (root / rec.file).is_file():
            found[vid] = (root / rec.file, rec.user, vid)
    odd = []
    for p in sorted(root.iterdir()):
        if not p.is_file() or p.suffix.lower() not in VIDEO_SUFFIXES:
            continue
        parsed = parse_source_name(p.name)
        if parsed is None:
            odd.append(p.name)
        elif parsed[1] not in found:
            found[parsed[1]] = (p, parsed[0], parsed[1])
    return sorted(found.values(), key=lambda t: t[0].name), odd


def curate_release_sources(
    sources: list,
    out_dir: str | os.PathLike,
    *,
    progress: bool = True,
    cut_threshold: float = CUT_THRESHOLD,
) -> ReleaseCurationReport:
    """Cut every source of the folder ``sources[0]`` into the release's clips (``build``'s curation stage).

    Resumable: a finished source (``.state/<sha256>.json``) is not decoded again; within an interrupted source,
    clip folders already complete are kept. Frames go straight from the decoder to JPEG files.
    """

    if len(sources) != 1:
        raise DevilError("--release-sources takes one folder (the output of `devil sources download`)")
    catalog = load_catalog()
    listed = set(catalog.video_ids)
    out = Path(out_dir)
    clips_root = out / CLIPS_DIRNAME
    for d in (out, clips_root, out / STATE_DIRNAME):
        d.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(d)
    entries, odd = find_release_sources(sources[0])
    report = ReleaseCurationReport(out_dir=out, listed=len(catalog.video_ids))
    for name in odd:
        report.skipped.append(SkippedSource(name, None, "file name is not <flickr user>-<flickr video id>.<ext>"))
    todo = []
    for path, user, vid in entries:
        if vid not in listed:
            report.skipped.append(SkippedSource(path.name, None, f"{vid} is not in the DEVIL source list"))
            continue
        report.found[vid] = path.name
        todo.append((path, user, vid))

    infos: dict[str, video_io.VideoInfo | DevilError] = {}
    for path, _, vid in todo:
        try:
            infos[vid] = video_io.probe_video(path)
        except DevilError as exc:
            infos[vid] = exc
    total = sum(i.frame_count for i in infos.values() if not isinstance(i, Exception))
    with progress_bar(total=total or None, desc="rebuild: cut clips", unit="frame", enabled=progress) as bar:
        for path, user, vid in todo:
            info = infos[vid]
            if isinstance(info, Exception):
                report.skipped.append(SkippedSource(str(path), None, str(info)))
                continue
            if (info.width, info.height) != RELEASE_SOURCE_SIZE:
                report.skipped.append(SkippedSource(str(path), None, f"not 1920x1080 ({info.width}x{info.height})"))
                bar.update(info.frame_count)
                continue
            if user is None:
                report.unknown_users.append(vid)
            prefix = f"{user or UNKNOWN_USER}-{vid}"
            bar.set_postfix_str(prefix)
            _cut_source(path, prefix, info, out, report, cut_threshold, bar)
    _write_curation_manifest(out, report, cut_threshold)
    return report


def _cut_source(path: Path, prefix: str, info: video_io.VideoInfo, out: Path, report: ReleaseCurationReport,
                cut_threshold: float, bar: Any) -> None:
    """Cut one source into its clips (or reuse those of a finished earlier run) and record them in ``report``."""
    sha = file_sha256(path)
    state_path = out / STATE_DIRNAME / f"{sha}.json"
    state = _read_state(state_path)
    if _reuse_finished_source(state, prefix, path, out, report, cut_threshold):
        bar.update(info.frame_count)
        return
    fps = info.fps if info.fps > 0 else Fraction(25)
    detector = CutDetector(fps=fps, threshold=cut_threshold)
    clip_root = out / CLIPS_DIRNAME
    try:
        n = _decode_into_clips(path, prefix, info, clip_root, detector, bar)
    except DevilError as exc:
        report.skipped.append(SkippedSource(str(path), sha, f"corrupt: {exc}"))
        return
    if n == 0:
        report.skipped.append(SkippedSource(str(path), sha, "corrupt: no frames could be decoded"))
        return
    clips = _clip_records(out, prefix, path, sha, info, fps, n, detector.finish())
    _remove_stale_clips(clip_root, prefix, clips)
    report.clips += clips
    report.written += len(clips)
    report.suspicious += _suspicious_cuts(clips, cut_threshold)
    atomic_write_text(state_path, json.dumps({"source_sha256": sha, "prefix": prefix, "complete": True,
                                              "num_frames": n, "clips": [c.to_json() for c in clips]}, indent=1) + "\n")


def _read_state(state_path: Path) -> dict | None:
    """The saved progress of a source (``.state/<sha256>.json``), or None when absent or unreadable."""
    if state_path.is_file():
        try:
            return json.loads(state_path.read_text(encoding="utf-8"))
        except ValueError:
            return None
    return None


def _reuse_finished_source(state: dict | None, prefix: str, path: Path, out: Path, report: ReleaseCurationReport,
                           cut_threshold: float) -> bool:
    """Record the clips of a source an earlier run finished, when all its clip folders are still complete.

    Returns whether it did (False: the source must be cut again).
    """
    if not (state and state.get("complete") and state.get("prefix") == prefix):
        return False
    clips = [ClipRecord.from_json(c) for c in state["clips"]]
    if not all((out / c.path).is_dir() and len(list((out / c.path).glob("*.jpg"))) == c.frame_count for c in clips):
        return False
    report.clips += [with_source(c, str(path)) for c in clips]
    report.reused += len(clips)
    report.suspicious += _suspicious_cuts(clips, cut_threshold)
    return True


def _suspicious_cuts(clips: list[ClipRecord], cut_threshold: float) -> list[tuple[str, float]]:
    """``(clip id, cut score)`` of the clips whose cut score is at or above the threshold."""
    return [(c.clip_id, c.cut_score) for c in clips if c.cut_score >= cut_threshold]


def _decode_into_clips(path: Path, prefix: str, info: video_io.VideoInfo, clip_root: Path, detector: CutDetector,
                       bar: Any) -> int:
    """Decode every frame of ``path`` into JPEG clip folders (folders already complete are kept); returns the frames.

    Each clip is written to a temporary folder renamed into place when complete; a last clip shorter than
    ``MIN_CLIP_FRAMES`` is dropped. On a decoding error the unfinished folder is removed and the error raised.
    """
    current: int | None = None
    tmp: Path | None = None
    n = 0
    try:
        for index, k, frame in iter_release_frames(path):
            if frame.shape[:2] != (info.height, info.width):
                raise DevilError(f"{path}: frame {n} is {frame.shape[1]}x{frame.shape[0]}")
            detector.push(frame)
            if index != current:
                tmp = _next_clip_folder(tmp, current, index, clip_root, prefix)
                current = index
            if tmp is not None:
                _save_jpeg(frame, tmp / f"{k:05d}.jpg")
            n += 1
            bar.update(1)
    except DevilError:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if tmp is not None:
        assert current is not None  # set with tmp
        if n - current * CLIP_FRAMES >= MIN_CLIP_FRAMES:
            _finish_clip(tmp, clip_root / f"{prefix}-{current:05d}")
        else:
            shutil.rmtree(tmp)
    return n


def _next_clip_folder(tmp: Path | None, current: int | None, index: int, clip_root: Path, prefix: str) -> Path | None:
    """Move the clip being written (``tmp``, clip ``current``) into place and start clip ``index``.

    Returns the new clip's empty temporary folder, or None when its folder is already complete.
    """
    if tmp is not None:
        _finish_clip(tmp, clip_root / f"{prefix}-{current:05d}")
    final = clip_root / f"{prefix}-{index:05d}"
    if final.is_dir():
        return None
    tmp = clip_root / f".tmp-{prefix}-{index:05d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def _clip_records(out: Path, prefix: str, path: Path, sha: str, info: video_io.VideoInfo, fps: Fraction, n: int,
                  cuts: ShotCuts) -> list[ClipRecord]:
    """The records of the clips of a source of ``n`` decoded frames; a clip folder with other frames is an error."""
    clips = []
    for index, (start, end) in enumerate(plan_chunks(0, n)):
        rel = f"{CLIPS_DIRNAME}/{prefix}-{index:05d}"
        d = out / rel
        if len(list(d.glob("*.jpg"))) != end - start:  # a folder left by a run with different frames: redo later
            shutil.rmtree(d, ignore_errors=True)
            raise DevilError(f"{d}: incomplete clip folder from an earlier run was removed; run the rebuild again")
        clips.append(ClipRecord(
            clip_id=f"{prefix}-{index:05d}", path=rel, source=str(path), source_sha256=sha, shot_index=0,
            first_frame=start, frame_count=end - start, fps=float(fps),
            fps_fraction=f"{fps.numerator}/{fps.denominator}",
            width=info.width, height=info.height, cut_score=round(cuts.max_score(start, end), 6),
            sha256=_dir_sha256(d),
        ))
    return clips


def _remove_stale_clips(clip_root: Path, prefix: str, clips: list[ClipRecord]) -> None:
    """Remove the source's clip folders not among ``clips`` (a tail chunk of an earlier, longer decode)."""
    for stale in clip_root.glob(f"{prefix}-*"):
        if stale.name not in {c.clip_id for c in clips}:
            shutil.rmtree(stale, ignore_errors=True)


def _finish_clip(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)  # the folder appears complete or not at all


def _write_curation_manifest(out: Path, report: ReleaseCurationReport, cut_threshold: float) -> None:
    settings = {"kind": "settings", "format": RELEASE_FORMAT, "clip_frames": CLIP_FRAMES,
                "min_clip_frames": MIN_CLIP_FRAMES, "jpeg_quality": RELEASE_JPEG_QUALITY,
                "cut_filter": None, "cut_score": "pyscenedetect.ContentDetector (recorded, not used to filter)",
                "cut_threshold_for_report": cut_threshold, "decoder": "pyav, every frame in order"}
    lines = [settings] + [c.to_json() for c in report.clips] + [s.to_json() for s in report.skipped]
    atomic_write_text(out / MANIFEST_NAME, "".join(json.dumps(r) + "\n" for r in lines))


def _deviations(curation: ReleaseCurationReport, result, *, detector: str, scene_mode: str, rank_mode: str,
                bg_manual: int, flow: str) -> list[dict]:
    out = []
    missing = curation.listed - len(curation.found)
    if missing:
        out.append({"deviation": f"{missing} of {curation.listed} listed source videos are not in the sources folder",
                    "cause": "not obtained (gone from Flickr, private, or not downloaded); see the sources manifest"})
    if curation.skipped:
        out.append({"deviation": f"{len(curation.skipped)} source file(s) not used",
                    "cause": "; ".join(f"{Path(s.source).name}: {s.reason}" for s in curation.skipped)})
    if curation.unknown_users:
        out.append({"deviation": f"clip names of {len(curation.unknown_users)} source(s) start with "
                                 f"'{UNKNOWN_USER}' instead of the Flickr user",
                    "cause": "the owner was not recorded at download (name the file <user>-<id>.<ext>)"})
    if result.num_clips != PAPER_CLIP_COUNT:
        out.append({"deviation": f"{result.num_clips} clips instead of the paper's {PAPER_CLIP_COUNT}",
                    "cause": "fewer (or re-encoded, differently long) source videos than the release had"})
    if result.per_slice != PAPER_VIDEOS_PER_SLICE:
        out.append({"deviation": f"{result.per_slice} videos per slice instead of {PAPER_VIDEOS_PER_SLICE}",
                    "cause": "the release's 16% tails need at least 938 clips; the build scales down below that"})
    if bg_manual == 0:
        out.append({"deviation": f"background-scene-motion labels from the automatic score (mode '{scene_mode}', "
                                 f"flow '{flow}') instead of the release's hand labels",
                    "cause": "the release's hand labels are not public; pass --bg-labels to use your own"})
    if rank_mode != "release":
        out.append({"deviation": f"rank mode '{rank_mode}': clips without a score are left out of the rank tails "
                                 "instead of ranking last (into the high tails)",
                    "cause": "chosen (--parity corrected or --rank-mode); the release's pandas sort puts NaN last"})
    if detector != "surf":
        out.append({"deviation": f"feature detector '{detector}' instead of SURF (hessianThreshold 750)",
                    "cause": "pip builds of OpenCV lack the non-free SURF detector"})
    if flow != "raft":
        out.append({"deviation": f"optical flow '{flow}' instead of RAFT for the automatic scene-motion score",
                    "cause": "the package's default flow backend (RAFT needs torchvision weights)"})
    out.append({"deviation": "cut score is PySceneDetect's content score (0-255), not ffmpeg's scene score (0-1)",
                "cause": "no system FFmpeg; the score is only recorded and reported, never used to filter"})
    out.append({"deviation": "clip JPEGs are encoded by Pillow (libjpeg, quality 95), not by the release's tool",
                "cause": "same decoded frames and quality; JPEG bytes may differ by encoder"})
    return out


PAPER_CLIP_COUNT = 1250  # devil-sources.json `paper_clip_count` (paper, section 3)


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def rebuild_release(
    sources_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    hooks: BuildHooks | None = None,
) -> tuple[BuildResult, dict]:
    """Rebuild the DEVIL benchmark from downloaded release sources; returns (BuildResult, rebuild report).

    ``options`` and ``hooks`` go to :func:`devil_dataset.builder.build.build` (tests pass scorers and a mask
    loader); the rebuild puts the release's curation in place of ``hooks.curate`` and adds the Flickr credits
    (``options.attributions`` win), its card notes and the manifest's ``release_rebuild`` entry.

    Example:
        >>> result, report = rebuild_release("devil-sources", "devil")  # doctest: +SKIP
        >>> report["clips"]["made"], report["clips"]["paper"]  # doctest: +SKIP
    """

    options = options if options is not None else BuildOptions()
    hooks = hooks if hooks is not None else BuildHooks()
    holder: dict = {}
    entries, _ = find_release_sources(sources_dir)
    credits = {p.name: {"attribution": f"Flickr video {vid} by {user or 'an unrecorded user'} "
                                       f"(https://www.flickr.com/photos/{user or '-'}/{vid}/)", "license": ""}
               for p, user, vid in entries}
    credits.update({name: dict(credit) for name, credit in options.attributions.items()})

    def curate_fn(sources, work_dir, *, progress: bool, **_):
        holder["report"] = curate_release_sources(sources, work_dir, progress=progress)
        return holder["report"]

    bg = dict(options.bg_labels)
    scene_mode, rank_mode = options.modes()["scene_mode"], options.modes()["rank_mode"]
    custom_scorers = hooks.camera_scorer is not None or hooks.scene_scorer is not None
    det = "custom" if custom_scorers else resolve_detector(options.detector)
    flow = "custom" if custom_scorers else "dis"
    bg_mode = "hand labels (--bg-labels)" if bg else f"automatic score, mode '{scene_mode}'"
    notes = ("### Release rebuild\n\nRebuilt from the DEVIL release's source list "
             f"({load_catalog().provenance}) the release's way: 1920x1080 sources, consecutive 90-frame chunks from "
             "frame 0 (tails under 45 frames dropped), JPEG q95 clips named `<user>-<video>-<index>`, no shot-cut "
             f"filtering. Background-scene-motion labels: {bg_mode}. What could not be rebuilt: "
             f"`{REPORT_NAME}` beside this card.")
    rebuild_options = replace(
        options, attributions=credits,
        card_notes=notes + (f"\n\n{options.card_notes.strip()}" if options.card_notes.strip() else ""),
        info_extra={**options.info_extra, "release_rebuild": {"source_list": load_catalog().provenance,
                                                              "bg_scene_motion_labels": bg_mode,
                                                              "scene_mode": scene_mode}})
    result = build([str(sources_dir)], out_dir, rebuild_options, hooks=replace(hooks, curate=curate_fn))
    curation: ReleaseCurationReport = holder["report"]
    labelled = set(bg) & {c.clip_id for c in curation.clips}
    slices = {name: {"rows": rows, "complete": rows >= PAPER_VIDEOS_PER_SLICE}
              for name, rows in result.config_rows.items() if name != "all"}
    report = {
        "format": RELEASE_FORMAT,
        "source_list": load_catalog().provenance,
        "sources": {"listed": curation.listed, "obtained": len(curation.found),
                    "used": len({c.source for c in curation.clips}),
                    "missing_ids": [v for v in load_catalog().video_ids if v not in curation.found],
                    "skipped": [{"source": Path(s.source).name, "reason": s.reason} for s in curation.skipped]},
        "clips": {"made": result.num_clips, "paper": PAPER_CLIP_COUNT,
                  "suspicious_cuts": [{"clip_id": c, "cut_score": s} for c, s in sorted(curation.suspicious)],
                  "cut_threshold": CUT_THRESHOLD},
        "slices": slices,
        "videos_per_slice": result.per_slice,
        "bg_scene_motion_labels": {"source": bg_mode, "hand_labelled_clips": len(labelled)},
        "deviations": _deviations(curation, result, detector=det, scene_mode=scene_mode,
                                  rank_mode=rank_mode, bg_manual=len(labelled), flow=flow),
    }
    atomic_write_text(Path(out_dir) / REPORT_NAME, json.dumps(report, indent=1, sort_keys=True) + "\n")
    _list_in_manifest(Path(out_dir), REPORT_NAME)
    return result, report


def _list_in_manifest(out: Path, rel: str) -> None:
    """Add one published file to ``manifest.json`` (so ``devil publish`` uploads it and checks it)."""

    path = out / writer.MANIFEST_NAME
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.setdefault("files", {})[rel] = {"sha256": file_sha256(out / rel), "bytes": (out / rel).stat().st_size}
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def report_summary(report: Mapping) -> str:
    """The readable summary printed at the end of a release rebuild."""
    s, c = report["sources"], report["clips"]
    short = [n for n, v in report["slices"].items() if not v["complete"]]
    lines = [
        f"release rebuild: sources obtained {s['obtained']} of {s['listed']} listed, used {s['used']}",
        f"  clips made {c['made']} (paper: {c['paper']}); {len(c['suspicious_cuts'])} suspicious (cut score >= "
        f"{c['cut_threshold']:g})",
        f"  slices: {len(report['slices']) - len(short)} complete, {len(short)} short "
        f"({report['videos_per_slice']} videos per slice; the release: {PAPER_VIDEOS_PER_SLICE})",
        f"  bg scene motion labels: {report['bg_scene_motion_labels']['source']}",
        "  deviations from the release:",
    ]
    lines += [f"  - {d['deviation']} ({d['cause']})" for d in report["deviations"]]
    return "\n".join(lines)

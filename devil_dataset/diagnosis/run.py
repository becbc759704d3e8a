"""The attribute pass: the five attributes of every pair, one engine task per video, cached per content hash.

A task reads its video once (frames and the hole of its first pair), scores the two video attributes and the
foreground attributes of each of its pairs' holes; every score is looked up in the
:class:`~devil_dataset.diagnosis.cache.AttributeCache` first and stored after. Tasks run on the package's engine
(:func:`devil_dataset.core.engines.get_engine`: this process, local worker processes or Ray); results come back in
video order, so the table is the same on every engine.

    >>> from devil_dataset.diagnosis.pairs import Pair, PairSource
    >>> PassStats().summary()
    'attribute pass: 0 videos, 0 pairs; computed 0, from cache 0'
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.content_hash import clip_content_hash
from ..core.engines import Engine
from ..core.progress import progress_bar
from .attribute_table import AttributeRow, AttributeTable, assign_groups
from .attributes import (
    ATTRIBUTES,
    MASK_ATTRIBUTES,
    VIDEO_ATTRIBUTES,
    AttributeOptions,
    VideoScorer,
    canonical_hole,
    mask_attributes,
)
from .cache import AttributeCache
from .fingerprint import source_fingerprint
from .pairs import Pair, PairSource, read_hole, read_pair


@dataclass(frozen=True)
class VideoTask:
    """One video's work: where its frames are, its pairs' (mask id, source), the options and the cache folder."""

    clip_id: str
    frames_from: PairSource
    masks: tuple[tuple[str, PairSource], ...]
    options: AttributeOptions
    cache_root: str | None
    cache_writable: bool = True


@dataclass
class VideoResult:
    """A task's scores (video attributes; mask id -> foreground attributes) and what it cost."""

    clip_id: str
    video: dict[str, float]
    masks: dict[str, dict[str, float]]
    seconds: dict[str, float] = field(default_factory=dict)
    computed: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)
    write_error: str | None = None


@dataclass
class PassStats:
    """What the pass cost: seconds per attribute (computing, summed over tasks), read/hash seconds, counts."""

    videos: int = 0
    pairs: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    computed: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)
    wall_seconds: float = 0.0
    damaged: list[str] = field(default_factory=list)
    write_error: str | None = None
    metric_values: tuple[int, int] | None = None  # with predictions: (served from the cache, scored and stored)

    def add(self, r: VideoResult) -> None:
        for name, table in (("seconds", r.seconds), ("computed", r.computed), ("cached", r.cached)):
            mine = getattr(self, name)
            for k, v in table.items():
                mine[k] = mine.get(k, 0) + v
        self.damaged += r.damaged
        self.write_error = self.write_error or r.write_error

    def notes(self) -> list[str]:
        """What the run should say about the cache: damaged entries recomputed, writes that failed.

        >>> PassStats(damaged=["c/ab/ab1.json"]).notes()
        ['attribute cache: 1 damaged entry (checksum mismatch) recomputed and rewritten: c/ab/ab1.json']
        """
        out = []
        if self.damaged:
            shown = ", ".join(self.damaged[:5]) + (f" and {len(self.damaged) - 5} more" if len(self.damaged) > 5
                                                   else "")
            out.append(f"attribute cache: {len(self.damaged)} damaged entr{'y' if len(self.damaged) == 1 else 'ies'} "
                       f"(checksum mismatch) recomputed and rewritten: {shown}")
        if self.write_error:
            out.append(f"attribute cache: could not be written ({self.write_error}); scores were computed but not "
                       "stored")
        return out

    def summary(self) -> str:
        """One line: videos, pairs, computed and cached scores."""
        text = (f"attribute pass: {self.videos} videos, {self.pairs} pairs; computed {sum(self.computed.values())}, "
                f"from cache {sum(self.cached.values())}")
        if self.metric_values is not None:
            text += (f"; metric values: {self.metric_values[0]} (method, pair) from cache, {self.metric_values[1]} "
                     "scored")
        return text


def _cached(cache: AttributeCache | None, attr: str, content: str, options_key: str, compute,
            result: VideoResult) -> float:
    key = cache.key(attr, content, options_key) if cache is not None else ""
    value = cache.load(key) if cache is not None else None
    if value is not None:
        result.cached[attr] = result.cached.get(attr, 0) + 1
        return value
    start = time.perf_counter()
    value = float(compute())
    result.seconds[attr] = result.seconds.get(attr, 0.0) + time.perf_counter() - start
    result.computed[attr] = result.computed.get(attr, 0) + 1
    if cache is not None:
        cache.save(key, value)
    return value


def _add_time(result: VideoResult, start: float) -> None:
    result.seconds["read_and_hash"] = result.seconds.get("read_and_hash", 0.0) + time.perf_counter() - start


def _from_fingerprint(cache: AttributeCache | None, source: PairSource, what: str, attrs: Sequence[str],
                      options_key: str, result: VideoResult) -> tuple[dict[str, float] | None, str | None]:
    """The scores of ``attrs`` found through the stored files' fingerprint (no decoding), and the fingerprint."""
    if cache is None:
        return None, None
    start = time.perf_counter()
    fingerprint = source_fingerprint(source, what)
    content = cache.load_hash(fingerprint) if fingerprint else None
    values: dict[str, float] | None = None
    if content:
        values = {}
        for a in attrs:
            v = cache.load(cache.key(a, content, options_key))
            if v is None:
                values = None
                break
            values[a] = v
    _add_time(result, start)
    for a in values or ():
        result.cached[a] = result.cached.get(a, 0) + 1
    return values, fingerprint


def _mask_scores(hole: np.ndarray, cache: AttributeCache | None, fingerprint: str | None,
                 result: VideoResult) -> dict[str, float]:
    start = time.perf_counter()
    hole = canonical_hole(hole)
    content = clip_content_hash(hole)
    if cache is not None and fingerprint:
        cache.save_hash(fingerprint, content)
    _add_time(result, start)
    memo: dict[str, float] = {}

    def compute(attr: str):
        def run() -> float:
            if not memo:
                memo.update(mask_attributes(hole))
            return memo[attr]
        return run

    return {a: _cached(cache, a, content, "", compute(a), result) for a in MASK_ATTRIBUTES}


def _video_scores(task: VideoTask, cache: AttributeCache | None,
                  result: VideoResult) -> tuple[dict[str, float], np.ndarray | None]:
    """The video attributes (and the first pair's hole when the frames had to be decoded)."""
    options_key = task.options.key()
    found, fingerprint = _from_fingerprint(cache, task.frames_from, "frames", VIDEO_ATTRIBUTES, options_key, result)
    if found is not None:
        return found, None
    start = time.perf_counter()
    frames, first_hole = read_pair(task.frames_from)
    content = clip_content_hash(frames)
    if cache is not None and fingerprint:
        cache.save_hash(fingerprint, content)
    _add_time(result, start)
    scorer = VideoScorer(frames, task.options)  # camera motion first; scene motion reuses its features
    return {attr: _cached(cache, attr, content, options_key, lambda a=attr: scorer.score(a), result)
            for attr in VIDEO_ATTRIBUTES}, first_hole


def score_video(task: VideoTask) -> VideoResult:
    """Run one :class:`VideoTask` (an engine's task function): a warm cache answers from the stored files'
    fingerprints without decoding them."""
    cache = AttributeCache(task.cache_root, writable=task.cache_writable) if task.cache_root else None
    result = VideoResult(task.clip_id, {}, {})
    result.video, first_hole = _video_scores(task, cache, result)
    for i, (mask_id, source) in enumerate(task.masks):
        found, fingerprint = _from_fingerprint(cache, source, "hole", MASK_ATTRIBUTES, "", result)
        if found is None:
            start = time.perf_counter()
            hole = first_hole if i == 0 and first_hole is not None else read_hole(source)
            _add_time(result, start)
            found = _mask_scores(hole, cache, fingerprint, result)
        result.masks[mask_id] = found
    if cache is not None:
        result.damaged = [str(p) for p in dict.fromkeys(cache.damaged)]
        result.write_error = cache.write_error
    return result


def video_tasks(pairs: Sequence[Pair], options: AttributeOptions, cache_root: str | Path | None,
                cache_writable: bool = True) -> list[VideoTask]:
    """One task per distinct clip id (in first-appearance order) holding all of its pairs."""
    by_clip: dict[str, list[Pair]] = {}
    for p in pairs:
        by_clip.setdefault(p.clip_id, []).append(p)
    root = str(cache_root) if cache_root is not None else None
    resolved = options.resolved()
    return [VideoTask(c, ps[0].source, tuple((p.mask_id, p.source) for p in ps), resolved, root, cache_writable)
            for c, ps in by_clip.items()]


def compute_attributes(
    pairs: Sequence[Pair],
    *,
    options: AttributeOptions | None = None,
    cache_dir: str | Path | None = None,
    cache_writable: bool = True,
    engine: Engine = Engine(),
    progress: bool = True,
) -> tuple[AttributeTable, PassStats]:
    """The attribute table of ``pairs`` (groups assigned) and the pass's costs.

    ``cache_dir``: the attribute cache folder (None: no cache; ``cache_writable=False``: read only). ``engine``:
    where the video tasks run.

        >>> import tempfile, numpy as np
        >>> from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
        >>> d = tempfile.mkdtemp()
        >>> _ = write_frame_pngs(np.zeros((12, 32, 32, 3), np.uint8), d + "/v"); _ = write_mask_pngs(
        ...     np.ones((12, 32, 32), bool), d + "/v")
        >>> from devil_dataset.diagnosis.pairs import directory_pairs
        >>> table, stats = compute_attributes(directory_pairs(d), options=AttributeOptions((32, 32), "orb"),
        ...                                   progress=False)
        >>> table.rows[0].scores["fg_size"], stats.computed["camera_motion"]
        (1.0, 1)
    """
    options = (options or AttributeOptions()).resolved()
    tasks = video_tasks(pairs, options, cache_dir, cache_writable)
    stats = PassStats(videos=len(tasks), pairs=len(pairs))
    bar = progress_bar(total=len(tasks), desc="attributes", unit="video", enabled=progress)
    start = time.perf_counter()
    by_clip: dict[str, VideoResult] = {}
    for r in engine.map_ordered(score_video, tasks, on_result=lambda _: bar.update(1)):
        by_clip[r.clip_id] = r
        stats.add(r)
    bar.close()
    stats.wall_seconds = time.perf_counter() - start
    rows = []
    for p in pairs:
        r = by_clip[p.clip_id]
        scores = {a: r.video.get(a, math.nan) if a in VIDEO_ATTRIBUTES else r.masks[p.mask_id].get(a, math.nan)
                  for a in ATTRIBUTES}
        rows.append(AttributeRow(p.clip_id, p.mask_id, scores, {}, p.configs))
    opts = {"scoring_size": list(options.scoring_size), "detector": options.detector,
            "scene_mode": options.scene_mode, "flow": options.flow}
    return assign_groups(AttributeTable(rows, {}, opts)), stats


__all__ = ["PassStats", "VideoResult", "VideoTask", "compute_attributes", "score_video", "video_tasks"]

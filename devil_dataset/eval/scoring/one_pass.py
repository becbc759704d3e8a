"""One pass over the videos feeding every requested metric (bounded memory: one video at a time).

The core is :func:`evaluate`, which takes any iterable of :class:`~devil_dataset.eval.metrics.metric.VideoSample`
and metric objects, and :func:`evaluate_methods`, which scores several methods in one pass over the ground truth
(their ground-truth work prepared once per clip, read ahead on another thread); :func:`collect` turns the metrics'
state into an :class:`Evaluation`. :mod:`devil_dataset.eval.scoring.evaluate` wraps them for slices, datasets and
directories.

    >>> import numpy as np
    >>> from devil_dataset.eval.metrics import EvalOptions, VideoSample, build_metrics
    >>> rng = np.random.default_rng(0)
    >>> gt = rng.integers(0, 256, (3, 64, 64, 3), dtype=np.uint8); hole = np.zeros((3, 64, 64), bool)
    >>> hole[:, 20:40, 20:40] = True
    >>> metrics, skipped = build_metrics(["psnr", "ssim"], EvalOptions())
    >>> ev = evaluate([VideoSample("a", gt, gt, hole)], metrics, progress=False)
    >>> ev.summary["ssim"], ev.clipped["psnr"]
    (1.0, ['a'])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...core.cpu_pins import cpu_pinned
from ...core.errors import DevilError
from ...core.hole_check import check_hole, hole_problem
from ...core.prefetch import prefetched
from ...core.progress import progress_bar
from ..kernels.device import resolve_device
from ..kernels.pixel import clip_psnr_values
from ..metrics.metric import VideoMetric, VideoSample
from .gt_cache import GroundTruthCache, cached_prepare_clip


@dataclass
class Evaluation:
    """What one pass produced: slice-level ``summary``, per-video ``videos``, and what was clipped/skipped.

    ``videos`` maps clip id -> {key: value}; PSNR-type values there are the clipped values the summary averages
    (``clipped`` lists, per key, the clips whose raw value was infinite). NaN marks "no value" (JSON null).
    ``set_level_uncertainty``: key -> interval of the set-level metrics (FID, VFID) whose ``uncertainty()`` gave
    one (``EvalOptions.set_level_ci``; the results' ``"uncertainty"`` block beside the per-video keys).
    """

    summary: dict[str, float]
    videos: dict[str, dict[str, float]]
    clipped: dict[str, list[str]] = field(default_factory=dict)
    metric_provenance: dict[str, dict] = field(default_factory=dict)
    num_frames: int = 0
    set_level_uncertainty: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: clip id -> :func:`~devil_dataset.core.hole_check.hole_problem` of the clips whose masks look inverted
    hole_problems: dict[str, str] = field(default_factory=dict)


def _to_float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def update_metrics(metrics: Mapping[str, VideoMetric], video: VideoSample,
                   prepared: Mapping[str, object] | None = None) -> dict[str, float]:
    """Update every metric with ``video`` (passing its prepared ground-truth work); returns the video's row."""
    prepared = prepared or {}
    row: dict[str, float] = {}
    for name, metric in metrics.items():
        p = prepared.get(name)
        values = metric.update(video) if p is None else metric.update(video, p)
        row.update({k: _to_float(v) for k, v in values.items()})
    return row


def prepare_clip(metrics: Mapping[str, VideoMetric], gt: np.ndarray, hole: np.ndarray | None,
                 names: Iterable[str] | None = None) -> dict[str, object]:
    """Ground-truth-only work of every metric that declares ``prepare`` (shared by the methods of a clip), or of
    those in ``names`` only.

    ``hole=None`` prepares what depends on the frames only; :func:`prepared_for_hole` adds a hole later.
    """
    out = {}
    wanted = None if names is None else set(names)
    for name, metric in metrics.items():
        if wanted is not None and name not in wanted:
            continue
        prepare = getattr(metric, "prepare", None)
        p = prepare(gt, hole) if prepare is not None else None
        if p is not None:
            out[name] = p
    return out


def prepared_for_hole(prepared: Mapping[str, object], hole: np.ndarray) -> dict[str, object]:
    """``prepared`` (from ``prepare_clip(metrics, gt, None)``) completed with the work that depends on ``hole``."""
    return {name: p.for_hole(hole) if hasattr(p, "for_hole") else p for name, p in prepared.items()}


def collect(metrics: Mapping[str, VideoMetric], per_video: dict[str, dict[str, float]], frames: int) -> Evaluation:
    """Slice-level values, provenance and PSNR clipping of one method's per-video rows (after the updates); the
    intervals of set-level metrics that offer them (``uncertainty(computed)``: FID, VFID with ``set_level_ci``)."""
    summary: dict[str, float] = {}
    provenance: dict[str, dict] = {}
    clipped: dict[str, list[str]] = {}
    set_level: dict[str, dict[str, Any]] = {}
    for name, metric in metrics.items():
        computed = {k: _to_float(v) for k, v in metric.compute().items()}
        summary.update(computed)
        intervals = getattr(metric, "uncertainty", None)
        if callable(intervals):
            set_level.update(intervals(computed))
        provenance[name] = metric.provenance()
        for key in getattr(metric, "clip_keys", ()):
            ids = [c for c in per_video if key in per_video[c]]
            raw = [per_video[c][key] for c in ids]
            values, _ = clip_psnr_values(raw)
            inf_ids = [c for c, r in zip(ids, raw) if math.isinf(r)]
            if inf_ids:
                clipped[key] = inf_ids
            for c, v in zip(ids, values):
                per_video[c][key] = float(v)
    return Evaluation(summary, per_video, clipped, provenance, frames, set_level)


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def evaluate_methods(
    clips: Iterable[tuple[str, np.ndarray, np.ndarray]],
    predictions: Mapping[str, Callable[[str], np.ndarray]],
    metrics: Mapping[str, Mapping[str, VideoMetric]],
    *,
    total: int | None = None,
    progress: bool = True,
) -> dict[str, Evaluation]:
    """Score several methods in one pass over the ground truth; returns method -> :class:`Evaluation`.

    ``clips`` yields (clip id, gt uint8 [T,H,W,3], hole bool [T,H,W]); ``predictions[method](clip_id)`` reads
    that method's prediction; ``metrics[method]`` holds that method's metric objects (same names for every
    method). Ground-truth-only work (``prepare``: flow, occlusion, GT features) runs once per clip.

    >>> from devil_dataset.eval.metrics import EvalOptions, build_metrics
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> preds = {"black": lambda c: gt, "white": lambda c: np.full_like(gt, 255)}
    >>> ms = {m: build_metrics(["psnr"], EvalOptions())[0] for m in preds}
    >>> out = evaluate_methods([("a", gt, hole)], preds, ms, progress=False)
    >>> round(out["white"].summary["psnr"], 2), out["black"].clipped
    (12.04, {'psnr': ['a']})
    """
    problems: dict[str, dict[str, str]] = {m: {} for m in predictions}
    per_video, frames = _one_pass(clips, predictions, metrics, total=total, progress=progress, problems=problems)
    evs = {m: collect(metrics[m], per_video[m], frames) for m in predictions}
    for m, ev in evs.items():
        ev.hole_problems = problems[m]
    return evs


def _one_pass(clips, predictions, metrics, *, total, progress, gt_cache: GroundTruthCache | None = None,
              problems: dict[str, dict[str, str]] | None = None
              ) -> tuple[dict[str, dict[str, dict[str, float]]], int]:
    """The updates of :func:`evaluate_methods`: raw per-video rows per method and the number of GT frames.

    ``gt_cache``: the cached metrics' ground-truth work is read from it or computed and stored there. ``problems``
    (method -> {}): receives each clip whose masks look inverted (:mod:`devil_dataset.core.hole_check`)."""

    methods = list(predictions)
    if not methods:
        raise DevilError("evaluate_methods: predictions is empty")
    per_video: dict[str, dict[str, dict[str, float]]] = {m: {} for m in methods}
    frames = 0
    first = metrics[methods[0]]

    def load(clip_id: str, gt: np.ndarray, hole: np.ndarray):
        preds = {m: predictions[m](clip_id) for m in methods}
        if gt_cache is not None:
            prepared = cached_prepare_clip(first, gt, gt_cache, others=len(methods) > 1, hole=hole)
        else:
            # one method: only the work worth moving off the scoring thread (flows, features: what the metrics
            # declare with ``prepares_ground_truth``), as the cache does
            prepared = prepare_clip(first, gt, hole, None if len(methods) > 1 else
                                    [n for n, m in first.items() if getattr(m, "prepares_ground_truth", False)])
        return clip_id, gt, hole, preds, prepared

    # the next clip is read, decoded and its ground-truth work prepared (the warp error's flows on the CPU, or read
    # from the cache) while this one is scored: on another core, or on the CPU while the GPU computes
    loaded = prefetched((load(*clip) for clip in clips), name="devil-evaluate-read")
    bar = progress_bar(loaded, total=total, desc="evaluate", unit="video", enabled=progress)
    for clip_id, gt, hole, preds, prepared in bar:
        if clip_id in per_video[methods[0]]:
            raise DevilError(f"clip {clip_id}: appears twice in the evaluation")
        for m in methods:
            if problems is not None:
                problem = hole_problem(check_hole(hole, preds[m], gt))
                if problem:
                    problems.setdefault(m, {})[clip_id] = problem
            video = VideoSample(clip_id, gt, preds.pop(m), hole)
            per_video[m][clip_id] = update_metrics(metrics[m], video, prepared)
            del video
        frames += int(gt.shape[0])
    return per_video, frames


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def evaluate(
    videos: Iterable[VideoSample],
    metrics: Mapping[str, VideoMetric],
    *,
    total: int | None = None,
    progress: bool = True,
) -> Evaluation:
    """Feed every video once to every metric, then collect slice-level values (see module example).

    Memory: only the current video (and whatever state the metrics keep, e.g. FID features) is held.
    """

    per_video: dict[str, dict[str, float]] = {}
    problems: dict[str, str] = {}
    frames = 0
    bar = progress_bar(videos, total=total, desc="evaluate", unit="video", enabled=progress)
    for video in bar:
        if video.clip_id in per_video:
            raise DevilError(f"clip {video.clip_id}: appears twice in the evaluation")
        problem = hole_problem(check_hole(video.hole, video.pred, video.gt))
        if problem:
            problems[video.clip_id] = problem
        per_video[video.clip_id] = update_metrics(metrics, video, {})
        frames += video.num_frames
        del video
    ev = collect(metrics, per_video, frames)
    ev.hole_problems = problems
    return ev


def evaluation_from_values(
    metrics: Mapping[str, VideoMetric], clip_values: Sequence[tuple[str, int, Mapping[str, float]]]
) -> Evaluation:
    """The :class:`Evaluation` of stored per-video values (clip id, frames, {key: value}), e.g. a resumed run.

    Only per-video metrics (a list of values per key) can be rebuilt this way; their ``compute`` then
    aggregates exactly as after the updates.

    >>> from devil_dataset.eval.metrics import EvalOptions, build_metrics
    >>> ms, _ = build_metrics(["psnr"], EvalOptions())
    >>> evaluation_from_values(ms, [("a", 3, {"psnr": 20.0}), ("b", 3, {"psnr": 30.0})]).summary
    {'psnr': 25.0}
    """
    per_video: dict[str, dict[str, float]] = {}
    for name, metric in metrics.items():
        state = getattr(metric, "values", None)
        for _clip_id, _, row in clip_values:
            if isinstance(state, dict):
                for k in metric.keys:
                    state[k].append(row[k])
            elif isinstance(state, list) and len(metric.keys) == 1:
                state.append(row[metric.keys[0]])
            else:
                raise DevilError(f"metric {name}: set-level state cannot be rebuilt from per-video values")
    frames = 0
    for clip_id, n, row in clip_values:
        keys = [k for m in metrics.values() for k in m.keys]
        per_video[clip_id] = {k: _to_float(row[k]) for k in keys}
        frames += int(n)
    return collect(metrics, per_video, frames)


__all__ = ["Evaluation", "collect", "evaluate", "evaluate_methods", "evaluation_from_values", "prepare_clip",
           "prepared_for_hole", "resolve_device", "update_metrics"]

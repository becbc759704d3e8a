"""One pass over the videos feeding every requested metric (bounded memory: one video at a time).

The core is :func:`evaluate`, which takes any iterable of :class:`~devil_dataset.eval.protocol.VideoSample`
and metric objects; :func:`evaluate_directory` and :func:`evaluate_dataset` wrap it for the two input modes
and return the results document of :mod:`devil_dataset.eval.results`.

    >>> import numpy as np
    >>> from devil_dataset.eval.protocol import VideoSample, EvalOptions
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
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..core.engines import Engine
from ..core.errors import DevilError, UnknownNameError, WeightsMissingError
from ..core.prefetch import prefetched
from .gt_cache import CACHED_PREPARES, GroundTruthCache, cached_prepare_clip, open_gt_cache
from .pixel import clip_psnr_values
from .protocol import EvalOptions, VideoMetric, VideoSample
from .registry import DEVIL_METRICS, METRICS, metric_entry

if TYPE_CHECKING:
    from .composite import PredictionStore


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


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``/``cuda`` pass through (checked)."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise UnknownNameError(f"device: unknown device {device!r}; valid: auto, cpu, cuda")
    if device == "cpu":
        return device
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise DevilError(f"device {device!r}: no CUDA device is available")
    return device


def build_metrics(
    names: Sequence[str] | None, options: EvalOptions
) -> tuple[dict[str, VideoMetric], dict[str, str]]:
    """Construct the requested metrics; return (name -> metric, skipped name -> reason).

    ``names`` are registry names (``warp_error``) or result keys (``warp_error_mask``).
    ``names=None`` means every DEVIL metric (SPEC section 7) that can run here: a metric whose weights are
    missing (:class:`WeightsMissingError`) or whose implementation is not installed is skipped with its reason.
    A metric named explicitly must run: its error is raised.
    """
    explicit = names is not None
    by_key = {k: e.name for e in METRICS.values() for k in e.keys}  # result keys work as names too
    wanted = list(dict.fromkeys(by_key.get(n, n) if n not in METRICS else n for n in names)) if names is not None \
        else list(DEVIL_METRICS)
    metrics: dict[str, VideoMetric] = {}
    skipped: dict[str, str] = {}
    missing: list[str] = []  # explicit metrics whose weights are missing or corrupt: all named in one error
    errors: list[WeightsMissingError] = []
    for name in wanted:
        try:
            entry = metric_entry(name)
        except UnknownNameError as exc:
            raise UnknownNameError(f"metric_names: {exc}") from None
        try:
            metrics[name] = entry.create(options)
        except WeightsMissingError as exc:
            if explicit:
                missing.append(f"metric {name}: {exc}")
                errors.append(exc)
                continue
            skipped[name] = str(exc)
        except (ImportError, AttributeError) as exc:
            if explicit:
                raise DevilError(f"metric {name}: implementation not available ({exc})") from None
            skipped[name] = f"implementation not available ({exc})"
    if missing:
        # the most specific type all the errors share (every one corrupt -> WeightsCorruptError)
        kind = type(errors[0]) if all(type(e) is type(errors[0]) for e in errors) else WeightsMissingError
        raise kind("; ".join(missing) if len(missing) == 1 else
                   f"{len(missing)} metrics miss their weights:\n  " + "\n  ".join(missing))
    return metrics, skipped


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


#: Provenance keys that say where a value was computed, not what it is (the backends give the same values).
_VALUE_NEUTRAL_PROVENANCE = frozenset({"pixel_backend", "pixel_device"})


def scoring_identity(metric_names: Sequence[str], options: EvalOptions) -> str:
    """A sha256 hex of what makes the per-video values of ``metric_names`` under ``options`` what they are: each
    metric's provenance (implementation, modes, arithmetic, flow backend, weights), without where it ran. Stored
    per-video values (:class:`~devil_dataset.eval.results.ValuesCache`) are reused only under the same identity.

    >>> a = scoring_identity(["psnr", "ssim"], EvalOptions())
    >>> a == scoring_identity(["psnr", "ssim"], EvalOptions(pixel_backend="torch"))
    True
    >>> a == scoring_identity(["psnr", "ssim"], EvalOptions(parity="corrected"))
    False
    """
    import hashlib
    import json

    metrics, _ = build_metrics(list(metric_names), options)
    what = {name: {k: v for k, v in metric.provenance().items() if k not in _VALUE_NEUTRAL_PROVENANCE}
            for name, metric in sorted(metrics.items())}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


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

    >>> from devil_dataset.eval.protocol import EvalOptions
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> preds = {"black": lambda c: gt, "white": lambda c: np.full_like(gt, 255)}
    >>> ms = {m: build_metrics(["psnr"], EvalOptions())[0] for m in preds}
    >>> out = evaluate_methods([("a", gt, hole)], preds, ms, progress=False)
    >>> round(out["white"].summary["psnr"], 2), out["black"].clipped
    (12.04, {'psnr': ['a']})
    """
    per_video, frames = _one_pass(clips, predictions, metrics, total=total, progress=progress)
    return {m: collect(metrics[m], per_video[m], frames) for m in predictions}


def _one_pass(clips, predictions, metrics, *, total, progress,
              gt_cache: GroundTruthCache | None = None) -> tuple[dict[str, dict[str, dict[str, float]]], int]:
    """The updates of :func:`evaluate_methods`: raw per-video rows per method and the number of GT frames.

    ``gt_cache``: the cached metrics' ground-truth work is read from it or computed and stored there."""
    from ..core.progress import progress_bar

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
            # one method: only the work worth moving off the scoring thread (flows, features), as the cache does
            prepared = prepare_clip(first, gt, hole, None if len(methods) > 1 else CACHED_PREPARES)
        return clip_id, gt, hole, preds, prepared

    # the next clip is read, decoded and its ground-truth work prepared (the warp error's flows on the CPU, or read
    # from the cache) while this one is scored: on another core, or on the CPU while the GPU computes
    loaded = prefetched((load(*clip) for clip in clips), name="devil-evaluate-read")
    bar = progress_bar(loaded, total=total, desc="evaluate", unit="video", enabled=progress)
    for clip_id, gt, hole, preds, prepared in bar:
        if clip_id in per_video[methods[0]]:
            raise DevilError(f"clip {clip_id}: appears twice in the evaluation")
        for m in methods:
            video = VideoSample(clip_id, gt, preds.pop(m), hole)
            per_video[m][clip_id] = update_metrics(metrics[m], video, prepared)
            del video
        frames += int(gt.shape[0])
    return per_video, frames


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
    from ..core.progress import progress_bar

    per_video: dict[str, dict[str, float]] = {}
    frames = 0
    bar = progress_bar(videos, total=total, desc="evaluate", unit="video", enabled=progress)
    for video in bar:
        if video.clip_id in per_video:
            raise DevilError(f"clip {video.clip_id}: appears twice in the evaluation")
        per_video[video.clip_id] = update_metrics(metrics, video, {})
        frames += video.num_frames
        del video
    return collect(metrics, per_video, frames)


def evaluation_from_values(
    metrics: Mapping[str, VideoMetric], clip_values: Sequence[tuple[str, int, Mapping[str, float]]]
) -> Evaluation:
    """The :class:`Evaluation` of stored per-video values (clip id, frames, {key: value}), e.g. a resumed run.

    Only per-video metrics (a list of values per key) can be rebuilt this way; their ``compute`` then
    aggregates exactly as after the updates.

    >>> from devil_dataset.eval.protocol import EvalOptions
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


def _finish(
    ev: Evaluation, metrics, skipped, options: EvalOptions, method: str, slice_name: str | None, inputs: dict,
    report: bool = True,
) -> dict:
    from .results import build_results

    for name, reason in (skipped.items() if report else ()):
        print(f"devil evaluate: skipped metric {name}: {reason}", file=sys.stderr)
    return build_results(ev, method=method, slice_name=slice_name, inputs=inputs, options=options,
                         metrics=list(metrics), skipped=skipped)


def _prepare(metric_names: Sequence[str] | None, options: EvalOptions) -> tuple[EvalOptions, dict, dict]:
    needs_torch = metric_names is None or any(n not in ("psnr", "ssim", "pcons") for n in metric_names)
    device = resolve_device(options.device) if needs_torch else ("cpu" if options.device == "auto" else options.device)
    options = replace(options, device=device)
    metrics, skipped = build_metrics(metric_names, options)
    if not metrics:
        raise DevilError("no metric can run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return options, metrics, skipped


def evaluate_directory(
    gt_dir: str | Path,
    pred_dir: str | Path,
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    method: str | None = None,
    slice_name: str | None = None,
    progress: bool = True,
) -> dict:
    """Directory mode: release-layout ground truth/masks vs predictions; returns the results document.

    Validation of every clip happens before any metric is built or run.
    """
    from .composite import DirectorySource

    source = DirectorySource(gt_dir, pred_dir)
    source.validate()
    options, metrics, skipped = _prepare(metric_names, options or EvalOptions())
    ev = evaluate(source, metrics, total=len(source), progress=progress)
    inputs = {"mode": "directory", "gt_dir": str(gt_dir), "predictions": str(pred_dir),
              "prediction_layout": source.predictions.layout}
    return _finish(ev, metrics, skipped, options, method or Path(pred_dir).resolve().name, slice_name, inputs)


def _slice_rows(dataset: str, config: str, columns: Sequence[str] | None = None):
    """Rows of a slice from the dataset loader (:func:`devil_dataset.data.iter_slice`), one clip at a time."""
    from ..data import iter_slice

    return iter_slice(dataset, config, columns=columns)


def _row_fields(row) -> tuple[str, np.ndarray, np.ndarray]:
    if isinstance(row, VideoSample):
        return row.clip_id, row.gt, row.hole
    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    clip_id = get("clip_id")
    frames = get("frames")
    hole = get("hole") if get("hole") is not None else get("mask")
    if clip_id is None or frames is None or hole is None:
        raise DevilError("dataset rows must carry clip_id, frames and hole")
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:  # a cast would score float NaN as black and wrap 16-bit values
        nan = " (contains NaN)" if frames.dtype.kind == "f" and np.isnan(frames).any() else ""
        raise DevilError(f"clip {clip_id}: frames are {frames.dtype}{nan}, expected uint8 RGB (0..255)")
    return str(clip_id), frames, np.asarray(hole, bool)


def _row_info(row):
    from .composite import VideoShapeInfo

    get: Callable[..., Any] = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    if all(get(k) is not None for k in ("clip_id", "num_frames", "height", "width")) and get("frames") is None:
        return VideoShapeInfo(str(get("clip_id")), int(get("num_frames")), (int(get("width")), int(get("height"))))
    clip_id, frames, _ = _row_fields(row)
    return VideoShapeInfo(clip_id, int(frames.shape[0]), (int(frames.shape[2]), int(frames.shape[1])))


def _score_rows(rows: Iterable, stores: Mapping[str, PredictionStore], metric_names: Sequence[str] | None,
                options: EvalOptions, metrics: Mapping[str, Mapping[str, VideoMetric]] | None = None, *,
                total: int | None = None, progress: bool = False, gt_cache: GroundTruthCache | None = None,
                outside: dict[str, list[str]] | None = None):
    """One pass over ``rows`` for every method of ``stores``; returns (raw per-video rows, frames, metrics).

    ``outside`` (method -> [], for the methods without an inpaint manifest) receives the clips whose prediction
    differs from the ground truth outside this slice's hole (:func:`~.composite.differs_outside_hole`).
    """
    from .composite import differs_outside_hole

    if metrics is None:
        metrics = {m: build_metrics(metric_names, options)[0] for m in stores}
    current: dict[str, Any] = {}  # the clip being scored: its ground truth and hole, for the outside-hole check

    def clips():
        for row in rows:
            fields = _row_fields(row)
            current["gt"], current["hole"] = fields[1], fields[2]
            yield fields

    def reader(m: str, store: PredictionStore) -> Callable[[str], np.ndarray]:
        def read(clip_id: str) -> np.ndarray:
            pred = store.read(clip_id)
            if outside is not None and m in outside and differs_outside_hole(pred, current["gt"], current["hole"]):
                outside[m].append(clip_id)
            return pred
        return read

    per_video, frames = _one_pass(clips(), {m: reader(m, store) for m, store in stores.items()}, metrics,
                                  total=total, progress=progress, gt_cache=gt_cache)
    return per_video, frames, metrics


def _manifest_checks(stores: Mapping[str, PredictionStore], predictions: Mapping[str, str | Path], config: str,
                     hole_rows: Callable[[], Iterable]) -> list[str]:
    """Check every predictions folder with an inpaint manifest against the slice's hole masks
    (:func:`~.composite.check_slice_manifest`); return the methods without one (checked while scoring)."""
    from ..inpaint.run import hole_fingerprint
    from .composite import check_slice_manifest

    manifests = {m: store.inpaint_manifest() for m, store in stores.items()}
    with_clips = [m for m, man in manifests.items() if man.get("clips")]
    if with_clips:
        fingerprints = {}
        for row in hole_rows():
            clip_id, hole = _row_id_hole(row)
            fingerprints[clip_id] = hole_fingerprint(hole)
        for m in with_clips:
            check_slice_manifest(predictions[m], manifests[m], config, fingerprints)
    return [m for m in stores if m not in with_clips]


def _row_id_hole(row) -> tuple[str, np.ndarray]:
    """A row's clip id and hole (bool [T, H, W]), without its frames."""
    if isinstance(row, VideoSample):
        return row.clip_id, row.hole
    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    hole = get("hole") if get("hole") is not None else get("mask")
    return str(get("clip_id")), np.asarray(hole, bool)


def _warn_outside(outside: Mapping[str, list[str]], predictions: Mapping[str, str | Path], config: str,
                  num_clips: int) -> None:
    """The warning of predictions without a manifest that differ from the ground truth outside the hole."""
    for m, ids in outside.items():
        if ids:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            print(f"devil evaluate: warning: {predictions[m]}: the predictions of {len(ids)} of {num_clips} clips "
                  f"differ from the ground truth outside slice {config}'s hole ({shown}); were they made for another "
                  "slice? (the folder has no .devil-inpaint.json to check)", file=sys.stderr)


def _chunk_task(dataset: str, config: str, ids: list[str], rows: list | None, pred_paths: dict[str, str],
                metric_names: Sequence[str] | None, options: EvalOptions, gt_cache: GroundTruthCache | None = None,
                watch: Sequence[str] = ()):
    """One part of a parallel evaluation: score the clips ``ids`` (read here) and send back per-video rows,
    metric states, frames, the ground-truth cache's counts (the worker opens the cache folder it was sent) and, for
    the methods in ``watch`` (no inpaint manifest), the clips whose prediction differs outside the slice's hole."""
    from .composite import PredictionStore

    wanted = set(ids)
    source = rows if rows is not None else _slice_rows(dataset, config, ("clip_id", "frames", "hole"))
    mine = (r for r in source if _row_fields_id(r) in wanted)
    stores = {m: PredictionStore(p) for m, p in pred_paths.items()}
    metrics = {m: build_metrics(metric_names, options)[0] for m in stores}
    for per_method in metrics.values():
        for name, metric in per_method.items():
            if not hasattr(metric, "state_dict"):
                raise DevilError(f"metric {name}: its state cannot be merged, score it in one process (jobs 1)")
    outside: dict[str, list[str]] = {m: [] for m in watch}
    per_video, frames, metrics = _score_rows(mine, stores, metric_names, options, metrics, gt_cache=gt_cache,
                                             outside=outside)
    states = {m: {n: x.state_dict() for n, x in ms.items()} for m, ms in metrics.items()}
    return per_video, states, frames, (gt_cache.stats if gt_cache is not None else None), outside


def _chunk_task_of(task: tuple):
    """:func:`_chunk_task` of one argument tuple (a stage function for the engines)."""
    return _chunk_task(*task)


def _row_fields_id(row) -> str:
    if isinstance(row, VideoSample):
        return row.clip_id
    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    return str(get("clip_id"))


def prediction_method_name(predictions: str | Path) -> str:
    """The method name of a predictions folder: the ``run.method`` its ``.devil-inpaint.json`` records (``devil
    inpaint`` and ``devil benchmark`` write it), else the folder's name (``preds/<method>/<slice>/`` is named
    after its method, not its slice).

    >>> prediction_method_name("preds/cpnet")
    'cpnet'
    """
    from ..inpaint.run import recorded_method

    return recorded_method(predictions) or Path(predictions).resolve().name


def evaluate_slice(
    dataset: str,
    config: str,
    predictions: Mapping[str, str | Path] | Sequence[str | Path],
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    progress: bool = True,
    rows: Iterable | None = None,
    engine: Engine = Engine(),
    gt_cache: GroundTruthCache | str | Path | None = None,
) -> dict[str, dict]:
    """Score one or several methods on the slice ``config`` in one pass over its ground truth.

    ``predictions``: method name -> predictions folder, or a list of folders (the method is
    :func:`prediction_method_name`: the one the folder's manifest records, else the folder name).
    Returns method -> results document (one document per method, as ``devil evaluate`` writes them).
    ``engine`` (:func:`devil_dataset.core.engines.get_engine`; default: this process): a parallel engine splits the
    slice into contiguous parts, :meth:`~devil_dataset.core.engines.Engine.workers` of them, scored as its tasks;
    their metric states are merged in slice order (per-video values are identical; FID/VFID agree to ~1e-12
    relative). ``local`` with ``jobs`` N: N parts in the command's worker processes. ``ray``: ``jobs`` parts, or one
    per cluster CPU (per GPU when the cluster has GPUs and ``options.device`` is not ``cpu``; each part then declares
    one GPU); the dataset and predictions must be paths every node sees (or a Hub repo id); the documents are the
    same as the local engine's with the same number of parts.
    ``rows`` replaces the loader (see :func:`evaluate_dataset`).
    ``gt_cache`` (:class:`~devil_dataset.eval.gt_cache.GroundTruthCache` or a folder; default none): the metrics'
    ground-truth work (warp error flows, FID features) is read from it or computed once and stored, for every
    engine (workers open the same folder); the documents are identical with and without it.
    """
    from .composite import PredictionStore, VideoShapeInfo, validate_clips

    cache = open_gt_cache(gt_cache)

    if not isinstance(predictions, Mapping):
        paths = [Path(p) for p in predictions]
        names = [prediction_method_name(p) for p in paths]
        if len(set(names)) != len(names):
            same = sorted({n for n in names if names.count(n) > 1})
            raise DevilError(f"predictions: two folders are both named {', '.join(same)} ({', '.join(map(str, paths))}"
                             "); name each method: --predictions NAME=PATH (in Python: a mapping name -> folder)")
        predictions = dict(zip(names, paths))
    if not predictions:
        raise DevilError("predictions: no method to score")
    stores = {m: PredictionStore(p) for m, p in predictions.items()}
    for m, store in stores.items():
        if store.layout == "single":
            raise DevilError(f"{predictions[m]}: dataset mode needs one folder or video file per clip id")
    rows = list(rows) if rows is not None and engine.parallel else rows

    def row_iter(columns=None):
        return iter(rows) if rows is not None else iter(_slice_rows(dataset, config, columns))

    gt_info: dict[str, VideoShapeInfo] = {}
    for row in row_iter(("clip_id", "num_frames", "height", "width")):
        info = _row_info(row)
        if info.clip_id in gt_info:
            raise DevilError(f"{dataset}: clip {info.clip_id} appears twice in slice {config}")
        gt_info[info.clip_id] = info
    if not gt_info:
        raise DevilError(f"{dataset}: slice {config} has no videos")
    for m, store in stores.items():
        pred_info: dict[str, VideoShapeInfo | None] = {}
        for c, g in gt_info.items():  # every clip is checked; one error lists every offender
            try:
                pred_info[c] = store.info(c)
            except DevilError as exc:
                pred_info[c] = VideoShapeInfo(c, g.num_frames, g.size, problems=(str(exc),))
        validate_clips(gt_info, pred_info, str(predictions[m]))
    # predictions made for another slice (the foreground slices share clip ids with other masks): refused when the
    # folder's inpaint manifest records other masks; without a manifest, flagged while scoring (on every engine)
    watch = _manifest_checks(stores, predictions, config, lambda: row_iter(("clip_id", "hole")))
    outside: dict[str, list[str]] = {m: [] for m in watch}
    options, first, skipped = _prepare(metric_names, options or EvalOptions())
    names = list(first)
    metrics = {m: (first if i == 0 else build_metrics(names, options)[0]) for i, m in enumerate(stores)}
    if not engine.parallel or len(gt_info) < 2:
        per_video, frames, _ = _score_rows(row_iter(("clip_id", "frames", "hole")), stores, names, options, metrics,
                                           total=len(gt_info), progress=progress, gt_cache=cache, outside=outside)
        evs = {m: collect(metrics[m], per_video[m], frames) for m in stores}
        _warn_outside(outside, predictions, config, len(gt_info))
    else:
        evs = _score_parallel(dataset, config, list(gt_info), rows, predictions, names, options, metrics, engine,
                              cache, outside)
        _warn_outside(outside, predictions, config, len(gt_info))
    docs: dict[str, dict] = {}
    for m, ev in evs.items():
        inputs = {"mode": "dataset", "dataset": str(dataset), "config": config, "predictions": str(predictions[m]),
                  "prediction_layout": stores[m].layout}
        docs[m] = _finish(ev, metrics[m], skipped, options, m, config, inputs, report=not docs)
    return docs


def _score_parallel(dataset, config, ids, rows, predictions, names, options, metrics,
                    engine: Engine, gt_cache: GroundTruthCache | None = None,
                    outside: dict[str, list[str]] | None = None) -> dict[str, Evaluation]:
    """Contiguous parts of ``ids``, one task of ``engine`` each; states merged and per-video rows joined in slice
    order; ``outside`` (method -> [] for the methods to watch) receives the parts' outside-hole clips in order."""
    gpu = options.device != "cpu"
    parts = [list(p) for p in np.array_split(np.array(ids, dtype=object), min(engine.workers(gpu=gpu), len(ids)))
             if len(p)]
    by_id: dict[str, Any] | None = None
    if rows is not None:
        by_id = {}
        for r in rows:
            by_id.setdefault(_row_fields_id(r), r)
    paths = {m: str(p) for m, p in predictions.items()}
    watch = tuple(outside or ())
    tasks = [(dataset, config, part, [by_id[c] for c in part] if by_id is not None else None, paths, names, options,
              gt_cache, watch) for part in parts]
    # every part in flight at once; networks load once per part
    results = list(engine.map_ordered(_chunk_task_of, tasks, window=len(tasks), num_gpus=engine.task_gpus(gpu=gpu)))
    for *_, cache_stats, part_outside in results:
        if gt_cache is not None and cache_stats is not None:
            gt_cache.stats.add(cache_stats)
        for m, clip_ids in part_outside.items():
            if outside is not None:
                outside[m].extend(clip_ids)
    out = {}
    for m, per_method in metrics.items():
        per_video: dict[str, dict[str, float]] = {}
        frames = 0
        for videos, states, n, *_ in results:
            per_video.update(videos[m])
            frames += n
            for name, metric in per_method.items():
                metric.merge(states[m][name])
        out[m] = collect(per_method, per_video, frames)
    return out


def evaluate_dataset(
    dataset: str,
    config: str,
    predictions: str | Path,
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    method: str | None = None,
    progress: bool = True,
    rows: Iterable | None = None,
    engine: Engine = Engine(),
    gt_cache: GroundTruthCache | str | Path | None = None,
) -> dict:
    """Dataset mode: score ``predictions`` for the slice ``config`` of a built dataset (folder or Hub repo).

    The slice is read twice through :func:`devil_dataset.data.iter_slice`: its metadata columns (clip_id,
    num_frames, height, width) for validation, then frames and hole (True = hole) one clip at a time for scoring.
    ``rows`` replaces the loader (any re-iterable of rows with clip_id, frames uint8 [T,H,W,3], hole bool [T,H,W]).
    Several methods at once, ``engine``, ``gt_cache``: :func:`evaluate_slice`.
    """
    name = method or prediction_method_name(predictions)
    return evaluate_slice(dataset, config, {name: predictions}, metric_names, options, progress=progress, rows=rows,
                          engine=engine, gt_cache=gt_cache)[name]


__all__ = ["Evaluation", "build_metrics", "collect", "evaluate", "evaluate_methods", "evaluation_from_values",
           "prediction_method_name",
           "prepare_clip", "prepared_for_hole", "update_metrics", "evaluate_dataset", "evaluate_directory",
           "evaluate_slice", "resolve_device", "METRICS"]

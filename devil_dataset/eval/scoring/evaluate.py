"""Evaluate a slice of a built dataset: inputs checked, one pass, a results document per method.

:func:`evaluate_slice` scores several methods' prediction folders on one slice in one pass over its ground truth
(in this process or in an engine's workers, parts merged exactly); :func:`evaluate_dataset` is its one-method form.
Each returns the results document of :mod:`devil_dataset.eval.scoring.results` (:func:`finish_document`, which the
release-layout directory mode, :func:`devil_dataset.eval.protocols.devil.run.evaluate_directory`, writes too).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ...core.cpu_pins import cpu_pinned
from ...core.engines import Engine
from ...core.errors import DevilError
from ...data import iter_slice
from ...inpaint.run import hole_fingerprint, recorded_method
from ..metrics.metric import EvalOptions, VideoMetric, VideoSample
from ..metrics.registry import build_metrics
from .gt_cache import GroundTruthCache, open_gt_cache
from .inputs import (
    PredictionStore,
    VideoShapeInfo,
    check_slice_manifest,
    differs_outside_hole,
    slice_folders_hint,
    validate_clips,
)
from .one_pass import (
    Evaluation,
    _one_pass,
    collect,
    evaluate,  # noqa: F401 - importable from here as before (docs/evaluation.md)
    resolve_device,
)
from .results import build_results


def finish_document(
    ev: Evaluation, metrics, skipped, options: EvalOptions, *, method: str, slice_name: str | None, inputs: dict,
    report: bool = True,
) -> dict:
    """The results document of ``ev``; the skipped metrics are reported on stderr when ``report``, and the clips
    whose masks look inverted (``warnings``) always."""
    for name, reason in (skipped.items() if report else ()):
        print(f"devil evaluate: skipped metric {name}: {reason}", file=sys.stderr)
    doc = build_results(ev, method=method, slice_name=slice_name, inputs=inputs, options=options,
                        metrics=list(metrics), skipped=skipped)
    for line in doc.get("warnings", ()):
        print(f"devil evaluate: {method}: {line}", file=sys.stderr)
    return doc


def prepare_metrics(metric_names: Sequence[str] | None, options: EvalOptions) -> tuple[EvalOptions, dict, dict]:
    """``(options with the device resolved, metric name -> metric object, skipped metric -> reason)``: DEVIL's
    metrics built (:func:`~devil_dataset.eval.metrics.registry.build_metrics`); the device is resolved when a metric
    may need torch (none runs: raises, naming every reason)."""
    needs_torch = metric_names is None or any(n not in ("psnr", "ssim", "pcons") for n in metric_names)
    device = resolve_device(options.device) if needs_torch else ("cpu" if options.device == "auto" else options.device)
    options = replace(options, device=device)
    metrics, skipped = build_metrics(metric_names, options)
    if not metrics:
        raise DevilError("no metric can run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return options, metrics, skipped


@dataclass(frozen=True)
class _SliceEval:
    """What one slice evaluation carries to its steps, and (picklable) to an engine's workers: the slice, the
    predictions folder of each method, the metrics (the names built, the same in every worker) and their options
    (device resolved), the engine, the ground-truth cache, whether to show progress and the methods without an
    inpaint manifest (``watch``: their clips that differ from the ground truth outside the hole are reported)."""

    dataset: str
    config: str
    predictions: Mapping[str, str | Path]  # method -> predictions folder
    metric_names: Sequence[str]
    options: EvalOptions
    engine: Engine = Engine()
    gt_cache: GroundTruthCache | None = None
    progress: bool = False
    watch: tuple[str, ...] = ()


def _slice_rows(dataset: str, config: str, columns: Sequence[str] | None = None):
    """Rows of a slice from the dataset loader (:func:`devil_dataset.data.iter_slice`), one clip at a time."""

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
    get: Callable[..., Any] = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    if all(get(k) is not None for k in ("clip_id", "num_frames", "height", "width")) and get("frames") is None:
        return VideoShapeInfo(str(get("clip_id")), int(get("num_frames")), (int(get("width")), int(get("height"))))
    clip_id, frames, _ = _row_fields(row)
    return VideoShapeInfo(clip_id, int(frames.shape[0]), (int(frames.shape[2]), int(frames.shape[1])))


def _score_rows(rows: Iterable, stores: Mapping[str, PredictionStore], metric_names: Sequence[str] | None,
                options: EvalOptions, metrics: Mapping[str, Mapping[str, VideoMetric]] | None = None, *,
                total: int | None = None, progress: bool = False, gt_cache: GroundTruthCache | None = None,
                outside: dict[str, list[str]] | None = None, problems: dict[str, dict[str, str]] | None = None):
    """One pass over ``rows`` for every method of ``stores``; returns (raw per-video rows, frames, metrics).

    ``outside`` (method -> [], for the methods without an inpaint manifest) receives the clips whose prediction
    differs from the ground truth outside this slice's hole (:func:`~.composite.differs_outside_hole`); ``problems``
    (method -> {}) the clips whose masks look inverted (:mod:`devil_dataset.core.hole_check`).
    """

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
                                  total=total, progress=progress, gt_cache=gt_cache, problems=problems)
    return per_video, frames, metrics


def _manifest_checks(stores: Mapping[str, PredictionStore], predictions: Mapping[str, str | Path], config: str,
                     hole_rows: Callable[[], Iterable]) -> list[str]:
    """Check every predictions folder with an inpaint manifest against the slice's hole masks
    (:func:`~.composite.check_slice_manifest`); return the methods without one (checked while scoring)."""

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


def _chunk_task(run: _SliceEval, ids: list[str], rows: list | None):
    """One part of a parallel evaluation: score the clips ``ids`` (read here, or taken from ``rows``) and send back
    per-video rows, metric states, frames, the ground-truth cache's counts (the worker opens the cache folder it was
    sent) and, for the methods in ``run.watch`` (no inpaint manifest), the clips whose prediction differs outside the
    slice's hole."""

    wanted = set(ids)
    source = rows if rows is not None else _slice_rows(run.dataset, run.config, ("clip_id", "frames", "hole"))
    mine = (r for r in source if _row_fields_id(r) in wanted)
    stores = {m: PredictionStore(p) for m, p in run.predictions.items()}
    metrics = {m: build_metrics(run.metric_names, run.options)[0] for m in stores}
    for per_method in metrics.values():
        for name, metric in per_method.items():
            if not hasattr(metric, "state_dict"):
                raise DevilError(f"metric {name}: its state cannot be merged, score it in one process (jobs 1)")
    outside: dict[str, list[str]] = {m: [] for m in run.watch}
    problems: dict[str, dict[str, str]] = {m: {} for m in stores}
    per_video, frames, metrics = _score_rows(mine, stores, run.metric_names, run.options, metrics,
                                             gt_cache=run.gt_cache, outside=outside, problems=problems)
    states = {m: {n: x.state_dict() for n, x in ms.items()} for m, ms in metrics.items()}
    return per_video, states, frames, (run.gt_cache.stats if run.gt_cache is not None else None), outside, problems


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

    return recorded_method(predictions) or Path(predictions).resolve().name


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
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
    ``gt_cache`` (:class:`~.gt_cache.GroundTruthCache` or a folder; default none): the metrics'
    ground-truth work (warp error flows, FID features) is read from it or computed once and stored, for every
    engine (workers open the same folder); the documents are identical with and without it.
    """

    cache = open_gt_cache(gt_cache)
    predictions = _named_predictions(predictions)
    stores = _dataset_stores(predictions)
    rows = list(rows) if rows is not None and engine.parallel else rows
    shape_columns = ("clip_id", "num_frames", "height", "width")
    gt_info = _gt_info(dataset, config, _slice_iter(dataset, config, rows, shape_columns))
    _validate_predictions(stores, predictions, gt_info, config)
    # predictions made for another slice (the foreground slices share clip ids with other masks): refused when the
    # folder's inpaint manifest records other masks; without a manifest, flagged while scoring (on every engine)
    watch = _manifest_checks(stores, predictions, config,
                             lambda: _slice_iter(dataset, config, rows, ("clip_id", "hole")))
    options, first, skipped = prepare_metrics(metric_names, options or EvalOptions())
    run = _SliceEval(dataset, config, predictions, list(first), options, engine=engine, gt_cache=cache,
                     progress=progress, watch=tuple(watch))
    metrics = {m: (first if i == 0 else build_metrics(run.metric_names, options)[0]) for i, m in enumerate(stores)}
    evs = _score_slice(run, stores, metrics, rows, list(gt_info))
    return _documents(run, evs, stores, metrics, skipped)


def _named_predictions(predictions: Mapping[str, str | Path] | Sequence[str | Path]) -> Mapping[str, str | Path]:
    """Method name -> predictions folder: a mapping as given, a list named by :func:`prediction_method_name`
    (two folders of one name refused); refuses none."""
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
    return predictions


def _dataset_stores(predictions: Mapping[str, str | Path]) -> dict[str, PredictionStore]:
    """Each method's predictions store; refuses the single-file layout (dataset mode needs one per clip id)."""
    stores = {m: PredictionStore(p) for m, p in predictions.items()}
    for m, store in stores.items():
        if store.layout == "single":
            raise DevilError(f"{predictions[m]}: dataset mode needs one folder or video file per clip id")
    return stores


def _slice_iter(dataset: str, config: str, rows: Iterable | None, columns: Sequence[str] | None = None):
    """The slice's rows: ``rows`` when given (re-iterated), else the loader's ``columns`` (:func:`_slice_rows`)."""
    return iter(rows) if rows is not None else iter(_slice_rows(dataset, config, columns))


def _gt_info(dataset: str, config: str, rows: Iterable) -> dict[str, VideoShapeInfo]:
    """Clip id -> ground-truth shape of the slice's rows; refuses a clip twice and an empty slice."""
    gt_info: dict[str, VideoShapeInfo] = {}
    for row in rows:
        info = _row_info(row)
        if info.clip_id in gt_info:
            raise DevilError(f"{dataset}: clip {info.clip_id} appears twice in slice {config}")
        gt_info[info.clip_id] = info
    if not gt_info:
        raise DevilError(f"{dataset}: slice {config} has no videos")
    return gt_info


def _validate_predictions(stores: Mapping[str, PredictionStore], predictions: Mapping[str, str | Path],
                          gt_info: Mapping[str, VideoShapeInfo], config: str | None = None) -> None:
    """Check every method's predictions of every clip against the ground truth (one error lists every offender; a
    folder of slice folders given instead of one slice's gets a hint)."""
    for m, store in stores.items():
        pred_info: dict[str, VideoShapeInfo | None] = {}
        for c, g in gt_info.items():
            try:
                pred_info[c] = store.info(c)
            except DevilError as exc:
                pred_info[c] = VideoShapeInfo(c, g.num_frames, g.size, problems=(str(exc),))
        validate_clips(gt_info, pred_info, str(predictions[m]), slice_folders_hint(predictions[m], config))


def _score_slice(run: _SliceEval, stores: Mapping[str, PredictionStore],
                 metrics: Mapping[str, Mapping[str, VideoMetric]], rows: Iterable | None,
                 ids: list[str]) -> dict[str, Evaluation]:
    """Score every method on the slice's clips ``ids``: in this process, or in parts on a parallel engine (two
    clips or more); then warn of the predictions that differ from the ground truth outside the hole."""
    outside: dict[str, list[str]] = {m: [] for m in run.watch}
    problems: dict[str, dict[str, str]] = {m: {} for m in stores}
    if not run.engine.parallel or len(ids) < 2:
        per_video, frames, _ = _score_rows(_slice_iter(run.dataset, run.config, rows, ("clip_id", "frames", "hole")),
                                           stores, run.metric_names, run.options, metrics, total=len(ids),
                                           progress=run.progress, gt_cache=run.gt_cache, outside=outside,
                                           problems=problems)
        evs = {m: collect(metrics[m], per_video[m], frames) for m in stores}
    else:
        evs = _score_parallel(run, ids, rows, metrics, outside, problems)
    for m, ev in evs.items():
        ev.hole_problems = problems.get(m, {})
    _warn_outside(outside, run.predictions, run.config, len(ids))
    return evs


def _documents(run: _SliceEval, evs: Mapping[str, Evaluation], stores: Mapping[str, PredictionStore],
               metrics: Mapping[str, Mapping[str, VideoMetric]], skipped: dict) -> dict[str, dict]:
    """Method -> results document (dataset mode); the skipped metrics are reported once."""
    docs: dict[str, dict] = {}
    for m, ev in evs.items():
        inputs = {"mode": "dataset", "dataset": str(run.dataset), "config": run.config,
                  "predictions": str(run.predictions[m]), "prediction_layout": stores[m].layout}
        docs[m] = finish_document(ev, metrics[m], skipped, run.options, method=m, slice_name=run.config, inputs=inputs,
                          report=not docs)
    return docs


def _score_parallel(run: _SliceEval, ids: list[str], rows: Iterable | None,
                    metrics: Mapping[str, Mapping[str, VideoMetric]],
                    outside: dict[str, list[str]] | None = None,
                    problems: dict[str, dict[str, str]] | None = None) -> dict[str, Evaluation]:
    """Contiguous parts of ``ids``, one task of ``run.engine`` each; states merged and per-video rows joined in slice
    order; ``outside`` (method -> [] for the methods to watch) receives the parts' outside-hole clips in order."""
    gpu = run.options.device != "cpu"
    parts = [list(p) for p in np.array_split(np.array(ids, dtype=object), min(run.engine.workers(gpu=gpu), len(ids)))
             if len(p)]
    by_id: dict[str, Any] | None = None
    if rows is not None:
        by_id = {}
        for r in rows:
            by_id.setdefault(_row_fields_id(r), r)
    # what a worker needs: the folders as paths, the methods to watch
    job = replace(run, predictions={m: str(p) for m, p in run.predictions.items()}, watch=tuple(outside or ()))
    tasks = [(job, part, [by_id[c] for c in part] if by_id is not None else None) for part in parts]
    # every part in flight at once; networks load once per part
    results = list(run.engine.map_ordered(_chunk_task_of, tasks, window=len(tasks),
                                          num_gpus=run.engine.task_gpus(gpu=gpu)))
    for *_, cache_stats, part_outside, part_problems in results:
        if run.gt_cache is not None and cache_stats is not None:
            run.gt_cache.stats.add(cache_stats)
        for m, found in part_problems.items():
            if problems is not None:
                problems.setdefault(m, {}).update(found)
        for m, clip_ids in part_outside.items():
            if outside is not None:
                outside[m].extend(clip_ids)
    return _merge_parts(metrics, results)


def _merge_parts(metrics: Mapping[str, Mapping[str, Any]], results: Sequence[tuple]) -> dict[str, Evaluation]:
    """Each method's evaluation from the parts' results (in slice order): per-video rows joined, frames added,
    metric states merged into ``metrics``."""
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


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
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


__all__ = ["evaluate_dataset", "evaluate_slice", "finish_document", "prediction_method_name", "prepare_metrics"]

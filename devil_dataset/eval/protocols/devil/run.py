"""``devil evaluate --gt-dir G --pred-dir P``: DEVIL's protocol on the release's folders, through the one runner.

What DEVIL supplies to :mod:`devil_dataset.eval.protocols.runner`:

- the layout listing: the clips of a :class:`~devil_dataset.eval.scoring.inputs.DirectorySource` (the release's
  ``frame_%04d_gt/mask.png`` folders; predictions in any layout it reads), checked before any metric is built;
- the per-video scoring function :func:`score_directory_clip`: one clip read and fed to the metric objects of this
  process (built once per process), which give back the clip's per-video values and the metrics' state after this
  clip alone (:class:`DevilVideoScores`);
- the summary rule :class:`DirectorySummary`: the clips' states merged in clip order into the metric objects, then
  :func:`~devil_dataset.eval.scoring.one_pass.collect`. The set-level metrics (FID, VFID) are not means of per-video
  values: their states are exact integer sums of features
  (:class:`~devil_dataset.eval.kernels.frechet.GaussianStats`), which give the same bits for any partition, so the
  values are those of one pass over the clips in one process;
- the document and its provenance: :func:`~devil_dataset.eval.scoring.evaluate.finish_document` (DEVIL's
  ``build_results``).

The runner does the loop: in this process, in ``jobs`` local processes or on an engine, with progress, and with a
cache folder each clip's record is written as soon as it is scored (:class:`~.runner.StoredVideoScores`, keyed by the
bytes of the clip's files and the scoring identity), so an interrupted run scores only the rest. The document is the
same bytes in every case.

    >>> import tempfile, pathlib, numpy as np
    >>> from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
    >>> root = pathlib.Path(tempfile.mkdtemp()); gt = np.zeros((3, 64, 64, 3), np.uint8)
    >>> hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> _ = write_frame_pngs(gt, root / "gt" / "a", "gt"), write_mask_pngs(hole, root / "gt" / "a")
    >>> _ = write_frame_pngs(np.full_like(gt, 255), root / "pred" / "a", "pred")
    >>> doc = evaluate_directory(root / "gt", root / "pred", ["psnr"], progress=False)
    >>> doc["method"], doc["num_videos"], round(doc["summary"]["psnr"], 2)
    ('pred', 1, 12.04)
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ....core.cpu_pins import cpu_pinned
from ....core.engines import Engine
from ....core.errors import DevilError
from ....core.hole_check import check_hole, hole_problem
from ....core.release_format import read_frame_pngs, read_mask_pngs
from ...kernels.frechet import FEATURE_FRACTION_BITS, GaussianStats
from ...metrics.metric import EvalOptions, VideoMetric, VideoSample, merge_state
from ...metrics.registry import build_metrics
from ...scoring.evaluate import finish_document, prepare_metrics
from ...scoring.inputs import DirectorySource, PredictionStore
from ...scoring.one_pass import Evaluation, collect, update_metrics
from ...scoring.storage import decode_value, encode_value
from ..declaration import FolderRequest
from ..runner import StoredVideoScores, content_digest, score_videos, scoring_identity
from .definition import PROTOCOL


@dataclass(frozen=True)
class DirectoryClip:
    """One video of the release's folders: its clip id (``name``) and the folder of its ground truth and masks."""

    name: str
    folder: Path


def list_directory_clips(source: DirectorySource) -> list[DirectoryClip]:
    """The layout listing: the clips of ``source`` in its order (the folders' names, sorted)."""
    return [DirectoryClip(c, source.clip_dirs[c]) for c in source.clip_ids]


@dataclass(frozen=True)
class GridRows:
    """The :class:`~devil_dataset.eval.kernels.frechet.GaussianStats` of one clip's features as its grid rows
    (int64 [n, D], the values it sums exactly): a few hundred KiB where the statistics hold D x D sums."""

    rows: np.ndarray


@dataclass
class DevilVideoScores:
    """One clip's record: its per-video values (the metrics' ``update`` row, PSNR-type values not yet clipped), its
    frames, what its masks look like (:func:`~devil_dataset.core.hole_check.hole_problem`) and each metric's state
    after this clip alone (``states``: metric -> state name -> value, feature statistics as :class:`GridRows`;
    emptied once merged)."""

    name: str
    num_frames: int
    values: dict[str, float]
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    hole_problem: str | None = None


# The metric objects of this process (the last metric set asked for): networks load once per process, not per clip.
_PROCESS_METRICS: dict[str, dict[str, VideoMetric]] = {}


def _metrics_key(metric_names: Sequence[str], options: EvalOptions) -> str:
    return repr((tuple(metric_names), options))


def _process_metrics(metric_names: Sequence[str], options: EvalOptions) -> dict[str, VideoMetric]:
    key = _metrics_key(metric_names, options)
    if key not in _PROCESS_METRICS:
        _PROCESS_METRICS.clear()
        _PROCESS_METRICS[key] = build_metrics(list(metric_names), options)[0]
    return _PROCESS_METRICS[key]


def metric_state(metric: VideoMetric) -> dict[str, Any]:
    """The state a metric accumulates over clips: its declared state (``state_dict``), else (a metric class without
    declared state) its list attributes, the per-video values it keeps."""
    state_dict = getattr(metric, "state_dict", None)
    if callable(state_dict):
        return dict(state_dict())
    return {k: v for k, v in vars(metric).items() if isinstance(v, list)}


def reset_metric(metric: VideoMetric) -> None:
    """Back to the state before the first clip (:meth:`~devil_dataset.eval.metrics.metric.Metric.reset`, else the
    list attributes emptied)."""
    reset = getattr(metric, "reset", None)
    if callable(reset):
        reset()
        return
    for name in metric_state(metric):
        setattr(metric, name, [])


def _packed(value: Any) -> Any:
    """A state value with each never-flushed :class:`GaussianStats` as its :class:`GridRows` (dicts and lists kept)."""
    if isinstance(value, GaussianStats):
        rows = value.pending
        if value.n and sum(len(r) for r in rows) == value.n:
            return GridRows(np.concatenate(rows))
        return value
    if isinstance(value, dict):
        return {k: _packed(v) for k, v in value.items()}
    return value


def score_directory_clip(clip: DirectoryClip, predictions: PredictionStore, metric_names: Sequence[str],
                         options: EvalOptions) -> DevilVideoScores:
    """The per-video scoring function: ``clip`` read (ground truth, masks: 1 = known, its prediction) and fed to this
    process's metric objects (reset first), as the one pass feeds them."""
    gt, hole = read_frame_pngs(clip.folder, "gt"), read_mask_pngs(clip.folder)
    pred = predictions.read(clip.name)
    if gt.shape != pred.shape or gt.shape[:3] != hole.shape:
        raise DevilError(f"{clip.folder}: frame sizes differ within the clip (gt {gt.shape}, pred {pred.shape})")
    problem = hole_problem(check_hole(hole, pred, gt))
    video = VideoSample(clip.name, gt, pred, hole)
    metrics = _process_metrics(metric_names, options)
    for metric in metrics.values():
        reset_metric(metric)
    row = update_metrics(metrics, video, {})
    states = {n: {k: _packed(v) for k, v in metric_state(m).items()} for n, m in metrics.items()}
    return DevilVideoScores(clip.name, video.num_frames, row, states, problem or None)


def _merged(total: Any, part: Any) -> Any:
    """``total`` with one clip's state value ``part`` added: grid rows summed into the statistics (exact), lists
    joined, dicts per key, counts added, anything else as :func:`~devil_dataset.eval.metrics.metric.merge_state`."""
    if isinstance(part, GridRows):
        stats = total if isinstance(total, GaussianStats) else GaussianStats()
        stats.add(np.ldexp(part.rows.astype(np.float64), -FEATURE_FRACTION_BITS))  # the same grid values again
        return stats
    if isinstance(total, list):
        total.extend(part)
        return total
    if isinstance(total, dict):
        for k, v in part.items():
            total[k] = _merged(total[k], v) if k in total else _merged(None, v)
        return total
    if total is None:
        return dict(_merged({}, part)) if isinstance(part, dict) else (list(part) if isinstance(part, list) else part)
    return merge_state(total, part)


class DirectorySummary:
    """DEVIL's summary rule over the clips' records, fed in clip order (:meth:`add`: the runner's ``on_video``):
    the states merged into ``metrics`` (the document's metric objects), then :meth:`evaluation`."""

    def __init__(self, metrics: Mapping[str, VideoMetric]):
        self.metrics = metrics
        self.states: dict[str, dict[str, Any]] = {}
        for name, metric in metrics.items():
            reset_metric(metric)
            self.states[name] = metric_state(metric)
            reset_metric(metric)  # the objects merged into are not the ones this process's clips update
        self.videos: dict[str, dict[str, float]] = {}
        self.problems: dict[str, str] = {}
        self.frames = 0

    def add(self, record: DevilVideoScores) -> None:
        if record.name in self.videos:
            raise DevilError(f"clip {record.name}: appears twice in the evaluation")
        if record.hole_problem:
            self.problems[record.name] = record.hole_problem
        self.videos[record.name] = dict(record.values)
        self.frames += record.num_frames
        for name, state in record.states.items():
            for k, v in state.items():
                self.states[name][k] = _merged(self.states[name][k], v)
        record.states = {}  # merged: the clip's features are not kept twice

    def evaluation(self) -> Evaluation:
        """The :class:`~devil_dataset.eval.scoring.one_pass.Evaluation` of the clips added."""
        for name, metric in self.metrics.items():
            for k, v in self.states[name].items():
                setattr(metric, k, v)
        ev = collect(self.metrics, self.videos, self.frames)
        ev.hole_problems = self.problems
        return ev


def _encode(value: Any) -> Any:
    """A state value as JSON-safe tagged values (exact: arrays as base64 bytes, floats' NaN/inf, dict keys' types)."""
    if isinstance(value, GridRows):
        return {"grid_rows": _array(value.rows)}
    if isinstance(value, GaussianStats):  # flushed statistics (a clip of 2048 feature rows or more): every sum
        sums = {name: getattr(value, name) for name in ("s1", "s2_high", "s2_low")}
        arrays = {k: _array(a) for k, a in sums.items() if a is not None}
        return {"gaussian": {"n": value.n, **arrays, "pending": [_array(p) for p in value.pending]}}
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"list": [_encode(v) for v in value]}
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, np.integer):
        return int(value)
    return {"float": encode_value(float(value))}


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "float" in value:
        return decode_value(value["float"])
    if "list" in value:
        return [_decode(v) for v in value["list"]]
    if "dict" in value:
        return {_decode(k): _decode(v) for k, v in value["dict"]}
    if "grid_rows" in value:
        return GridRows(_from_array(value["grid_rows"]))
    stats, sums = GaussianStats(), value["gaussian"]
    if sums["n"]:
        stats.n, stats.s1 = int(sums["n"]), _from_array(sums["s1"])
        stats.s2_high, stats.s2_low = _from_array(sums["s2_high"]), _from_array(sums["s2_low"])
    stats.pending = [_from_array(p) for p in sums["pending"]]
    return stats


def _array(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def _from_array(d: Mapping[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["data"]), dtype=d["dtype"]).reshape(d["shape"]).copy()


def encode_record(record: DevilVideoScores) -> dict:
    """A clip's record as JSON-safe values (:class:`~.runner.StoredVideoScores`' ``encode``)."""
    return {"name": record.name, "num_frames": record.num_frames,
            "values": {k: encode_value(v) for k, v in record.values.items()},
            "states": {n: {k: _encode(v) for k, v in s.items()} for n, s in record.states.items()},
            "hole_problem": record.hole_problem}


def decode_record(doc: Mapping[str, Any]) -> DevilVideoScores:
    """:func:`encode_record` read back (a missing field raises: the clip is scored again)."""
    return DevilVideoScores(str(doc["name"]), int(doc["num_frames"]),
                            {k: decode_value(v) for k, v in doc["values"].items()},
                            {n: {k: _decode(v) for k, v in s.items()} for n, s in doc["states"].items()},
                            doc["hole_problem"])


def score_directory(source: DirectorySource, metrics: Mapping[str, VideoMetric], options: EvalOptions, *,
                    progress: bool = False, engine: Engine | None = None, jobs: int = 1,
                    cache: str | Path | None = None) -> Evaluation:
    """The clips of ``source`` scored through the runner (see the module docstring) and summarised into
    ``metrics``; ``cache``: the folder of each clip's stored record (resume)."""
    names = list(metrics)
    clips = list_directory_clips(source)
    store = None
    if cache is not None:
        identity = scoring_identity(PROTOCOL.name, names, options, layout="directory", seed=options.seed)
        store = StoredVideoScores(cache, PROTOCOL.name, identity, encode_record, decode_record)
    summary = DirectorySummary(metrics)
    _PROCESS_METRICS.clear()
    _PROCESS_METRICS[_metrics_key(names, options)] = dict(metrics)  # this process's clips: the same objects
    try:
        score_videos(clips, partial(score_directory_clip, predictions=source.predictions, metric_names=names,
                                    options=options),
                     engine=engine, jobs=jobs, progress=progress, desc="evaluate", on_video=summary.add, store=store,
                     content_of=lambda clip: content_digest([clip.folder, source.predictions.source(clip.name)]))
    finally:
        _PROCESS_METRICS.clear()
    return summary.evaluation()


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def evaluate_directory(  # noqa: PLR0913 - the library call of `devil evaluate --gt-dir --pred-dir`
    gt_dir: str | Path,
    pred_dir: str | Path,
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    method: str | None = None,
    slice_name: str | None = None,
    progress: bool = True,
    engine: Engine | None = None,
    jobs: int = 1,
    cache: str | Path | None = None,
) -> dict:
    """Directory mode: release-layout ground truth/masks vs predictions; returns the results document.

    Every clip is checked before any metric is built or run. ``engine`` / ``jobs``: where the clips are scored (the
    same document); ``cache``: a folder keeping each clip's values as it is scored, from which a run started again
    scores only the clips without them.
    """
    source = DirectorySource(gt_dir, pred_dir)
    source.validate()
    options, metrics, skipped = prepare_metrics(metric_names, options or EvalOptions())
    ev = score_directory(source, metrics, options, progress=progress, engine=engine, jobs=jobs, cache=cache)
    inputs = {"mode": "directory", "gt_dir": str(gt_dir), "predictions": str(pred_dir),
              "prediction_layout": source.predictions.layout}
    return finish_document(ev, metrics, skipped, options, method=method or Path(pred_dir).resolve().name,
                           slice_name=slice_name, inputs=inputs)


def evaluate_folders(request: FolderRequest) -> dict:
    """The registry's entry of DEVIL's directory layout: :func:`evaluate_directory` of a ``devil evaluate``
    request."""
    return evaluate_directory(request.folders["gt_dir"], request.folders["pred_dir"], request.metric_names,
                              request.options, method=request.method, slice_name=request.slice_name,
                              progress=request.progress, engine=request.engine, jobs=request.jobs,
                              cache=request.cache)


__all__ = ["DevilVideoScores", "DirectoryClip", "DirectorySummary", "GridRows", "decode_record", "encode_record",
           "evaluate_directory", "evaluate_folders", "list_directory_clips", "metric_state", "reset_metric",
           "score_directory", "score_directory_clip"]

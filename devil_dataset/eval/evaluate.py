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
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import DevilError, WeightsMissingError
from .pixel import clip_psnr_values
from .protocol import EvalOptions, VideoMetric, VideoSample
from .registry import DEVIL_METRICS, METRICS, metric_entry


@dataclass
class Evaluation:
    """What one pass produced: slice-level ``summary``, per-video ``videos``, and what was clipped/skipped.

    ``videos`` maps clip id -> {key: value}; PSNR-type values there are the clipped values the summary averages
    (``clipped`` lists, per key, the clips whose raw value was infinite). NaN marks "no value" (JSON null).
    """

    summary: dict[str, float]
    videos: dict[str, dict[str, float]]
    clipped: dict[str, list[str]] = field(default_factory=dict)
    metric_provenance: dict[str, dict] = field(default_factory=dict)
    num_frames: int = 0


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``/``cuda`` pass through (checked)."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise DevilError(f"--device: unknown device {device!r}; valid: auto, cpu, cuda")
    if device == "cpu":
        return device
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise DevilError(f"--device {device}: no CUDA device is available")
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
    wanted = list(dict.fromkeys(by_key.get(n, n) if n not in METRICS else n for n in names)) if explicit \
        else list(DEVIL_METRICS)
    metrics: dict[str, VideoMetric] = {}
    skipped: dict[str, str] = {}
    missing: list[str] = []  # explicit metrics whose weights are missing or corrupt: all named in one error
    errors: list[WeightsMissingError] = []
    for name in wanted:
        try:
            entry = metric_entry(name)
        except ValueError as exc:
            raise DevilError(f"--metrics: {exc}") from None
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
    from tqdm import tqdm

    per_video: dict[str, dict[str, float]] = {}
    frames = 0
    bar = tqdm(videos, total=total, desc="evaluate", unit="video", disable=None if progress else True, file=sys.stderr)
    for video in bar:
        if video.clip_id in per_video:
            raise DevilError(f"clip {video.clip_id}: appears twice in the evaluation")
        row: dict[str, float] = {}
        for metric in metrics.values():
            row.update({k: _to_float(v) for k, v in metric.update(video).items()})
        per_video[video.clip_id] = row
        frames += video.num_frames
        del video
    summary: dict[str, float] = {}
    provenance: dict[str, dict] = {}
    clipped: dict[str, list[str]] = {}
    for name, metric in metrics.items():
        summary.update({k: _to_float(v) for k, v in metric.compute().items()})
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
    return Evaluation(summary, per_video, clipped, provenance, frames)


def _finish(
    ev: Evaluation, metrics, skipped, options: EvalOptions, method: str, slice_name: str | None, inputs: dict
) -> dict:
    from .results import build_results

    for name, reason in skipped.items():
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
    from .composite import ClipInfo

    get = row.get if isinstance(row, Mapping) else (lambda k, d=None: getattr(row, k, d))
    if all(get(k) is not None for k in ("clip_id", "num_frames", "height", "width")) and get("frames") is None:
        return ClipInfo(str(get("clip_id")), int(get("num_frames")), (int(get("width")), int(get("height"))))
    clip_id, frames, _ = _row_fields(row)
    return ClipInfo(clip_id, int(frames.shape[0]), (int(frames.shape[2]), int(frames.shape[1])))


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
) -> dict:
    """Dataset mode: score ``predictions`` for the slice ``config`` of a built dataset (folder or Hub repo).

    The slice is read twice through :func:`devil_dataset.data.iter_slice`: its metadata columns (clip_id,
    num_frames, height, width) for validation, then frames and hole (True = hole) one clip at a time for scoring.
    ``rows`` replaces the loader (any re-iterable of rows with clip_id, frames uint8 [T,H,W,3], hole bool [T,H,W]).
    """
    from .composite import ClipInfo, PredictionStore, validate_clips

    store = PredictionStore(predictions)
    if store.layout == "single":
        raise DevilError(f"{predictions}: dataset mode needs one folder or video file per clip id")

    meta_columns = ("clip_id", "num_frames", "height", "width")

    def row_iter(columns=None):
        return iter(rows) if rows is not None else iter(_slice_rows(dataset, config, columns))

    gt_info: dict[str, ClipInfo] = {}
    for row in row_iter(meta_columns):
        info = _row_info(row)
        if info.clip_id in gt_info:
            raise DevilError(f"{dataset}: clip {info.clip_id} appears twice in slice {config}")
        gt_info[info.clip_id] = info
    if not gt_info:
        raise DevilError(f"{dataset}: slice {config} has no videos")
    pred_info: dict[str, ClipInfo | None] = {}
    for c, g in gt_info.items():  # every clip is checked; one error lists every offender
        try:
            pred_info[c] = store.info(c)
        except DevilError as exc:
            pred_info[c] = ClipInfo(c, g.num_frames, g.size, problems=(str(exc),))
    validate_clips(gt_info, pred_info, str(predictions))
    options, metrics, skipped = _prepare(metric_names, options or EvalOptions())

    def samples():
        for row in row_iter(("clip_id", "frames", "hole")):
            clip_id, frames, hole = _row_fields(row)
            yield VideoSample(clip_id, frames, store.read(clip_id), hole)

    ev = evaluate(samples(), metrics, total=len(gt_info), progress=progress)
    inputs = {"mode": "dataset", "dataset": str(dataset), "config": config, "predictions": str(predictions),
              "prediction_layout": store.layout}
    return _finish(ev, metrics, skipped, options, method or Path(predictions).resolve().name, config, inputs)


__all__ = ["Evaluation", "build_metrics", "evaluate", "evaluate_dataset", "evaluate_directory", "resolve_device",
           "METRICS"]

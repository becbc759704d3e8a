"""Per-pair metric values of each method, from the package's evaluation engine (no metric is re-implemented here).

- built dataset: :func:`devil_dataset.eval.engine.evaluate.evaluate_slice` per config, the predictions of a config
  in ``PRED/<config>/`` (the layout ``devil benchmark`` and ``devil demo`` write; a folder without config
  subfolders serves a single config); a pair held by several configs takes the values of its first config;
- directory mode: :func:`~devil_dataset.eval.engine.evaluate.evaluate_directory`;
- DAVIS / YouTube-VOS: :func:`~devil_dataset.eval.engine.one_pass.evaluate_methods` over the videos at the
  protocol's 432x240 (:mod:`devil_dataset.eval.engine.davis_layout`), outputs ``PRED/<video>/*.png``; the hole is
  the protocol's mask as read (not dilated).

Result: method -> pair key ``(clip_id, mask_id)`` -> result key -> value. Set-level keys (FID, VFID) have no
per-video value and are left out.

    >>> DEFAULT_METRICS
    ('psnr', 'ssim')
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from ..core.engines import Engine
from ..core.errors import DevilError
from ..core.slices import SLICES
from ..eval.engine.davis_layout import list_prediction_frames, read_davis_video, read_prediction_video
from ..eval.engine.evaluate import evaluate_directory, evaluate_slice
from ..eval.engine.one_pass import evaluate_methods, resolve_device
from ..eval.metrics.protocol import EvalOptions
from ..eval.metrics.registry import build_metrics
from .pairs import Pair

# Per-video metrics scored when none are named: the two pixel metrics (no network, no flow: seconds per video).
DEFAULT_METRICS: tuple[str, ...] = ("psnr", "ssim")
PairScores = dict[str, dict[tuple[str, str], dict[str, float]]]


def _finite_values(values: Mapping[str, object]) -> dict[str, float]:
    out = {}
    for k, v in values.items():
        if v is None:
            continue
        f = float(v)  # type: ignore[arg-type]
        if not math.isnan(f):
            out[k] = f
    return out


def config_folder(pred: Path, config: str, configs: Sequence[str]) -> Path | None:
    """The predictions folder of ``config``: ``pred/<config>`` when it exists; ``pred`` itself when it has no config
    subfolder and ``config`` is the only config diagnosed; else ``None`` (the config has no predictions)."""
    if (pred / config).is_dir():
        return pred / config
    if not any((pred / c).is_dir() for c in SLICES) and len(configs) == 1:
        return pred
    return None


def dataset_scores(dataset: str | Path, pairs: Sequence[Pair], predictions: Mapping[str, str | Path],
                   metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                   engine: Engine = Engine(), progress: bool = True) -> tuple[PairScores, list[str]]:
    """Per-pair values of every method on a built dataset, and notes (configs without predictions)."""
    configs = [c for c in SLICES if any(c in p.configs for p in pairs)]
    pair_of = {(c, p.clip_id): p for p in pairs for c in p.configs}
    out: PairScores = {m: {} for m in predictions}
    notes: list[str] = []
    for pred in predictions.values():
        if not Path(pred).is_dir():
            raise DevilError(f"{pred}: predictions folder does not exist")
    for config in configs:
        todo = {}
        missing = []
        for m, pred in predictions.items():
            folder = config_folder(Path(pred), config, configs)
            held = [p for (c, _), p in pair_of.items() if c == config]
            if folder is None:
                missing.append(f"{m} ({Path(pred) / config} missing)")
            elif any((p.clip_id, p.mask_id) not in out[m] for p in held):
                todo[m] = folder
        if missing:  # one note per config, naming every method without predictions for it
            notes.append(f"no predictions for config {config}: {', '.join(missing)}")
        if not todo:
            continue
        docs = evaluate_slice(str(dataset), config, todo, list(metric_names), options, progress=progress,
                              engine=engine)
        for m, doc in docs.items():
            for clip, values in doc["videos"].items():
                pair = pair_of.get((config, clip))
                if pair is not None:
                    out[m].setdefault((pair.clip_id, pair.mask_id), _finite_values(values))
    return out, notes


def directory_scores(gt_dir: str | Path, predictions: Mapping[str, str | Path],
                     metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                     progress: bool = True) -> PairScores:
    """Per-pair values of every method in directory mode (each clip's mask is named after the clip)."""
    out: PairScores = {}
    for m, pred in predictions.items():
        doc = evaluate_directory(gt_dir, pred, list(metric_names), options, method=m, progress=progress)
        out[m] = {(c, c): _finite_values(v) for c, v in doc["videos"].items()}
    return out


def davis_scores(pairs: Sequence[Pair], predictions: Mapping[str, str | Path],
                 metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                 progress: bool = True) -> PairScores:
    """Per-pair values of every method on DAVIS-layout videos, at the protocol's size (see the module docstring)."""
    videos = [p.source.video for p in pairs if p.source.video is not None]
    options = options or EvalOptions()
    device = resolve_device(options.device) if options.device != "auto" else "cpu"
    opts = replace(options, device=device)
    frames = {m: list_prediction_frames(pred, videos) for m, pred in predictions.items()}
    metrics = {m: build_metrics(list(metric_names), opts)[0] for m in predictions}

    def clips():
        for v in videos:
            gt, hole = read_davis_video(v)
            yield v.name, gt, hole

    readers = {m: (lambda c, f=frames[m]: read_prediction_video(f[c])) for m in predictions}
    evs = evaluate_methods(clips(), readers, metrics, total=len(videos), progress=progress)
    return {m: {(c, c): _finite_values(v) for c, v in ev.videos.items()} for m, ev in evs.items()}


__all__ = ["DEFAULT_METRICS", "PairScores", "config_folder", "dataset_scores", "davis_scores", "directory_scores"]

"""Per-pair metric values of each method, from the package's evaluation engine (no metric is re-implemented here).

- built dataset: :func:`devil_dataset.eval.scoring.evaluate.evaluate_slice` per config, the predictions of a config
  in ``PRED/<config>/`` (the layout ``devil benchmark`` and ``devil demo`` write; a folder without config
  subfolders serves a single config); a pair held by several configs takes the values of its first config;
- directory mode: :func:`~devil_dataset.eval.protocols.devil.run.evaluate_directory`;
- DAVIS / YouTube-VOS: :func:`~devil_dataset.eval.scoring.one_pass.evaluate_methods` over the videos at the
  protocol's 432x240 (:mod:`~devil_dataset.eval.protocols.propainter.layout`), outputs ``PRED/<video>/*.png``; the
  hole is the protocol's mask as read (not dilated).

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
from ..core.hole_check import hole_warning
from ..core.progress import progress_bar
from ..core.slices import SLICES
from ..eval.metrics.metric import EvalOptions
from ..eval.protocols.devil.run import evaluate_directory
from ..eval.protocols.propainter.layout import list_prediction_frames, read_davis_video, read_prediction_video
from ..eval.protocols.registry import build_metrics
from ..eval.scoring.evaluate import evaluate_slice
from ..eval.scoring.one_pass import evaluate_methods, resolve_device
from .metric_cache import MetricValuesCache, prediction_fingerprint
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


def _hole_notes(problems: Mapping[str, Mapping[str, str]], total: int, notes: list[str] | None) -> None:
    """The inverted-mask warning of each method (:mod:`devil_dataset.core.hole_check`) into ``notes``."""
    for m, found in problems.items():
        line = hole_warning(found, total, f"method {m}")
        if line and notes is not None:
            notes.append(line)


def _take_document(doc: Mapping, config: str, pair_of: Mapping[tuple[str, str], Pair],
                   out: dict[tuple[str, str], dict[str, float]], problems: dict[str, str],
                   cache: MetricValuesCache | None, keys: Mapping[str, str | None]) -> None:
    """A config's results document into a method's per-pair values (the first config of a pair wins), its
    inverted-mask problems and the cache."""
    hole = doc.get("hole_problems", {})
    for clip, values in doc["videos"].items():
        pair = pair_of.get((config, clip))
        if pair is None:
            continue
        finite = _finite_values(values)
        out.setdefault((pair.clip_id, pair.mask_id), finite)
        if cache is not None:
            cache.save(keys.get(clip), finite, hole.get(clip))
        if clip in hole:
            problems[pair.clip_id] = hole[clip]


def _cached_values(cache: MetricValuesCache | None, folder: Path, wanted: Sequence[tuple[str, Pair]],
                   keys: dict[tuple[str, str], str | None], method: str, *, progress: bool, what: str
                   ) -> dict[str, tuple[dict[str, float], str | None]] | None:
    """The stored values of every clip of ``wanted`` (clip -> (values, inverted-mask problem)), or ``None`` when
    one is missing (the config is scored again); ``keys`` receives each clip's entry key."""
    if cache is None:
        return None
    found = {}
    for clip, p in progress_bar(wanted, desc=f"metric cache {what}", unit="video", enabled=progress):
        keys[(method, clip)] = key = cache.key(p, prediction_fingerprint(folder, clip))
        hit = cache.load(key)
        if hit is not None:
            found[clip] = hit
    return found if len(found) == len(wanted) else None


def dataset_scores(dataset: str | Path, pairs: Sequence[Pair], predictions: Mapping[str, str | Path],
                   metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                   engine: Engine = Engine(), progress: bool = True,
                   cache: MetricValuesCache | None = None) -> tuple[PairScores, list[str]]:
    """Per-pair values of every method on a built dataset, and notes (configs without predictions, inverted masks).
    ``cache``: a (method, config) whose pairs all have stored values is not scored again."""
    configs = [c for c in SLICES if any(c in p.configs for p in pairs)]
    pair_of = {(c, p.clip_id): p for p in pairs for c in p.configs}
    out: PairScores = {m: {} for m in predictions}
    notes: list[str] = []
    problems: dict[str, dict[str, str]] = {m: {} for m in predictions}
    for pred in predictions.values():
        if not Path(pred).is_dir():
            raise DevilError(f"{pred}: predictions folder does not exist")
    for config in configs:
        todo: dict[str, Path] = {}
        keys: dict[tuple[str, str], str | None] = {}
        held = [(clip, p) for (c, clip), p in pair_of.items() if c == config]
        missing = []
        for m, pred in predictions.items():
            folder = config_folder(Path(pred), config, configs)
            if folder is None:
                missing.append(f"{m} ({Path(pred) / config} missing)")
                continue
            wanted = [(clip, p) for clip, p in held if (p.clip_id, p.mask_id) not in out[m]]
            if not wanted:
                continue
            found = _cached_values(cache, folder, wanted, keys, m, progress=progress, what=f"{m} {config}")
            if found is None:
                todo[m] = folder
                continue
            for clip, (values, problem) in found.items():
                p = pair_of[(config, clip)]
                out[m].setdefault((p.clip_id, p.mask_id), values)
                if problem:
                    problems[m][p.clip_id] = problem
        if missing:  # one note per config, naming every method without predictions for it
            notes.append(f"no predictions for config {config}: {', '.join(missing)}")
        if not todo:
            continue
        docs = evaluate_slice(str(dataset), config, todo, list(metric_names), options, progress=progress,
                              engine=engine)
        for m, doc in docs.items():
            _take_document(doc, config, pair_of, out[m], problems[m], cache, {c: k for (x, c), k in keys.items()
                                                                              if x == m})
    _hole_notes(problems, len({p.clip_id for p in pairs}), notes)
    return out, notes


def directory_scores(gt_dir: str | Path, predictions: Mapping[str, str | Path],
                     metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                     progress: bool = True, pairs: Sequence[Pair] | None = None,
                     cache: MetricValuesCache | None = None, notes: list[str] | None = None) -> PairScores:
    """Per-pair values of every method in directory mode (each clip's mask is named after the clip). With ``pairs``
    and ``cache``, a method whose clips all have stored values is not scored again; ``notes`` receives the
    inverted-mask warnings."""
    out: PairScores = {}
    problems: dict[str, dict[str, str]] = {}
    for m, pred in predictions.items():
        keys = {p.clip_id: cache.key(p, prediction_fingerprint(pred, p.clip_id)) for p in pairs or ()} \
            if cache is not None else {}
        hits = {c: cache.load(k) for c, k in keys.items()} if cache is not None else {}
        if pairs and cache is not None and all(h is not None for h in hits.values()):
            out[m] = {(c, c): h[0] for c, h in hits.items() if h is not None}
            problems[m] = {c: h[1] for c, h in hits.items() if h is not None and h[1]}
            continue
        doc = evaluate_directory(gt_dir, pred, list(metric_names), options, method=m, progress=progress)
        out[m] = {(c, c): _finite_values(v) for c, v in doc["videos"].items()}
        problems[m] = dict(doc.get("hole_problems", {}))
        for c, values in out[m].items():
            if cache is not None:
                cache.save(keys.get(c[0]), values, problems[m].get(c[0]))
    _hole_notes(problems, len(pairs or ()) or max((len(v) for v in out.values()), default=0), notes)
    return out


def davis_scores(pairs: Sequence[Pair], predictions: Mapping[str, str | Path],
                 metric_names: Sequence[str] = DEFAULT_METRICS, *, options: EvalOptions | None = None,
                 progress: bool = True, cache: MetricValuesCache | None = None,
                 notes: list[str] | None = None) -> PairScores:
    """Per-pair values of every method on DAVIS-layout videos, at the protocol's size (see the module docstring).
    ``cache``: stored values are served and only the (method, video) pairs without one are scored; ``notes``
    receives the inverted-mask warnings."""
    by_name = {p.source.video.name: p for p in pairs if p.source.video is not None}
    videos = [p.source.video for p in pairs if p.source.video is not None]
    options = options or EvalOptions()
    device = resolve_device(options.device) if options.device != "auto" else "cpu"
    opts = replace(options, device=device)
    frames = {m: list_prediction_frames(pred, videos) for m, pred in predictions.items()}
    found: dict[str, dict[str, dict[str, float]]] = {m: {} for m in predictions}
    problems: dict[str, dict[str, str]] = {m: {} for m in predictions}
    keys: dict[tuple[str, str], str | None] = {}
    if cache is not None:
        lookups = [(m, v) for m in predictions for v in videos]
        for m, v in progress_bar(lookups, desc="metric cache", unit="video", enabled=progress):
            keys[(m, v.name)] = key = cache.key(by_name[v.name], prediction_fingerprint(
                predictions[m], v.name, frames[m][v.name]))
            hit = cache.load(key)
            if hit is not None:
                found[m][v.name] = hit[0]
                if hit[1]:
                    problems[m][v.name] = hit[1]
    methods = [m for m in predictions if len(found[m]) < len(videos)]
    needed = [v for v in videos if any(v.name not in found[m] for m in methods)]
    if methods:
        metrics = {m: build_metrics(list(metric_names), opts)[0] for m in methods}

        def clips():
            for v in needed:
                gt, hole = read_davis_video(v)
                yield v.name, gt, hole

        readers = {m: (lambda c, f=frames[m]: read_prediction_video(f[c])) for m in methods}
        evs = evaluate_methods(clips(), readers, metrics, total=len(needed), progress=progress)
        for m, ev in evs.items():
            for c, values in ev.videos.items():
                if c in found[m]:
                    continue
                found[m][c] = _finite_values(values)
                if c in ev.hole_problems:
                    problems[m][c] = ev.hole_problems[c]
                if cache is not None:
                    cache.save(keys.get((m, c)), found[m][c], ev.hole_problems.get(c))
    _hole_notes(problems, len(videos), notes)
    return {m: {(v.name, v.name): found[m][v.name] for v in videos if v.name in found[m]} for m in predictions}


__all__ = ["DEFAULT_METRICS", "PairScores", "config_folder", "dataset_scores", "davis_scores", "directory_scores"]

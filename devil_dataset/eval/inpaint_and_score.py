"""Inpaint and score slices one clip at a time, with any inpainters: predictions written once, scored from memory.

1. :func:`plan_units` reads the slices' clip ids and holes. A *unit* is one (clip, hole mask) pair, which several
   slices can share (the sample's six foreground slices reuse the same clips and some masks).
2. :func:`inpaint_and_score` hands each clip to a worker of the engine (:mod:`devil_dataset.core.engines`),
   largest first (:func:`clip_work`). The worker (:func:`clip_task`) reads the clip's frames once, runs every
   inpainter (any :data:`~devil_dataset.inpaint.Inpainter`) on every unit of the clip that has no complete
   prediction yet, writes it into the first slice's prediction folder (:class:`~devil_dataset.inpaint.run.
   PredictionFolder`) and scores it from the array just made (:class:`~devil_dataset.eval.clip_scoring.
   ClipScorer`: ground-truth work once per clip, hole work once per unit). The other slices of a unit get hard
   links to the same files. Per-video values go to a :class:`~devil_dataset.eval.results.ValuesCache`, so a
   resumed run only inpaints and scores what is missing.
3. :func:`slice_results` makes one results document per (method, slice) from the per-video values
   (:func:`~devil_dataset.eval.evaluate.evaluation_from_values`), merged with the metrics that need network
   weights, scored by :func:`~devil_dataset.eval.evaluate.evaluate_slice` on the prediction folders.

    >>> units, order = plan_units("sample-dataset", ["fg_size_low", "fg_size_high"])  # doctest: +SKIP
    >>> run = inpaint_and_score("sample-dataset", units, {"telea": telea}, folders, ["psnr"], options)  # doctest: +SKIP
"""
from __future__ import annotations

import operator
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from ..core.engines import Engine
from ..core.errors import DevilError
from ..inpaint import Inpainter
from ..inpaint.run import PredictionFolder
from .protocol import EvalOptions
from .results import ValuesCache

# How results documents describe the shared ground-truth work of the warp error (provenance; SPEC section 7).
SHARED_WARP_NOTE = "devil demo: GT flow and occlusion computed once per clip (WarpErrorMetric.prepare)"


def _pack(hole: np.ndarray) -> tuple[np.ndarray, tuple]:
    return np.packbits(np.ascontiguousarray(hole, bool)), tuple(int(n) for n in hole.shape)


def _unpack(bits: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.unpackbits(bits, count=int(np.prod(shape))).reshape(tuple(shape)).astype(bool)


@dataclass
class Unit:
    """One (clip, hole mask) pair and the slices (with row positions) that contain it."""

    clip_id: str
    fingerprint: str
    num_frames: int
    slices: list[str] = field(default_factory=list)
    hole_bits: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8), repr=False)  # packed bool hole
    hole_shape: tuple[int, ...] = ()
    hole_pixels: int = 0  # hole pixels over all frames (the work estimate of :func:`clip_work`)

    def hole(self) -> np.ndarray:
        """The bool hole mask [T, H, W] (True = hole)."""
        return _unpack(self.hole_bits, self.hole_shape)

    @property
    def key(self) -> str:
        return f"{self.clip_id}-{self.fingerprint}"


def plan_units(dataset: str | os.PathLike, slices: Sequence[str]) -> tuple[dict[str, Unit], dict[str, list[str]]]:
    """Read the slices' clip ids and holes: ``(units by key, slice -> unit keys in row order)``.

    >>> units, order = plan_units("sample-dataset", ["fg_size_low"])  # doctest: +SKIP
    """
    from ..data import iter_slice
    from ..inpaint.run import hole_fingerprint

    units: dict[str, Unit] = {}
    order: dict[str, list[str]] = {}
    for s in slices:
        keys = []
        for row in iter_slice(dataset, s, columns=["clip_id", "hole"]):
            fp = hole_fingerprint(row["hole"])
            key = f"{row['clip_id']}-{fp}"
            if key not in units:
                bits, shape = _pack(row["hole"])
                units[key] = Unit(str(row["clip_id"]), fp, int(len(row["hole"])), [], bits, shape,
                                  int(np.count_nonzero(row["hole"])))
            unit = units[key]
            if unit.key in keys:
                raise DevilError(f"{dataset}: clip {unit.clip_id} appears twice in slice {s}")
            unit.slices.append(s)
            keys.append(unit.key)
        if not keys:
            raise DevilError(f"{dataset}: slice {s} has no videos")
        order[s] = keys
    return units, order


# Work estimate of one (unit, method) relative to the clip's ground-truth preparation (DIS flow both ways per
# pair): a frame costs FRAME_WORK, plus HOLE_WORK per frame fully covered by the hole (Telea and the SSIM windows
# grow with the hole). Measured on the demo (issue 17): GT preparation ~9 s, an item 3-12 s per 45-frame clip.
GT_FRAME_WORK = 1.3
FRAME_WORK = 1.0
HOLE_WORK = 4.0


def clip_work(units: Sequence[Unit], items: int) -> float:
    """Estimated work of one clip task: its ground-truth preparation and ``items`` (unit, method) pairs spread
    over ``units`` (the order in which clips go to the workers, largest first; any positive measure would do).

    >>> u = Unit("c", "f", 10, hole_shape=(10, 4, 5), hole_pixels=20)
    >>> round(clip_work([u], 3), 2)
    55.0
    """
    if not units:
        return 0.0
    frames = units[0].num_frames
    per_item = sum(FRAME_WORK * u.num_frames + HOLE_WORK * u.hole_pixels / max(1, int(np.prod(u.hole_shape[1:])))
                   for u in units) / len(units)
    return GT_FRAME_WORK * frames + items * per_item


@dataclass
class ClipItem:
    """One (unit, method) of a clip task: inpaint it (into ``target``) and/or score it (from memory or ``source``)."""

    key: str
    method: str
    hole_bits: np.ndarray = field(repr=False)
    hole_shape: tuple
    target: str | None  # clip folder to write the prediction to (None: the prediction is already there)
    source: str | None  # clip folder to read the prediction from for scoring when it is not inpainted here
    score: bool


@dataclass
class ClipTask:
    """The record of one clip for :func:`clip_task`: where to read its frames, its items and what to run them with."""

    dataset: str
    slice_name: str  # a slice holding the clip (its frames are read from there)
    clip_id: str
    items: list[ClipItem]
    inpainters: dict[str, Inpainter]  # method -> inpainter (picklable for jobs > 1: module-level functions)
    metric_names: list[str]
    options: EvalOptions
    work: float  # :func:`clip_work`: clips run largest first


class ItemResult(NamedTuple):
    """What :func:`clip_task` reports per item: CPU seconds of inpainting and scoring, values (None: not scored)."""

    key: str
    method: str
    inpaint_cpu: float
    values: dict[str, float] | None
    score_cpu: float


def clip_frames(dataset: str | os.PathLike, slice_name: str, clip_id: str) -> np.ndarray:
    """The decoded frames of ``clip_id`` in ``slice_name`` (only that row is decoded)."""
    from ..data import iter_slice

    for row in iter_slice(dataset, slice_name, columns=["clip_id", "frames"], clip_ids={clip_id}):
        return row["frames"]
    raise DevilError(f"{dataset}: clip {clip_id} is missing from slice {slice_name}")


def clip_task(task: ClipTask) -> list[ItemResult]:
    """Worker: every (unit, method) of one clip: inpaint, write the release-layout PNGs, score from memory.

    The ground-truth work of the metrics runs once per clip (its CPU shared out evenly over the scored items) and
    the hole work once per unit; a prediction is scored from the array just made, so it is never read back from
    its PNGs in the same run.
    """
    from ..core.release_format import read_frame_pngs
    from ..inpaint.run import inpaint_clip, write_prediction
    from .clip_scoring import ClipScorer

    gt = clip_frames(task.dataset, task.slice_name, task.clip_id)
    scored = [it for it in task.items if it.score and task.metric_names]
    c = time.process_time()
    scorer = ClipScorer(task.clip_id, gt, task.metric_names, task.options) if scored else None
    shared = (time.process_time() - c) / max(1, len(scored))
    out = []
    current: tuple[str, np.ndarray] | None = None  # one unit's hole at a time
    for it in task.items:
        if current is None or current[0] != it.key:
            current = (it.key, _unpack(it.hole_bits, it.hole_shape))
        hole = current[1]
        c = time.process_time()
        pred = None
        if it.target is not None:
            pred = inpaint_clip(task.inpainters[it.method], gt, hole, task.clip_id)
            write_prediction(it.target, pred)
        inpaint_cpu = time.process_time() - c
        values, score_cpu = None, 0.0
        if scorer is not None and it.score:
            c = time.process_time()
            if pred is None:  # not inpainted here: the prediction is in its source folder
                pred = read_frame_pngs(Path(str(it.source)), "pred")
            values = scorer.score(pred, hole, it.key)
            score_cpu = time.process_time() - c + shared
        out.append(ItemResult(it.key, it.method, inpaint_cpu, values, score_cpu))
    return out


@dataclass
class InpaintScoreRun:
    """What :func:`inpaint_and_score` produced: per-video values by (unit key, method), worker CPU by method."""

    values: dict[tuple[str, str], dict[str, float]]
    inpaint_cpu: dict[str, float]
    score_cpu: dict[str, float]


def inpaint_and_score(dataset: str | os.PathLike, units: Mapping[str, Unit], order: Mapping[str, list[str]],
                      inpainters: Mapping[str, Inpainter], folders: Mapping[tuple[str, str], PredictionFolder],
                      metric_names: Sequence[str], options: EvalOptions, *, cache: ValuesCache | None = None,
                      engine: Engine = Engine(), progress: bool = True, say: Callable[[str], None] | None = None
                      ) -> InpaintScoreRun:
    """Predictions of every (method, slice) of ``order`` and their per-video values, one clip at a time.

    ``inpainters``: method -> inpainter; ``folders[(method, slice)]``: the opened prediction folders;
    ``metric_names``: per-video metrics scored from memory (values cached in ``cache``). A unit whose prediction
    is complete is not inpainted again, and one whose values are cached is not scored again. ``engine`` runs the
    clips (:func:`devil_dataset.core.engines.get_engine`; default: this process). ``say`` gets one line per slice
    when all of its videos are done.
    """
    from ..core.progress import progress_bar

    methods = list(inpainters)
    values: dict[tuple[str, str], dict[str, float]] = {}
    todo: dict[str, list[ClipItem]] = {}  # clip id -> its items, grouped by unit
    for key, unit in units.items():
        for m in methods:
            have = [s for s in unit.slices if folders[(m, s)].holds(unit.clip_id, unit.fingerprint, unit.num_frames)]
            cached = ({} if not metric_names else
                      cache.load(m, unit.clip_id, unit.fingerprint) if cache is not None else None)
            if cached is not None:
                values[(key, m)] = cached
            if have and cached is not None:
                continue
            todo.setdefault(unit.clip_id, []).append(ClipItem(
                key, m, unit.hole_bits, unit.hole_shape,
                target=None if have else str(folders[(m, unit.slices[0])].path / unit.clip_id),
                source=str(folders[(m, have[0])].path / unit.clip_id) if have else None, score=cached is None))
    run = InpaintScoreRun(values, {m: 0.0 for m in methods}, {m: 0.0 for m in methods})
    bar = progress_bar(total=sum(len(v) for v in todo.values()), desc="inpaint+evaluate", unit="video",
                       enabled=progress)
    start = time.perf_counter()
    waiting = {s: 0 for s in order}  # per slice: (unit, method) items still to do
    for items in todo.values():
        for it in items:
            for s in units[it.key].slices:
                waiting[s] += 1
    for s, n in waiting.items():
        if n == 0 and say:
            say(f"  {s}: {len(order[s])} videos x {len(methods)} methods already done")

    def finish(results: list[ItemResult]) -> None:
        for r in results:
            unit = units[r.key]
            run.inpaint_cpu[r.method] += r.inpaint_cpu
            run.score_cpu[r.method] += r.score_cpu
            if not any(folders[(r.method, s)].holds(unit.clip_id, unit.fingerprint, unit.num_frames)
                       for s in unit.slices):
                folders[(r.method, unit.slices[0])].record(unit.clip_id, unit.fingerprint)
            if r.values is not None:
                values[(r.key, r.method)] = r.values
                if cache is not None:
                    cache.save(r.method, unit.clip_id, unit.fingerprint, r.values)
            bar.update(1)
            for s in unit.slices:
                waiting[s] -= 1
                if waiting[s] == 0 and say:
                    say(f"  {s}: {len(order[s])} videos x {len(methods)} methods inpainted and scored, "
                        f"{time.perf_counter() - start:.1f} s")

    clip_units: dict[str, list[Unit]] = {}
    for unit in units.values():
        if unit.clip_id in todo:
            clip_units.setdefault(unit.clip_id, []).append(unit)
    # Clips go to the workers largest first (longest-processing-time order): the last tasks are the short ones, so
    # no worker waits long at the end for the other to finish a big clip (issue 17: 28 s on one core before).
    tasks = [ClipTask(str(dataset), clip_units[c][0].slices[0], c, todo[c],
                      {m: inpainters[m] for m in dict.fromkeys(it.method for it in todo[c])}, list(metric_names),
                      options, clip_work(clip_units[c], len(todo[c]))) for c in sorted(todo)]
    try:
        for results in engine.map_ordered(clip_task, tasks, cost=operator.attrgetter("work")):
            finish(results)
    finally:
        bar.close()
    link_shared_predictions(units, methods, folders)
    return run


def link_shared_predictions(units: Mapping[str, Unit], methods: Sequence[str],
                            folders: Mapping[tuple[str, str], PredictionFolder]) -> None:
    """Give every slice of a unit its prediction: hard links to the folder that holds it (see
    :func:`~devil_dataset.inpaint.run.link_prediction`); a unit with no prediction anywhere is an error."""
    from ..inpaint.run import link_prediction

    for unit in units.values():
        for m in methods:
            have = [s for s in unit.slices if folders[(m, s)].holds(unit.clip_id, unit.fingerprint, unit.num_frames)]
            if not have:
                raise DevilError(f"{folders[(m, unit.slices[0])].path}: no prediction of {m} for clip "
                                 f"{unit.clip_id} (interrupted?)")
            for s in unit.slices:
                if s not in have:
                    link_prediction(folders[(m, have[0])].path / unit.clip_id, folders[(m, s)].path / unit.clip_id)
                    folders[(m, s)].record(unit.clip_id, unit.fingerprint)


def slice_results(dataset: str | os.PathLike, units: Mapping[str, Unit], order: Mapping[str, list[str]],
                  values: Mapping[tuple[str, str], dict], folders: Mapping[tuple[str, str], PredictionFolder],
                  methods: Sequence[str], metric_names: Sequence[str], network_metrics: Sequence[str],
                  skipped: Mapping[str, str], options: EvalOptions, *, progress: bool = True
                  ) -> dict[tuple[str, str], dict]:
    """One results document per (method, slice of ``order``): ``metric_names`` from the per-video ``values`` of
    :func:`inpaint_and_score`, merged with ``network_metrics`` scored by
    :func:`~devil_dataset.eval.evaluate.evaluate_slice` on the prediction folders (all methods of a slice in one
    pass)."""
    from .evaluate import build_metrics, evaluate_slice, evaluation_from_values
    from .results import build_results, merge_results

    if not metric_names and not network_metrics:
        raise DevilError("slice_results: no metric to score")
    net_docs = {s: evaluate_slice(str(dataset), s, {m: folders[(m, s)].path for m in methods},
                                  list(network_metrics), options, progress=progress)
                for s in order} if network_metrics else {}
    docs: dict[tuple[str, str], dict] = {}
    for m in methods:
        for s in order:
            clip_values = [(units[k].clip_id, units[k].num_frames, values.get((k, m), {})) for k in order[s]]
            inputs = {"mode": "dataset", "dataset": str(dataset), "config": s,
                      "predictions": str(folders[(m, s)].path), "prediction_layout": "frames"}
            doc: dict | None = None
            if metric_names:
                metrics, _ = build_metrics(list(metric_names), options)
                doc = build_results(evaluation_from_values(metrics, clip_values), method=m, slice_name=s,
                                    inputs=inputs, options=options, metrics=list(metrics), skipped=dict(skipped))
                if "warp_error" in metrics:
                    doc["provenance"]["metrics"]["warp_error"]["shared"] = SHARED_WARP_NOTE
            if network_metrics:
                doc = net_docs[s][m] if doc is None else merge_results(doc, net_docs[s][m])
            assert doc is not None  # a metric ran
            docs[(m, s)] = doc
    return docs


__all__ = ["ClipItem", "ClipTask", "InpaintScoreRun", "ItemResult", "Unit", "clip_frames", "clip_task", "clip_work",
           "inpaint_and_score", "link_shared_predictions", "plan_units", "slice_results"]

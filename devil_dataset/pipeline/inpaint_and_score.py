"""Inpaint and score a plan's slices one clip at a time: predictions written once, scored from memory.

1. :func:`inpaint_and_score` hands each clip with missing work to a worker of the plan's engine, largest first
   (:func:`~devil_dataset.pipeline.plan.clip_work`; the worker is :func:`~devil_dataset.pipeline.clip_task.
   clip_task`). The other slices of a unit get hard links to the same files (:func:`link_shared_predictions`).
   Per-video values go to a :class:`~devil_dataset.eval.scoring.results.ValuesCache` (written by the worker as each
   unit finishes, with the method's identity), so a resumed run only inpaints and scores what is missing, also
   after a Ctrl-C; work of another version of a method (its identity changed) or of a ``rerun`` method is redone.
   A method that fails on a clip does not stop the others: its errors are in :attr:`InpaintScoreRun.failures`.
2. :func:`slice_results` makes one results document per (method, slice) from the per-video values
   (:func:`~devil_dataset.eval.scoring.one_pass.evaluation_from_values`), merged with the metrics that need network
   weights, scored by :func:`~devil_dataset.eval.scoring.evaluate.evaluate_slice` on the prediction folders.

    >>> run = inpaint_and_score(plan, cache=cache)  # doctest: +SKIP
    >>> docs = slice_results(plan, run.values)  # doctest: +SKIP
"""
from __future__ import annotations

import operator
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from ..core.errors import DevilError
from ..core.hole_check import hole_warning
from ..core.progress import progress_bar
from ..eval.metrics.registry import build_metrics
from ..eval.scoring.evaluate import evaluate_slice
from ..eval.scoring.one_pass import evaluation_from_values
from ..eval.scoring.results import ValuesCache, build_results, merge_results
from ..inpaint.run import clip_complete, link_prediction
from .clip_task import ClipItem, ClipTask, ItemResult, clip_task, ground_truth_identity
from .plan import BenchmarkPlan, Unit, clip_work

# How results documents describe the shared ground-truth work of the warp error (provenance; the release's metrics).
SHARED_WARP_NOTE = "devil demo: GT flow and occlusion computed once per clip (WarpErrorMetric.prepare)"


@dataclass
class InpaintScoreRun:
    """What :func:`inpaint_and_score` produced: per-video values by (unit key, method), worker CPU by method, and
    ``failures``: method -> the errors of the units it failed on (``clip <id>: ...``), in the order of the clips."""

    values: dict[tuple[str, str], dict[str, float]]
    inpaint_cpu: dict[str, float]
    score_cpu: dict[str, float]
    failures: dict[str, list[str]] = field(default_factory=dict)
    #: method -> unit key -> what looked wrong (masks read inverted? :mod:`devil_dataset.core.hole_check`)
    hole_problems: dict[str, dict[str, str]] = field(default_factory=dict)
    material_cpu: float = 0.0  # worker CPU seconds of the HTML report's clip material made meanwhile


def _holding_slices(plan: BenchmarkPlan, method: str, unit: Unit) -> list[str]:
    """The slices of ``unit`` whose prediction folder of ``method`` holds its complete prediction."""
    return [s for s in unit.slices if plan.folders[(method, s)].holds(unit.clip_id, unit.fingerprint, unit.num_frames)]


def _adopt_or_forget(plan: BenchmarkPlan, cache: ValuesCache | None, method: str, unit: Unit) -> str | None:
    """Bring the records of ``unit``'s first prediction folder up to date before the work is planned.

    A complete prediction the manifest lacks whose values entry says this version of the method made it (a run
    stopped between the worker's finishing it and the manifest's recording it: Ctrl-C, a crash) is recorded.
    Records of another version of the method (its identity changed) or of a ``rerun`` method are dropped from
    every slice folder of the unit, so the unit is made again. Returns why it is redone (``"changed"``,
    ``"rerun"``) or None.
    """
    folder = plan.folders[(method, unit.slices[0])]
    identity = plan.identity(method)
    if method in plan.rerun or any(plan.folders[(method, s)].stale(unit.clip_id) for s in unit.slices):
        for s in unit.slices:
            plan.folders[(method, s)].forget(unit.clip_id)
        return "rerun" if method in plan.rerun else "changed"
    if (folder.clips.get(unit.clip_id) != unit.fingerprint and cache is not None
            and cache.made(method, unit.clip_id, unit.fingerprint, identity)
            and clip_complete(folder.path / unit.clip_id, unit.num_frames)):
        folder.record(unit.clip_id, unit.fingerprint)
    return None


def _work_items(plan: BenchmarkPlan, cache: ValuesCache | None, values: dict[tuple[str, str], dict[str, float]],
                say: Callable[[str], None] | None = None) -> dict[str, list[ClipItem]]:
    """Clip id -> its (unit, method) items still to inpaint or score, grouped by unit; cached values go to
    ``values``. A unit whose prediction is complete is not inpainted again, one whose values are cached not
    scored again; a unit inpainted again is scored again."""
    todo: dict[str, list[ClipItem]] = {}
    redone: dict[tuple[str, str], int] = {}
    for key, unit in plan.units.items():
        for m in plan.methods:
            why = _adopt_or_forget(plan, cache, m, unit)
            if why is not None:
                redone[(m, why)] = redone.get((m, why), 0) + 1
            have = _holding_slices(plan, m, unit)
            cached = ({} if not plan.pixel_metrics else
                      cache.load(m, unit.clip_id, unit.fingerprint) if cache is not None and have else None)
            if cached is not None:
                values[(key, m)] = cached
            if have and cached is not None:
                continue
            todo.setdefault(unit.clip_id, []).append(ClipItem(
                key, m, unit.hole_bits, unit.hole_shape,
                target=None if have else str(plan.folders[(m, unit.slices[0])].path / unit.clip_id),
                source=str(plan.folders[(m, have[0])].path / unit.clip_id) if have else None, score=cached is None))
    for (m, why), n in redone.items():
        if say is not None:
            say(f"  {m}: {n} unit(s) redone: " + ("--rerun" if why == "rerun" else "the method's code changed since "
                                                  "they were made (its identity differs)"))
    return todo


def _clip_tasks(plan: BenchmarkPlan, todo: dict[str, list[ClipItem]], cache: ValuesCache | None,
                material: str | None = None, dataset_key: str = "") -> list[ClipTask]:
    """One task per clip with work, carrying only the inpainters its items use (and where the worker stores each
    finished item's values, and the HTML report's clip material)."""
    clip_units: dict[str, list[Unit]] = {}
    for unit in plan.units.values():
        if unit.clip_id in todo:
            clip_units.setdefault(unit.clip_id, []).append(unit)
    return [ClipTask(plan.dataset, clip_units[c][0].slices[0], c, todo[c],
                     {m: plan.inpainters[m] for m in dict.fromkeys(it.method for it in todo[c])},
                     list(plan.pixel_metrics), plan.options, clip_work(clip_units[c], len(todo[c])), cache,
                     {m: plan.identity(m) for m in dict.fromkeys(it.method for it in todo[c])},
                     material, ground_truth_identity(dataset_key, c))
            for c in sorted(todo)]


class _SliceProgress:
    """Counts each slice's items still to do and says one line per slice when all its videos are done."""

    def __init__(self, plan: BenchmarkPlan, todo: dict[str, list[ClipItem]],
                 say: Callable[[str], None] | None) -> None:
        self.plan, self.say, self.start = plan, say, time.perf_counter()
        self.waiting = {s: 0 for s in plan.order}
        self.failed = {s: 0 for s in plan.order}
        for items in todo.values():
            for it in items:
                for s in plan.units[it.key].slices:
                    self.waiting[s] += 1
        for s, n in self.waiting.items():
            if n == 0 and say:
                say(f"  {s}: {len(plan.order[s])} videos x {len(plan.methods)} methods already done")

    def done(self, unit: Unit, failed: bool = False) -> None:
        for s in unit.slices:
            self.waiting[s] -= 1
            self.failed[s] += failed
            if self.waiting[s] == 0 and self.say:
                failures = f" ({self.failed[s]} failed)" if self.failed[s] else ""
                self.say(f"  {s}: {len(self.plan.order[s])} videos x {len(self.plan.methods)} methods inpainted and "
                         f"scored{failures}, {time.perf_counter() - self.start:.1f} s")


def inpaint_and_score(plan: BenchmarkPlan, *, cache: ValuesCache | None = None, progress: bool = True,
                      say: Callable[[str], None] | None = None, material: str | os.PathLike | None = None,
                      dataset_key: str = "") -> InpaintScoreRun:
    """Predictions of every (method, slice) of the plan and their per-video values, one clip at a time.

    The plan's ``pixel_metrics`` are scored from memory (values cached in ``cache``); its engine runs the clips
    (default: this process). ``say`` gets one line per slice when all of its videos are done. A method that fails
    on a unit is listed in the run's ``failures`` (its predictions are not linked); the other methods finish.
    ``material``: a folder where the workers also write the HTML report's streams of every unit they inpaint or
    score, from the frames in memory (:class:`~devil_dataset.eval.report.clip_material.ClipMaterial`, the ground
    truth named by ``dataset_key`` and the clip id: :func:`~devil_dataset.pipeline.clip_task.ground_truth_identity`).
    """
    values: dict[tuple[str, str], dict[str, float]] = {}
    todo = _work_items(plan, cache, values, say)
    run = InpaintScoreRun(values, {m: 0.0 for m in plan.methods}, {m: 0.0 for m in plan.methods})
    slices_done = _SliceProgress(plan, todo, say)
    bar = progress_bar(total=sum(len(v) for v in todo.values()), desc="inpaint+evaluate", unit="video",
                       enabled=progress)

    def finish(results: list[ItemResult]) -> None:
        for r in results:
            unit = plan.units[r.key]
            run.inpaint_cpu[r.method] += r.inpaint_cpu
            run.score_cpu[r.method] += r.score_cpu
            run.material_cpu += r.material_cpu
            bar.update(1)
            if r.error is not None:
                run.failures.setdefault(r.method, []).append(r.error)
                slices_done.done(unit, failed=True)
                continue
            if not _holding_slices(plan, r.method, unit):
                plan.folders[(r.method, unit.slices[0])].record(unit.clip_id, unit.fingerprint)
            if r.values is not None:  # the worker stored them in the cache as the unit finished
                values[(r.key, r.method)] = r.values
            if r.hole_problem:
                run.hole_problems.setdefault(r.method, {})[unit.clip_id] = r.hole_problem
            slices_done.done(unit)

    # Clips go to the workers largest first (longest-processing-time order): the last tasks are the short ones, so
    # no worker waits long at the end for the other to finish a big clip (28 s on one core before).
    try:
        tasks = _clip_tasks(plan, todo, cache, None if material is None else str(material), dataset_key)
        for results in plan.engine.map_ordered(clip_task, tasks, cost=operator.attrgetter("work")):
            finish(results)
    finally:
        bar.close()
    for m, problems in run.hole_problems.items():
        line = hole_warning(problems, len(plan.units), f"method {m}")
        if line:
            print(f"devil benchmark: {line}", file=sys.stderr)
    link_shared_predictions(plan, skip=set(run.failures))
    return run


def link_shared_predictions(plan: BenchmarkPlan, skip: set[str] | None = None) -> None:
    """Give every slice of a unit its prediction: hard links to the folder that holds it (see
    :func:`~devil_dataset.inpaint.run.link_prediction`); a unit with no prediction anywhere is an error (methods in
    ``skip``, which failed, are left as they are)."""
    for unit in plan.units.values():
        for m in plan.methods:
            if skip and m in skip:
                continue
            have = _holding_slices(plan, m, unit)
            if not have:
                raise DevilError(f"{plan.folders[(m, unit.slices[0])].path}: no prediction of {m} for clip "
                                 f"{unit.clip_id} (interrupted?)")
            for s in unit.slices:
                if s not in have:
                    link_prediction(plan.folders[(m, have[0])].path / unit.clip_id,
                                    plan.folders[(m, s)].path / unit.clip_id)
                    plan.folders[(m, s)].record(unit.clip_id, unit.fingerprint)


def slice_results(plan: BenchmarkPlan, values: dict[tuple[str, str], dict], *, progress: bool = True
                  ) -> dict[tuple[str, str], dict]:
    """One results document per (method, slice of the plan): the pixel metrics from the per-video ``values`` of
    :func:`inpaint_and_score`, merged with the network metrics scored by
    :func:`~devil_dataset.eval.scoring.evaluate.evaluate_slice` on the prediction folders (all methods of a slice in
    one pass)."""
    if not plan.metrics:
        raise DevilError("slice_results: no metric to score")
    net_docs = {s: evaluate_slice(plan.dataset, s, {m: plan.folders[(m, s)].path for m in plan.methods},
                                  list(plan.network_metrics), plan.options, progress=progress)
                for s in plan.order} if plan.network_metrics else {}
    docs: dict[tuple[str, str], dict] = {}
    for m in plan.methods:
        for s in plan.order:
            doc = _pixel_document(plan, values, m, s) if plan.pixel_metrics else None
            if plan.network_metrics:
                doc = net_docs[s][m] if doc is None else merge_results(doc, net_docs[s][m])
            assert doc is not None  # a metric ran
            if plan.provenance.get(m) is not None:  # what the method is: its command or callable, hashes of its code
                doc["provenance"]["method"] = plan.provenance[m]
            docs[(m, s)] = doc
    return docs


def _pixel_document(plan: BenchmarkPlan, values: dict[tuple[str, str], dict], method: str, slice_name: str) -> dict:
    """The results document of the pixel metrics of (``method``, ``slice_name``) from the per-video values."""
    clip_values = [(plan.units[k].clip_id, plan.units[k].num_frames, values.get((k, method), {}))
                   for k in plan.order[slice_name]]
    inputs = {"mode": "dataset", "dataset": plan.dataset, "config": slice_name,
              "predictions": str(plan.folders[(method, slice_name)].path), "prediction_layout": "frames"}
    metrics, _ = build_metrics(list(plan.pixel_metrics), plan.options)
    doc = build_results(evaluation_from_values(metrics, clip_values), method=method, slice_name=slice_name,
                        inputs=inputs, options=plan.options, metrics=list(metrics), skipped=dict(plan.skipped_metrics))
    if "warp_error" in metrics:
        doc["provenance"]["metrics"]["warp_error"]["shared"] = SHARED_WARP_NOTE
    return doc


__all__ = ["InpaintScoreRun", "SHARED_WARP_NOTE", "inpaint_and_score", "link_shared_predictions", "slice_results"]

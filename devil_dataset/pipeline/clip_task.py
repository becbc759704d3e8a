"""One clip's work in a worker: every (unit, method) of the clip inpainted, written and scored from memory.

The worker (:func:`clip_task`) reads the clip's frames once, runs every inpainter on every unit of the clip that has
no complete prediction yet, writes it into the first slice's prediction folder (:class:`~devil_dataset.inpaint.run.
PredictionFolder`) and scores it from the array just made (:class:`~devil_dataset.eval.scoring.clip_scoring.
ClipScorer`: ground-truth work once per clip, hole work once per unit).

Each finished item is stored by the worker itself, as it finishes: the prediction folder (atomic), then its values
with the method's identity in the values cache (:class:`~devil_dataset.eval.scoring.results.ValuesCache`, atomic),
so work finished before a Ctrl-C or a crash is kept even when its result never reached the main process. A method
that fails on a clip (:class:`~devil_dataset.core.errors.DevilError`, its message naming the clip) is reported in
the item's ``error``; the clip's other items go on.

With a clip material folder (``ClipTask.material``), the worker also encodes the HTML report's streams of each item
from the frames in memory (:class:`~devil_dataset.eval.report.clip_material.ClipMaterial`: the unit's ground truth
and masked input, the prediction's output and error map), so that the report copies them instead of decoding.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..core.errors import DevilError
from ..core.hole_check import check_hole, hole_problem
from ..core.release_format import read_frame_pngs
from ..data import iter_slice
from ..eval.metrics.metric import EvalOptions
from ..eval.report.clip_material import ClipMaterial, prediction_folder_digest
from ..eval.scoring.clip_scoring import ClipScorer
from ..eval.scoring.results import ValuesCache
from ..inpaint.contract import Inpainter
from ..inpaint.run import inpaint_clip, write_prediction
from .plan import unpack_hole


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
    cache: ValuesCache | None = None  # where each finished item's values go (None: not stored)
    identities: dict[str, str | None] = field(default_factory=dict)  # method -> identity (None: a baseline)
    material: str | None = None  # the clip material's folder: the HTML report's streams made here (None: not made)
    gt_identity: str = ""  # :func:`ground_truth_identity` of the clip (the material's name of its ground truth)


class ItemResult(NamedTuple):
    """What :func:`clip_task` reports per item: CPU seconds of inpainting and scoring, values (None: not scored),
    and the error of a method that failed on the clip (None: it did not)."""

    key: str
    method: str
    inpaint_cpu: float
    values: dict[str, float] | None
    score_cpu: float
    error: str | None = None
    hole_problem: str | None = None  # masks read inverted? (:func:`devil_dataset.core.hole_check.hole_problem`)
    material_cpu: float = 0.0  # CPU seconds of the HTML report's streams made from this item (and its unit)


def ground_truth_identity(dataset_key: str, clip_id: str) -> str:
    """The identity of a clip's ground truth frames in clip material: the dataset's digest
    (:func:`~devil_dataset.eval.scoring.results.dataset_digest`) and the clip id (a clip's frames are the same in
    every slice holding it: the benchmark reads them from one slice for all).

    >>> ground_truth_identity("0123abcd", "scene-01")
    '0123abcd/scene-01'
    """
    return f"{dataset_key}/{clip_id}"


def clip_frames(dataset: str | os.PathLike, slice_name: str, clip_id: str) -> np.ndarray:
    """The decoded frames of ``clip_id`` in ``slice_name`` (only that row is decoded)."""
    for row in iter_slice(dataset, slice_name, columns=["clip_id", "frames"], clip_ids={clip_id}):
        return row["frames"]
    raise DevilError(f"{dataset}: clip {clip_id} is missing from slice {slice_name}")


def clip_task(task: ClipTask) -> list[ItemResult]:
    """Worker: every (unit, method) of one clip: inpaint, write the release-layout PNGs, score from memory.

    The ground-truth work of the metrics runs once per clip (its CPU shared out evenly over the scored items) and
    the hole work once per unit; a prediction is scored from the array just made, so it is never read back from
    its PNGs in the same run.
    """
    gt = clip_frames(task.dataset, task.slice_name, task.clip_id)
    scored = [it for it in task.items if it.score and task.metric_names]
    c = time.process_time()
    scorer = ClipScorer(task.clip_id, gt, task.metric_names, task.options) if scored else None
    shared = (time.process_time() - c) / max(1, len(scored))
    out = []
    current: tuple[str, np.ndarray] | None = None  # one unit's hole at a time
    made_units: set[str] = set()  # units whose ground truth and masked input streams are made (clip material)
    for it in task.items:
        if current is None or current[0] != it.key:
            current = (it.key, unpack_hole(it.hole_bits, it.hole_shape))
        hole = current[1]
        fingerprint = it.key[len(task.clip_id) + 1:]
        c = time.process_time()
        pred = None
        if it.target is not None:
            if task.cache is not None:  # values never outlive the prediction they scored
                task.cache.forget(it.method, task.clip_id, fingerprint)
            try:
                pred = inpaint_clip(task.inpainters[it.method], gt, hole, task.clip_id)
            except DevilError as exc:  # this method failed on this clip: the clip's other items go on
                out.append(ItemResult(it.key, it.method, time.process_time() - c, None, 0.0, str(exc)))
                continue
            write_prediction(it.target, pred)
        inpaint_cpu = time.process_time() - c
        values, score_cpu = None, 0.0
        if scorer is not None and it.score:
            c = time.process_time()
            if pred is None:  # not inpainted here: the prediction is in its source folder
                pred = read_frame_pngs(Path(str(it.source)), "pred")
            values = scorer.score(pred, hole, it.key)
            score_cpu = time.process_time() - c + shared
        problem = hole_problem(check_hole(hole, pred, gt)) if pred is not None else None
        if task.cache is not None and (values is not None or (it.target is not None and not task.metric_names)):
            task.cache.save(it.method, task.clip_id, fingerprint, values or {}, task.identities.get(it.method))
        material_cpu = _make_material(task, it, gt, hole, pred, made_units)
        out.append(ItemResult(it.key, it.method, inpaint_cpu, values, score_cpu, None, problem, material_cpu))
    return out


def _make_material(task: ClipTask, it: ClipItem, gt: np.ndarray, hole: np.ndarray, pred: np.ndarray | None,
                   made_units: set[str]) -> float:
    """The HTML report's streams of one item, from the frames in memory (:class:`~devil_dataset.eval.report.
    clip_material.ClipMaterial`): its unit's ground truth and masked input (once per unit) and the prediction's
    output and error map, each unless already made; returns the CPU seconds spent."""
    if task.material is None or pred is None:
        return 0.0
    c = time.process_time()
    material = ClipMaterial(task.material)
    if it.key not in made_units:
        made_units.add(it.key)
        material.make_unit(task.gt_identity, gt, it.key[len(task.clip_id) + 1:], hole)
    pred_id = prediction_folder_digest(Path(str(it.target if it.target is not None else it.source)))
    if pred_id is not None:  # the digest of the files just written: the report finds the stream by them
        material.make_prediction(task.gt_identity, gt, pred_id, pred)
    return time.process_time() - c


__all__ = ["ClipItem", "ClipTask", "ItemResult", "clip_frames", "clip_task", "ground_truth_identity"]

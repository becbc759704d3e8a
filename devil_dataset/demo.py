"""The end-to-end demo (``devil demo``): build the sample, run the baselines, evaluate, report, check the findings.

Stages (each resumes from what an earlier run left in ``OUT``):

1. **build** the built-in sample dataset into ``OUT/dataset`` (:func:`devil_dataset.builder.build.build`, skipped
   when a complete dataset is there);
2. **plan**: read every slice's clip ids and hole masks; a *unit* is one (clip, hole mask) pair, which several
   slices can share (the sample's six foreground slices reuse the same clips and some masks);
3. **inpaint+evaluate**, one *clip* at a time in ``jobs`` worker processes, largest clips first
   (:func:`clip_work`): each worker gets the clip's frames once, inpaints every unit of it with every method and
   writes ``OUT/predictions/<method>/<slice>/<clip id>/frame_%04d_pred.png`` (the release layout, with the
   ``.devil-inpaint.json`` manifest of :mod:`devil_dataset.inpaint.run`; a unit shared by several slices is written
   once and hard-linked), then scores each prediction from memory with the pixel metrics (PSNR, SSIM, PCons, warp
   error with OpenCV DIS flow) through the evaluation engine (:mod:`devil_dataset.eval.evaluate`): the
   ground-truth work (``prepare``: the warp error's flows) is done once per clip and shared by every method and
   slice, the hole work (the pixels entering the warp error, occlusion near the hole) once per unit. Per-video
   values are cached, so a resumed run only inpaints and scores what is missing;
4. **results**: any other metric that can run here (network weights present) through
   :func:`devil_dataset.eval.evaluate.evaluate_slice`, every method in one pass per slice; slice values of the
   pixel metrics are rebuilt from the per-video values
   (:func:`~devil_dataset.eval.evaluate.evaluation_from_values`). One results JSON per (method, slice):
   ``OUT/results/<method>/<slice>.json``;
5. **report**: ``OUT/table1.md``/``.tsv``, relative improvements and the PNG figures
   (:func:`devil_dataset.eval.report.write_report`), then :func:`check_findings` (``OUT/findings.md``/``.json``).

    >>> from devil_dataset.demo import run_demo
    >>> result = run_demo("demo-out")  # doctest: +SKIP
    >>> print(result.table_markdown)  # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import resource
import shutil
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .core.atomic import atomic_directory, atomic_write_text, remove_stale_temporaries
from .core.errors import DevilError
from .core.slices import SLICES

# Issue 6: the three baselines of the demo: per-frame spatial, aligned-neighbour copy, flow propagation.
DEFAULT_METHODS: tuple[str, ...] = ("telea", "aligned-copy", "flow-propagation")
# The paper's ten slices (SPEC section 6); `all` is not part of Table 1.
DEMO_SLICES: tuple[str, ...] = tuple(name for name in SLICES if name != "all")
# --quick: the slices of finding (1) only, and the two cheapest metrics.
QUICK_SLICES: tuple[str, ...] = ("fg_size_low", "fg_size_high")
QUICK_METRICS: tuple[str, ...] = ("psnr", "ssim")
# Metrics computed by the demo's shared-cache pass (no weights needed; SPEC section 7).
PIXEL_METRICS: tuple[str, ...] = ("psnr", "ssim", "pcons", "warp_error")
# Which baselines are per-frame (spatial) and which use other frames (temporal), for the findings.
PER_FRAME_METHODS: tuple[str, ...] = ("telea", "navier-stokes")
TEMPORAL_METHODS: tuple[str, ...] = ("aligned-copy", "flow-propagation")
# Paper section 6 / Table 1: the reconstruction metrics the findings are checked on (LPIPS where present).
RECONSTRUCTION_KEYS: tuple[str, ...] = ("psnr", "ssim", "lpips")
# The demo always uses OpenCV DIS for the warp error's flow (no weights; the same flow on every machine).
DEMO_FLOW = "dis"

DATASET_DIR = "dataset"
PREDICTIONS_DIR = "predictions"
RESULTS_DIR = "results"
CACHE_DIR = ".devil-demo"  # per-video metric values (resume); not part of the outputs


# ----------------------------------------------------------------------------------------------------- results
@dataclass
class StageTiming:
    """Wall and CPU seconds of one stage (CPU: this process plus its finished worker processes)."""

    stage: str
    wall_s: float
    cpu_s: float
    note: str = ""


@dataclass
class Finding:
    """One of the paper's trends checked on the demo's results: ``held`` is True/False, or None if not checkable."""

    key: str
    claim: str
    held: bool | None
    numbers: dict = field(default_factory=dict)
    explanation: str = ""

    def summary(self) -> str:
        verdict = {True: "HELD", False: "NOT HELD", None: "NOT CHECKED"}[self.held]
        return f"[{verdict}] {self.claim}\n    {self.explanation}"


@dataclass
class DemoResult:
    """What :func:`run_demo` produced (paths are inside ``out_dir``)."""

    out_dir: Path
    dataset_dir: Path
    methods: tuple[str, ...]
    slices: tuple[str, ...]
    metrics: list[str]
    skipped_metrics: dict[str, str]
    table: dict[tuple[str, str], dict[str, float]]
    table_markdown: str
    results_files: dict[tuple[str, str], Path]
    report_files: list[Path]
    findings: list[Finding]
    slice_counts: dict[str, int]
    timings: list[StageTiming]

    def timings_text(self) -> str:
        lines = [f"  {'stage':10s} {'wall s':>8s} {'CPU s':>8s}"]
        for t in self.timings:
            lines.append(f"  {t.stage:10s} {t.wall_s:8.1f} {t.cpu_s:8.1f}  {t.note}".rstrip())
        return "\n".join(lines)


def _cpu_seconds() -> float:
    """User + system CPU of this process and of its terminated (joined) children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class _Stage:
    """Context manager recording a :class:`StageTiming`; ``say`` gets one line when the stage starts and ends."""

    def __init__(self, name: str, timings: list[StageTiming], note: str = "",
                 say: Callable[[str], None] | None = None, number: str = ""):
        self.name, self.timings, self.note, self.say, self.number = name, timings, note, say, number

    def __enter__(self) -> "_Stage":
        self.wall, self.cpu = time.perf_counter(), _cpu_seconds()
        if self.say:
            self.say(f"[{self.number}] {self.name} ...")
        return self

    def __exit__(self, exc_type, *exc) -> None:
        timing = StageTiming(self.name, time.perf_counter() - self.wall, _cpu_seconds() - self.cpu, self.note)
        self.timings.append(timing)
        if self.say and exc_type is None:
            note = f" ({self.note})" if self.note else ""
            self.say(f"[{self.number}] {self.name} done in {timing.wall_s:.1f} s wall, {timing.cpu_s:.1f} s CPU{note}")


def _bar(total: int | None, desc: str, enabled: bool, unit: str = "it"):
    from .core.progress import progress_bar

    return progress_bar(total=total, desc=desc, unit=unit, enabled=enabled)


# ------------------------------------------------------------------------------------------------------ stage 1
def dataset_complete(directory: str | os.PathLike, slices: Sequence[str]) -> bool:
    """True when ``directory`` holds a finished ``devil build`` output (card, manifest, shards of ``slices``)."""
    from .builder import dataset_writer as writer

    d = Path(directory)
    if not (d / writer.CARD_NAME).is_file() or not (d / writer.MANIFEST_NAME).is_file():
        return False
    return all(any((d / writer.DATA_DIR / s).glob("test-*.parquet")) for s in slices)


def _dataset_digest(directory: Path) -> str:
    """A short digest of the dataset's manifest (changes whenever a published file changes)."""
    from .builder import dataset_writer as writer

    path = directory / writer.MANIFEST_NAME
    data = path.read_bytes() if path.is_file() else repr(sorted(p.name for p in directory.glob("data/*/*"))).encode()
    return hashlib.sha256(data).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------------ stage 2
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
    hole_bits: np.ndarray | None = field(default=None, repr=False)  # np.packbits of the bool hole [T, H, W]
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
    from .data import iter_slice
    from .inpaint.run import hole_fingerprint

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


def _clip_frames(dataset: Path, unit: Unit) -> np.ndarray:
    """The decoded frames of ``unit``'s clip, read from the first slice that holds it (only that row decoded)."""
    from .data import iter_slice

    for row in iter_slice(dataset, unit.slices[0], columns=["clip_id", "frames"], clip_ids={unit.clip_id}):
        return row["frames"]
    raise DevilError(f"{dataset}: clip {unit.clip_id} is missing from slice {unit.slices[0]}")


# ------------------------------------------------------------------------------------------------------ stage 3
def _pred_dir(out: Path, method: str, slice_name: str) -> Path:
    return out / PREDICTIONS_DIR / method / slice_name


def _run_info(dataset: str, method: str, slice_name: str) -> dict:
    """The ``run`` record of the prediction manifest, as ``devil inpaint --dataset ... --config ...`` writes it."""
    return {"method": method, "dataset": dataset, "config": slice_name, "split": "test", "size_divisor": None}


def _dataset_label(out: Path, dataset: Path) -> str:
    """How predictions name their dataset: ``dataset`` for the demo's own sample (the folder can move), else the
    dataset's absolute path."""
    return DATASET_DIR if dataset == out / DATASET_DIR else str(dataset.resolve())


class _Manifests:
    """The ``.devil-inpaint.json`` of each prediction folder, written by the parent process only."""

    def __init__(self, out: Path, dataset: Path):
        self.out, self.dataset, self.docs = out, _dataset_label(out, dataset), {}

    def get(self, method: str, slice_name: str) -> dict:
        from .inpaint.run import MANIFEST_NAME

        key = (method, slice_name)
        if key not in self.docs:
            d = _pred_dir(self.out, method, slice_name)
            path = d / MANIFEST_NAME
            run = _run_info(self.dataset, method, slice_name)
            doc = {}
            if path.is_file():
                try:
                    doc = json.loads(path.read_text())
                except ValueError:
                    doc = {}
            if doc and doc.get("run") != run:  # another run's folder: start over
                shutil.rmtree(d, ignore_errors=True)
                doc = {}
            self.docs[key] = {"format": "devil-inpaint-manifest", "run": run, "clips": dict(doc.get("clips", {}))}
        return self.docs[key]

    def complete(self, method: str, slice_name: str, unit: Unit) -> bool:
        from .inpaint.run import clip_complete

        doc = self.get(method, slice_name)
        return (doc["clips"].get(unit.clip_id) == unit.fingerprint
                and clip_complete(_pred_dir(self.out, method, slice_name) / unit.clip_id, unit.num_frames))

    def record(self, method: str, slice_name: str, unit: Unit) -> None:
        from .inpaint.run import MANIFEST_NAME

        doc = self.get(method, slice_name)
        doc["clips"][unit.clip_id] = unit.fingerprint
        atomic_write_text(_pred_dir(self.out, method, slice_name) / MANIFEST_NAME,
                          json.dumps(doc, indent=1, sort_keys=True) + "\n")


def _place_prediction(source: Path | None, pred: np.ndarray | None, target: Path) -> None:
    """Create ``target`` atomically: hard links to ``source``'s frames (copies if linking fails), or ``pred``."""
    from .core.release_format import write_frame_pngs

    with atomic_directory(target, overwrite=True) as tmp:
        if source is None:
            write_frame_pngs(pred, tmp, "pred")
            return
        for f in sorted(source.iterdir()):
            try:
                os.link(f, tmp / f.name)
            except OSError:
                shutil.copy2(f, tmp / f.name)


class _Pool:
    """``jobs`` worker processes, or in-process execution for ``jobs == 1`` (same interface, bounded queue)."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.executor = ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else None
        self.pending: dict = {}

    def submit(self, fn: Callable, *args, tag=None) -> list:
        """Submit; return the finished (tag, result) pairs collected while waiting for a free slot."""
        if self.executor is None:
            return [(tag, fn(*args))]
        done = []
        while len(self.pending) >= self.jobs + 1:
            done += self._collect(FIRST_COMPLETED)
        self.pending[self.executor.submit(fn, *args)] = tag
        return done

    def _collect(self, how) -> list:
        finished, _ = wait(list(self.pending), return_when=how)
        out = []
        for f in finished:
            tag = self.pending.pop(f)
            out.append((tag, f.result()))
        return out

    def drain(self) -> list:
        return self._collect("ALL_COMPLETED") if self.pending else []

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)


def _inpaint(method: str, clip_id: str, frames: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """One method's checked prediction of one (clip, hole)."""
    from .inpaint import get_inpainter
    from .inpaint.run import check_prediction

    inpainter = get_inpainter(method)
    try:
        pred = inpainter(frames, hole, clip_id=clip_id) if getattr(inpainter, "wants_clip_id", False) else inpainter(frames, hole)
    except DevilError as exc:
        raise DevilError(f"clip {clip_id}: {exc}") from None
    return check_prediction(pred, frames, clip_id)


@dataclass
class _Item:
    """One (unit, method) of a clip task: inpaint it (into ``target``) and/or score it (from memory or ``source``)."""

    key: str
    method: str
    hole_bits: np.ndarray = field(repr=False)
    hole_shape: tuple
    target: str | None  # prediction folder to write (None: the prediction is already there)
    source: str | None  # prediction folder to read for scoring when not inpainted here
    score: bool


def _clip_task(clip_id: str, gt: np.ndarray, items: list[_Item], metrics: list[str],
               options) -> list[tuple[str, str, float, dict | None, float]]:
    """Worker: every (unit, method) of one clip: inpaint, write the release-layout PNGs, score from memory.

    Returns (unit key, method, inpaint CPU s, values or None, scoring CPU s) per item. Ground-truth work of the
    metrics (:func:`~devil_dataset.eval.evaluate.prepare_clip`) runs once per clip and hole work once per unit
    (their CPU is shared out evenly over the scored items); a prediction is scored from the array just made, so it
    is never read back from its PNGs in the same run.
    """
    from .eval.evaluate import build_metrics, prepare_clip, prepared_for_hole, update_metrics
    from .eval.protocol import VideoSample
    from .core.release_format import read_frame_pngs

    scored = [it for it in items if it.score and metrics]
    c = time.process_time()
    scorers = prepared = None
    if scored:
        scorers, _ = build_metrics(list(metrics), options)
        prepared = prepare_clip(scorers, gt, None)
    shared = (time.process_time() - c) / max(1, len(scored))
    out = []
    current: tuple[str, np.ndarray, dict | None] | None = None  # one unit's hole (and hole work) at a time
    for it in items:
        if current is None or current[0] != it.key:
            hole = _unpack(it.hole_bits, it.hole_shape)
            current = (it.key, hole, None)
        hole = current[1]
        c = time.process_time()
        pred = None
        if it.target is not None:
            pred = _inpaint(it.method, clip_id, gt, hole)
            _place_prediction(None, pred, Path(it.target) / clip_id)
        inpaint_cpu = time.process_time() - c
        values, score_cpu = None, 0.0
        if it.score and metrics:
            c = time.process_time()
            if current[2] is None:
                current = (it.key, hole, prepared_for_hole(prepared, hole))
            if pred is None:
                pred = read_frame_pngs(Path(it.source) / clip_id, "pred")
            values = update_metrics(scorers, VideoSample("clip", gt, pred, hole), current[2])
            score_cpu = time.process_time() - c + shared
        out.append((it.key, it.method, inpaint_cpu, values, score_cpu))
    return out


def inpaint_evaluate_stage(out: Path, dataset: Path, methods: Sequence[str], units: Mapping[str, Unit],
                           order: Mapping[str, list[str]], metric_names: Sequence[str], options, *, jobs: int,
                           progress: bool, say: Callable[[str], None] | None = None
                           ) -> tuple[dict[tuple[str, str], dict], dict[str, float], dict[str, float]]:
    """Predictions of every (method, slice) and their pixel-metric values, one clip at a time.

    A worker gets a clip's frames once and, for each of its units and methods, inpaints (unless a complete
    prediction is there), writes the prediction folder and scores it from memory (unless its values are cached).
    Returns ``(values by (unit key, method), inpaint CPU s by method, scoring CPU s by method)``. ``say`` gets
    one line per slice when all of its videos are done.
    """
    manifests = _Manifests(out, dataset)
    for m in methods:
        for s in order:
            d = _pred_dir(out, m, s)
            manifests.get(m, s)
            d.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(d)
    digest = _dataset_digest(dataset)
    pixel = [m for m in PIXEL_METRICS if m in metric_names]
    values: dict[tuple[str, str], dict] = {}
    todo: dict[str, list[_Item]] = {}  # clip id -> its items, grouped by unit
    for key, unit in units.items():
        for m in methods:
            have = [s for s in unit.slices if manifests.complete(m, s, unit)]
            cached = _load_values(out, m, unit, digest, pixel) if pixel else {}
            if cached is not None:
                values[(key, m)] = cached
            if have and cached is not None:
                continue
            todo.setdefault(unit.clip_id, []).append(_Item(
                key, m, unit.hole_bits, unit.hole_shape,
                target=None if have else str(_pred_dir(out, m, unit.slices[0])),
                source=str(_pred_dir(out, m, have[0])) if have else None, score=cached is None))
    inpaint_cpu: dict[str, float] = {m: 0.0 for m in methods}
    score_cpu: dict[str, float] = {m: 0.0 for m in methods}
    total = sum(len(v) for v in todo.values())
    bar = _bar(total, "inpaint+evaluate", progress, unit="video")
    start = time.perf_counter()
    waiting = {s: 0 for s in order}  # per slice: (unit, method) items still to do
    for items in todo.values():
        for it in items:
            for s in units[it.key].slices:
                waiting[s] += 1
    for s, n in waiting.items():
        if n == 0 and say:
            say(f"  {s}: {len(order[s])} videos x {len(methods)} methods already done")

    def finish(done):
        for _tag, rows in done:
            for key, m, i_cpu, v, s_cpu in rows:
                unit = units[key]
                inpaint_cpu[m] += i_cpu
                score_cpu[m] += s_cpu
                if not any(manifests.complete(m, s, unit) for s in unit.slices):
                    manifests.record(m, unit.slices[0], unit)
                if v is not None:
                    values[(key, m)] = v
                    _save_values(out, m, unit, digest, pixel, v)
                bar.update(1)
                for s in unit.slices:
                    waiting[s] -= 1
                    if waiting[s] == 0 and say:
                        say(f"  {s}: {len(order[s])} videos x {len(methods)} methods inpainted and scored, "
                            f"{time.perf_counter() - start:.1f} s")

    # Clips go to the workers largest first (longest-processing-time order): the last tasks are the short ones, so
    # no worker waits long at the end for the other to finish a big clip (issue 17: 28 s on one core before).
    clip_units: dict[str, list[Unit]] = {}
    for unit in units.values():
        if unit.clip_id in todo:
            clip_units.setdefault(unit.clip_id, []).append(unit)
    schedule = sorted(todo, key=lambda c: (-clip_work(clip_units[c], len(todo[c])), c))
    pool = _Pool(jobs)
    try:
        for clip in schedule:
            frames = _clip_frames(dataset, clip_units[clip][0])
            finish(pool.submit(_clip_task, clip, frames, todo[clip], pixel, options, tag=clip))
        finish(pool.drain())
    finally:
        pool.close()
        bar.close()
    # every slice of a unit gets the prediction (hard links to the folder that holds it)
    for unit in units.values():
        for m in methods:
            have = [s for s in unit.slices if manifests.complete(m, s, unit)]
            if not have:
                raise DevilError(f"{out}: no prediction of {m} for clip {unit.clip_id} (interrupted?)")
            src = _pred_dir(out, m, have[0]) / unit.clip_id
            for s in unit.slices:
                if s not in have:
                    _place_prediction(src, None, _pred_dir(out, m, s) / unit.clip_id)
                    manifests.record(m, s, unit)
    return values, inpaint_cpu, score_cpu


def _values_path(out: Path, method: str, unit: Unit) -> Path:
    return out / CACHE_DIR / "values" / method / f"{unit.key}.json"


def _load_values(out: Path, method: str, unit: Unit, digest: str, metrics: Sequence[str]) -> dict | None:
    path = _values_path(out, method, unit)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except ValueError:
        return None
    if doc.get("dataset") != digest or not set(metrics) <= set(doc.get("metrics", [])):
        return None
    return {k: (float("nan") if v is None else float(v)) for k, v in doc["values"].items()}


def _save_values(out: Path, method: str, unit: Unit, digest: str, metrics: Sequence[str], values: dict) -> None:
    doc = {"dataset": digest, "metrics": list(metrics), "clip_id": unit.clip_id, "hole": unit.fingerprint,
           "values": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}}
    atomic_write_text(_values_path(out, method, unit), json.dumps(doc, indent=1, sort_keys=True) + "\n")


def results_stage(out: Path, dataset: Path, methods: Sequence[str], slices: Sequence[str],
                  units: Mapping[str, Unit], order: Mapping[str, list[str]], values: Mapping[tuple[str, str], dict],
                  metric_names: Sequence[str], network_metrics: Sequence[str], skipped: Mapping[str, str], options, *,
                  progress: bool) -> dict[tuple[str, str], Path]:
    """One results JSON per (method, slice): the pixel metrics from the per-video ``values`` of
    :func:`inpaint_evaluate_stage`, the network metrics (weights present) through the engine for all methods of a
    slice in one pass. Returns the paths."""
    from .eval.evaluate import build_metrics, evaluate_slice, evaluation_from_values
    from .eval.results import build_results, read_results, write_results

    pixel = [m for m in PIXEL_METRICS if m in metric_names]

    net_docs = {s: evaluate_slice(str(dataset), s, {m: _pred_dir(out, m, s) for m in methods}, list(network_metrics),
                                  options, progress=progress) for s in slices} if network_metrics else {}
    results: dict[tuple[str, str], Path] = {}
    for m in methods:
        for s in slices:
            clip_values = [(units[k].clip_id, units[k].num_frames, values.get((k, m), {})) for k in order[s]]
            inputs = {"mode": "dataset", "dataset": str(dataset), "config": s,
                      "predictions": str(_pred_dir(out, m, s)), "prediction_layout": "frames"}
            doc = None
            if pixel:
                metrics, _ = build_metrics(list(pixel), options)
                doc = build_results(evaluation_from_values(metrics, clip_values), method=m, slice_name=s,
                                    inputs=inputs, options=options, metrics=list(metrics), skipped=dict(skipped))
                if "warp_error" in metrics:
                    doc["provenance"]["metrics"]["warp_error"]["shared"] = (
                        "devil demo: GT flow and occlusion computed once per clip (WarpErrorMetric.prepare)")
            if network_metrics:
                doc = net_docs[s][m] if doc is None else _merge_docs(doc, net_docs[s][m])
            path = out / RESULTS_DIR / m / f"{s}.json"
            write_results(path, doc)
            read_results(path)  # check it reads back
            results[(m, s)] = path
    return results


def _merge_docs(doc: dict, extra: dict) -> dict:
    """Merge a second results document (other metrics, same method/slice/videos) into ``doc``."""
    doc["metrics"] = list(dict.fromkeys(doc["metrics"] + extra["metrics"]))
    for k, v in extra["summary"].items():
        if not (k in doc["summary"] and isinstance(v, float) and math.isnan(v)):
            doc["summary"][k] = v
    for c, vals in extra["videos"].items():
        doc["videos"].setdefault(c, {}).update(vals)
    doc["clipped"].update(extra.get("clipped", {}))
    doc["provenance"]["metrics"].update(extra["provenance"]["metrics"])
    doc["provenance"]["weights"].update(extra["provenance"].get("weights", {}))
    doc["provenance"]["flow_backend"].update(extra["provenance"].get("flow_backend", {}))
    return doc


# -------------------------------------------------------------------------------------------------- findings
def _better(key: str, a: float, b: float) -> bool:
    """True when value ``a`` is better than ``b`` for ``key`` (registry direction)."""
    from .eval.report import KEY_INFO

    return a > b if KEY_INFO.get(key, (True, ""))[0] else a < b


def _present(table, methods, slices, keys) -> list[str]:
    return [k for k in keys if all(not math.isnan(table.get((m, s), {}).get(k, float("nan")))
                                   for m in methods for s in slices)]


def check_findings(table: Mapping[tuple[str, str], Mapping[str, float]],
                   slice_counts: Mapping[str, int] | None = None) -> list[Finding]:
    """Check the paper's three robust trends on a results table ``{(method, slice): {key: value}}``.

    1. ``fg_size_high`` is harder than ``fg_size_low`` on every reconstruction metric (PSNR, SSIM, LPIPS where
       present), for every method;
    2. higher foreground displacement helps the temporal methods more than the per-frame one: the relative
       improvement (hi - lo) / lo of ``fg_displacement`` (sign flipped where lower is better) is larger for every
       temporal method than for the per-frame method, on every reconstruction metric;
    3. camera motion hurts ``aligned-copy`` less than the per-frame method: its relative change from
       ``camera_motion_low`` to ``camera_motion_high`` is larger (less negative) on every reconstruction metric.

    >>> t = {("telea", "fg_size_low"): {"psnr": 30.0}, ("telea", "fg_size_high"): {"psnr": 25.0}}
    >>> check_findings(t)[0].held
    True
    """
    from .eval.report import relative_improvement

    counts = dict(slice_counts or {})
    methods = list(dict.fromkeys(m for m, _ in table))
    per_frame = next((m for m in PER_FRAME_METHODS if m in methods), None)
    temporal = [m for m in methods if m in TEMPORAL_METHODS]
    ri = relative_improvement({k: dict(v) for k, v in table.items()})

    def n(*slices):
        return ", ".join(f"{s}: {counts[s]} videos" for s in slices if s in counts)

    findings = []
    # (1) fg_size
    lo, hi = "fg_size_low", "fg_size_high"
    ms = [m for m in methods if (m, lo) in table and (m, hi) in table]
    keys = _present(table, ms, (lo, hi), RECONSTRUCTION_KEYS)
    claim = "fg_size_high is harder than fg_size_low on every reconstruction metric (" + ", ".join(keys or RECONSTRUCTION_KEYS[:2]) + ")"
    if not ms or not keys:
        findings.append(Finding("fg_size", claim, None, {}, "needs fg_size_low and fg_size_high results"))
    else:
        nums = {m: {k: {"low": table[(m, lo)][k], "high": table[(m, hi)][k]} for k in keys} for m in ms}
        fails = [f"{m} {k}" for m in ms for k in keys if not _better(k, table[(m, lo)][k], table[(m, hi)][k])]
        parts = [f"{m}: " + ", ".join(f"{k} {table[(m, lo)][k]:.4g} -> {table[(m, hi)][k]:.4g}" for k in keys) for m in ms]
        expl = "; ".join(parts) + f" ({n(lo, hi)})"
        if fails:
            expl += ". Not harder for: " + ", ".join(fails)
        findings.append(Finding("fg_size", claim, not fails, nums, expl))

    def compare(attr: str, key: str, claim: str, winners: list[str], what: str) -> Finding:
        lo_s, hi_s = f"{attr}_low", f"{attr}_high"
        if per_frame is None or not winners:
            return Finding(key, claim, None, {}, "needs a per-frame method (telea or navier-stokes) and "
                           + what)
        ms = [per_frame] + winners
        if not all((m, s) in table for m in ms for s in (lo_s, hi_s)):
            return Finding(key, claim, None, {}, f"needs {lo_s} and {hi_s} results")
        keys = _present(table, ms, (lo_s, hi_s), RECONSTRUCTION_KEYS)
        nums = {m: {k: ri.get((attr, m), {}).get(k, float("nan")) for k in keys} for m in ms}
        fails = [f"{w} {k}" for w in winners for k in keys if not nums[w][k] > nums[per_frame][k]]
        parts = [f"{m}: " + ", ".join(f"{k} {100 * nums[m][k]:+.2f}%" for k in keys) for m in ms]
        expl = "relative improvement low -> high: " + "; ".join(parts) + f" ({n(lo_s, hi_s)})"
        if fails:
            expl += ". Not larger than " + per_frame + " for: " + ", ".join(fails)
        return Finding(key, claim, not fails, {"relative_improvement": nums}, expl)

    findings.append(compare(
        "fg_displacement", "fg_displacement",
        f"higher FG displacement helps the temporal methods ({', '.join(temporal) or 'none'}) more than the "
        f"per-frame one ({per_frame or 'none'})", temporal, "a temporal method"))
    findings.append(compare(
        "camera_motion", "camera_motion",
        f"camera motion hurts aligned-copy less than the per-frame method ({per_frame or 'none'})",
        [m for m in methods if m == "aligned-copy"], "aligned-copy"))
    return findings


def findings_markdown(findings: Sequence[Finding]) -> str:
    """The findings as a markdown list (written to ``findings.md`` and into ``docs/demo.md``)."""
    lines = []
    for f in findings:
        verdict = {True: "**held**", False: "**not held**", None: "not checked"}[f.held]
        lines.append(f"- {verdict}: {f.claim}. {f.explanation}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------- pipeline
def resolve_metrics(metric_names: Sequence[str] | None, options) -> tuple[list[str], list[str], dict[str, str]]:
    """(pixel metrics for the shared pass, other metrics that can run, skipped metric -> reason).

    ``None``: every DEVIL metric whose weights are present; the pixel metrics always run.
    """
    from .eval.evaluate import build_metrics
    from .eval.registry import METRICS

    if metric_names is None:
        _, skipped = build_metrics(None, options)
        runnable = [m for m in METRICS if m not in skipped and m in _devil_metrics()]
    else:
        by_key = {k: e.name for e in METRICS.values() for k in e.keys}
        runnable = list(dict.fromkeys(by_key.get(n, n) for n in metric_names))
        build_metrics(runnable, options)  # raises for unknown names / missing weights
        skipped = {}
    pixel = [m for m in PIXEL_METRICS if m in runnable]
    others = [m for m in runnable if m not in PIXEL_METRICS]
    return pixel, others, skipped


def skipped_lines(skipped: Mapping[str, str]) -> list[str]:
    """One line per distinct reason: ``skipped pvcs, vfid: rgb_imagenet.pt: not in the weights cache ...``.

    >>> skipped_lines({"fid": "x.pth: not cached. Run this.", "lpips": "y.pth: not cached. Run that."})
    ['skipped metric fid: x.pth: not cached', 'skipped metric lpips: y.pth: not cached', '  (see `devil weights --help`: network weights are downloaded or imported into the cache)']
    """
    by_reason: dict[str, list[str]] = {}
    for name, reason in skipped.items():
        by_reason.setdefault(reason.split(". ")[0].rstrip("."), []).append(name)
    lines = [f"skipped metric{'s' if len(names) > 1 else ''} {', '.join(names)}: {reason}"
             for reason, names in by_reason.items()]
    if lines:
        lines.append("  (see `devil weights --help`: network weights are downloaded or imported into the cache)")
    return lines


def _devil_metrics() -> tuple[str, ...]:
    from .eval.registry import DEVIL_METRICS

    return DEVIL_METRICS


def run_demo(
    out_dir: str | os.PathLike,
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    slices: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    dataset: str | os.PathLike | None = None,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] | None = print,
) -> DemoResult:
    """Run the whole benchmark on the built-in sample: build, inpaint, evaluate, report, findings.

    Args:
        out_dir: everything goes here (``dataset/``, ``predictions/``, ``results/``, ``table1.md``, figures).
        methods: baselines of :data:`devil_dataset.inpaint.INPAINTERS`.
        slices: slices to run (default: the ten; ``quick``: the two ``fg_size`` slices).
        metrics: metric names (default: every DEVIL metric that can run here; ``quick``: PSNR and SSIM).
        dataset: use this built dataset instead of building the sample into ``out_dir/dataset``.
        jobs: worker processes (default: ``min(2, cpu count)``).
        echo: where the table, skipped metrics and findings are printed (None: silent).

    Example:
        >>> r = run_demo("demo-out", methods=["telea", "aligned-copy"], quick=True)  # doctest: +SKIP
        >>> [f.held for f in r.findings]  # doctest: +SKIP
    """
    from .eval.protocol import EvalOptions
    from .inpaint import INPAINTERS

    def say(text: str) -> None:
        if echo is not None:
            echo(text)
            sys.stdout.flush()  # a log (stdout not a terminal) shows each line as it happens

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    methods = tuple(dict.fromkeys(methods))
    bad = [m for m in methods if m not in INPAINTERS]
    if bad or not methods:
        raise DevilError(f"--methods: unknown {', '.join(bad) or '(none given)'}; valid: {', '.join(INPAINTERS)}")
    slices = tuple(dict.fromkeys(slices or (QUICK_SLICES if quick else DEMO_SLICES)))
    bad = [s for s in slices if s not in SLICES]
    if bad:
        raise DevilError(f"--slices: unknown {', '.join(bad)}; valid: {', '.join(SLICES)}")
    if metrics is None and quick:
        metrics = QUICK_METRICS
    jobs = max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1)))
    options = EvalOptions(device="cpu", flow=DEMO_FLOW)
    out.mkdir(parents=True, exist_ok=True)
    timings: list[StageTiming] = []

    # 1. dataset
    ds = Path(dataset) if dataset is not None else out / DATASET_DIR
    stage_say = say if echo is not None else None
    with _Stage("build", timings, say=stage_say, number="1/5") as st:
        if dataset is not None:
            if not ds.is_dir():
                raise DevilError(f"{ds}: no such dataset directory")
            st.note = "given dataset"
        elif dataset_complete(ds, slices):
            st.note = "reused"
        else:
            from .builder.build import build

            say(f"building the sample dataset into {ds} ...")
            build([], ds, sample=True, progress=progress, jobs=jobs)

    # 2. plan + metrics
    with _Stage("plan", timings, say=stage_say, number="2/5"):
        pixel, others, skipped = resolve_metrics(metrics, options)
        for line in skipped_lines(skipped):
            say(line)
        units, order = plan_units(ds, slices)
    counts = {s: len(order[s]) for s in slices}

    # 3. inpaint + pixel metrics, one clip at a time (predictions scored from memory)
    with _Stage("inpaint+evaluate", timings, say=stage_say, number="3/5") as st:
        values, inpaint_cpu, score_cpu = inpaint_evaluate_stage(out, ds, methods, units, order, pixel, options,
                                                                jobs=jobs, progress=progress, say=stage_say)
        st.note = ("worker CPU inpaint " + ", ".join(f"{m} {c:.0f}s" for m, c in inpaint_cpu.items())
                   + "; scoring " + ", ".join(f"{m} {c:.0f}s" for m, c in score_cpu.items()))

    # 4. results (network metrics through the engine when their weights are present)
    with _Stage("results", timings, say=stage_say, number="4/5"):
        results = results_stage(out, ds, methods, slices, units, order, values, pixel, others, skipped, options,
                                progress=progress)

    # 5. report + findings
    with _Stage("report", timings, say=stage_say, number="5/5"):
        from .eval.report import KEY_ORDER, score_table, table1_markdown, write_report
        from .eval.results import read_results

        table = score_table(read_results(results[(m, s)]) for s in slices for m in methods)
        keys = sorted({k for row in table.values() for k, v in row.items() if not math.isnan(v)},
                      key=lambda k: (KEY_ORDER.index(k) if k in KEY_ORDER else len(KEY_ORDER), k))
        report_files = write_report(table, out, keys)
        table_md = table1_markdown(table, keys)
        findings = check_findings(table, counts)
        atomic_write_text(out / "findings.md", findings_markdown(findings))
        atomic_write_text(out / "findings.json", json.dumps([asdict(f) for f in findings], indent=1, default=str) + "\n")
        report_files += [out / "findings.md", out / "findings.json"]
        from .eval.html_report import write_html_report  # issue 15: the HTML diagnosis report

        html_index = write_html_report([read_results(results[(m, s)]) for s in slices for m in methods],
                                       out / "report-html", keys, jobs=jobs,
                                       plots_from=[p for p in report_files if p.suffix == ".png"])
        report_files.append(html_index)
    result = DemoResult(out, ds, methods, slices, pixel + others, dict(skipped), table, table_md, results,
                        report_files, findings, counts, timings)
    atomic_write_text(out / "timings.json", json.dumps([asdict(t) for t in timings], indent=1) + "\n")
    say("")
    say(table_md.rstrip())
    say("")
    say("videos per slice: " + ", ".join(f"{s} {c}" for s, c in counts.items()))
    say("findings (paper section 6):")
    for f in findings:
        say("  " + f.summary().replace("\n", "\n  "))
    say("")
    say("timings:\n" + result.timings_text())
    say(f"HTML report: {html_index}")
    say(f"wrote {len(report_files)} report files, {len(results)} results files and the predictions under {out}")
    return result


__all__ = ["DEFAULT_METHODS", "DEMO_SLICES", "DemoResult", "Finding", "StageTiming", "Unit",
           "check_findings", "dataset_complete", "findings_markdown", "plan_units", "run_demo"]

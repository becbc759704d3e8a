"""``devil report --html``: a self-contained HTML diagnosis report (open ``index.html`` from disk, no CDN).

The folder holds ``index.html`` (Jinja2 template ``templates/report.html.j2``, inline CSS and JS), ``plots/``
(the PNG plots of :func:`devil_dataset.eval.report.write_plots`) and ``clips/`` (small H.264 mp4 files made with
PyAV: per slice and method the worst and best clips by a chosen metric, as ground truth, masked input, each
method's output and error map, played in sync and steppable frame by frame). The clips are made from the decoded
frames (:mod:`devil_dataset.eval.report.clip_material`), or copied from clip material made ahead (``devil benchmark``
and ``devil demo`` make it while inpainting): the same files either way.

Number formats, titles, best-per-slice, relative improvements, per-slice intervals over videos and what was
skipped come from :mod:`devil_dataset.eval.report` (one source of truth); the marks of methods not significantly
different from the best come from the paired comparisons of :mod:`devil_dataset.eval.stats`.

    >>> error_map(np.zeros((1, 2, 2, 3), np.uint8), np.full((1, 2, 2, 3), 10, np.uint8))[0, 0, 0].tolist()
    [40, 40, 40]
"""
from __future__ import annotations

import hashlib
import html
import json
import math
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ...core.atomic import atomic_path, atomic_write_text
from ...core.engines import Engine, largest_first
from ...core.errors import DevilError
from ...core.release_format import list_frames
from ...data import iter_slice
from ..protocols.registry import higher_is_better, key_title
from ..scoring.inputs import DirectorySource, PredictionStore
from ..scoring.results import require_inputs
from ..stats.intervals import DEFAULT_LEVEL, Intervals, result_cell, video_intervals
from ..stats.significance import SIGNIFICANCE_ALPHA, indistinguishable_from_best
from .caveats import IDENTICAL_MARK, Caveats, counted, significance_floor_note
from .clip_material import (  # noqa: F401  (error_map, write_clip_mp4: this module's API before clip_material)
    CLIP_FPS,
    ERROR_GAIN,
    ClipMaterial,
    ClipSource,
    copy_stream,
    error_grey,
    error_map,
    frame_files_digest,
    grey_to_rgb,
    shrink,
    shrink_masked,
    stream_key,
    write_clip_mp4,
    write_stream,
)
from .files import built_in_sibling
from .plots import write_plots
from .tables import (
    RELATIVE_IMPROVEMENT_CAPTION,
    Table,
    _best,
    _keys,
    _methods,
    _ri_rows,
    _slices,
    fmt,
    per_video_rows,
    per_video_tsv,
    score_table,
    skipped_line,
    skipped_metrics,
    title,
)

# Clips shown per slice and method at each end (worst and best).
DEFAULT_PER_END = 1
# Table 1 puts methods side by side per metric; at most this many value columns per table (metrics are split over
# several tables beyond), so that five or more methods still fit a 1,400 px window without a horizontal scroll.
T1_MAX_COLUMNS = 12


def pick_clips(videos: Mapping[str, Mapping[str, float]], key: str, per_end: int = DEFAULT_PER_END
               ) -> tuple[list[str], list[str]]:
    """(worst, best) clip ids of one results document by ``key`` (NaN skipped; ties by clip id).

    >>> pick_clips({"a": {"psnr": 30}, "b": {"psnr": 20}, "c": {"psnr": None}}, "psnr")
    (['b'], ['a'])
    """
    vals = []
    for cid, row in videos.items():
        v = row.get(key)
        if isinstance(v, (int, float)) and not math.isnan(float(v)) and not math.isinf(float(v)):
            vals.append((float(v), cid))
    if not vals:
        return [], []
    hib = higher_is_better(key)
    asc = sorted(vals, key=lambda x: (x[0], x[1]))
    worst = [c for _, c in (asc if hib else asc[::-1])[:per_end]]
    best = [c for _, c in (asc[::-1] if hib else asc)[:per_end]]
    return worst, best


def _load_gt(inputs: Mapping, clip_ids: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Ground-truth frames and holes of ``clip_ids`` from the results' ``inputs`` (dataset or directory mode)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    mode = inputs.get("mode")
    if mode == "dataset":

        for row in iter_slice(inputs["dataset"], inputs["config"], columns=["clip_id", "frames", "hole"],
                              clip_ids=clip_ids):  # only the chosen clips are read and decoded
            out[str(row["clip_id"])] = (np.asarray(row["frames"]), np.asarray(row["hole"], bool))
    elif mode == "directory":

        for s in DirectorySource(inputs["gt_dir"], inputs["predictions"]):
            if s.clip_id in clip_ids:
                out[s.clip_id] = (s.gt, s.hole)
    else:
        raise DevilError(f"results inputs mode {mode!r}: cannot find the clips' ground truth")
    return out


def _slug(*parts: str) -> str:
    return "__".join("".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in p) for p in parts)


@dataclass
class _ClipShow:
    """One slice's player group of a clip: why it is shown, where its ground truth is and each method's predictions;
    ``source``: where its streams are in clip material (None: made from the decoded frames)."""

    slice: str
    why: list[str]  # why the clip is shown on this slice (``worst for <method>``, ...)
    inputs: dict  # the results' ``provenance.inputs`` (where the ground truth is)
    per_method: dict  # method -> (predictions folder, per-video values)
    source: ClipSource | None = None


@dataclass
class _ClipTask:
    """Every player group of one clip, over the slices that show it (picklable: a worker process makes them)."""

    clip_id: str
    shows: list[_ClipShow]
    metric: str
    out: str
    material: str | None = None  # the clip material's folder (:class:`ClipMaterial`), if any


def _digest(*arrays: np.ndarray) -> str:
    """SHA-256 of the arrays' shapes, types and bytes: equal digests, equal frames (hence equal files)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.view(np.uint8).reshape(-1).data)
    return h.hexdigest()


def _prediction_digest(store: PredictionStore, clip_id: str) -> str | None:
    """SHA-256 of the files holding a clip's prediction (the same files, the same frames); None when the layout's
    files cannot be listed (the prediction is then decoded every time)."""
    if store.layout == "video":
        path = store._video_path(clip_id)
        files = [path] if path is not None else []
    else:
        folder = store.root if store.layout == "single" else store.root / clip_id
        files = list_frames(folder, "pred") if folder.is_dir() else []
    return frame_files_digest(files, store.layout) if files else None


class _ClipWriter:
    """Writes one clip's streams (H.264 mp4 and a JPEG poster each) into ``out``; a stream whose frames were already
    written under another name (the same clip shown on several slices: its ground truth, or a (clip, hole) unit the
    slices share) is copied, not made and encoded again, and so is a stream found in the clip ``material``: the
    encoding is deterministic, so the bytes are the same."""

    def __init__(self, out: Path, material: ClipMaterial | None = None) -> None:
        self.out = out
        self.material = material
        self.written: dict[tuple, tuple[Path, Path]] = {}  # what the stream is made of -> (mp4, poster) written

    def stream(self, key: tuple, rel: str, frames) -> dict:
        """Write the stream ``rel`` (an ``.mp4`` path relative to ``out``) of the frames ``frames()`` returns, or
        copy the files written for the same ``key`` (a tuple; ``("material", name)``: the stream ``name`` of the
        clip material); returns its player entry without the label."""
        poster = rel[:-4] + ".jpg"
        done = self.written.get(key)
        if done is None and self.material is not None and key[0] == "material":
            done = self.material.find(key[1])
        if done is not None:
            copy_stream(done, self.out / rel, self.out / poster)
        else:
            write_stream(frames(), self.out / rel, self.out / poster)
            done = (self.out / rel, self.out / poster)
        self.written[key] = done
        return {"src": rel, "poster": poster}


class _MissingGroundTruth(Exception):
    """A show's ground truth is not in its inputs: the show has no player group."""


def _show_streams(show: _ClipShow, cid: str, metric: str, predictions: dict[str, np.ndarray]
                  ) -> tuple[list[tuple[str, tuple, Any]], int]:
    """One show's streams as (label, key, frames maker) and its number of frames. Without a ``source`` the ground
    truth is decoded now and the streams are keyed by the frames' digests; with one, they are keyed by their
    clip-material names and the frames are decoded only for a stream the material lacks."""
    gt_frames: list[tuple[np.ndarray, np.ndarray]] = []

    def ground_truth() -> tuple[np.ndarray, np.ndarray]:
        if not gt_frames:
            found = _load_gt(show.inputs, {cid}).get(cid)
            if found is None:
                raise _MissingGroundTruth(cid)
            gt_frames.append(found)
        return gt_frames[0]

    src = show.source
    if src is None:
        gt, hole = ground_truth()
        gt_key, num_frames = _digest(gt), int(gt.shape[0])
        keys: tuple[tuple, tuple] = (("gt", gt_key), ("masked", gt_key, _digest(hole)))
    else:
        gt_key, num_frames = src.gt, src.num_frames
        keys = (("material", stream_key("gt", src.gt)), ("material", stream_key("masked", src.gt, src.hole)))
    streams: list[tuple[str, tuple, Any]] = [
        ("ground truth", keys[0], lambda: shrink(ground_truth()[0])),
        ("masked input", keys[1], lambda: shrink_masked(*ground_truth()))]
    for m, (folder, videos) in show.per_method.items():
        store = PredictionStore(folder)
        files_key = _prediction_digest(store, cid)

        def pred(store=store, key=files_key or f"{folder}/{cid}"):
            if key not in predictions:
                predictions.clear()  # one clip's frames in memory at a time
                predictions[key] = store.read(cid)
            return predictions[key]

        if src is not None and files_key is not None:
            pred_key: tuple = ("material", stream_key("pred", files_key))
            error_key: tuple = ("material", stream_key("error", src.gt, files_key))
        else:
            pred_key = ("pred", files_key or f"{folder}/{cid}")
            error_key = ("error", gt_key, pred_key[1])
        v = videos.get(cid, {}).get(metric)
        label = f"{m} ({key_title(metric)} {fmt(metric, v if v is not None else None)})"
        # shrink the grey error, then make it RGB: the same pixels as shrinking the RGB map, a third of the work
        streams += [(label, pred_key, lambda pred=pred: shrink(pred())),
                    (f"{m} error x{ERROR_GAIN}", error_key,
                     lambda pred=pred: grey_to_rgb(shrink(error_grey(ground_truth()[0], pred()))))]
    return streams, num_frames


def _write_clip_groups(task: _ClipTask) -> list[dict | None]:
    """Encode one clip's player groups, one per slice of ``task.shows`` (None where the ground truth is missing):
    ground truth, masked input, each method's output and error map. What several slices share (the same ground
    truth frames, hole or prediction files) is computed and encoded once (:class:`_ClipWriter`); what the clip
    material holds is copied from there."""

    out, cid = Path(task.out), task.clip_id
    writer = _ClipWriter(out, ClipMaterial(task.material) if task.material is not None else None)
    predictions: dict[str, np.ndarray] = {}  # prediction files' digest -> frames
    groups: list[dict | None] = []
    for show in task.shows:
        try:
            streams, num_frames = _show_streams(show, cid, task.metric, predictions)
            vids = [{"label": label, **writer.stream(key, f"clips/{_slug(show.slice, cid, str(i))}.mp4", frames)}
                    for i, (label, key, frames) in enumerate(streams)]
        except _MissingGroundTruth:
            groups.append(None)
            continue
        groups.append({"clip_id": cid, "why": ", ".join(show.why), "videos": vids, "num_frames": num_frames})
    return groups


@dataclass(frozen=True)
class _ReportData:
    """What the page is made of, gathered once from the results documents (:func:`_gather`)."""

    docs: list[Mapping]
    table: Table
    methods: list[str]
    slices: list[str]
    keys: list[str]  # the computed keys shown, in order
    asked: Sequence[str] | None  # the keys asked for (the relative-improvement table applies them itself)
    intervals: Intervals  # per (method, slice) and key: mean, standard error and interval over videos
    comparisons: Sequence[Mapping] | None  # the paired comparisons, or None (only the best is marked)
    by: dict[tuple[str, str], Mapping]  # (method, slice) -> its results document
    caveats: Caveats  # clipped videos and mixed scoring: marked, never best


def _gather(docs: Iterable[Mapping], keys: Sequence[str] | None, comparisons: Sequence[Mapping] | None,
            caveats: Caveats | None = None) -> _ReportData:
    """The report's data from the results documents; refuses none."""
    docs = list(docs)
    if not docs:
        raise DevilError("no results to report")
    table: Table = score_table(docs)
    return _ReportData(
        docs=docs, table=table, methods=_methods(table), slices=_slices(table), keys=_keys(table, keys), asked=keys,
        intervals=video_intervals(docs), comparisons=comparisons,
        by={result_cell(d): d for d in docs},
        caveats=caveats or Caveats())


def _table1_cell(data: _ReportData, cell: tuple[str, str, str], best: str | None, tied: set[str]) -> dict:
    """One Table 1 cell ``(method, slice, key)``: text, standard error, interval tooltip and marks."""
    m, s, k = cell
    v = data.table.get((m, s), {}).get(k)
    num = None if v is None or math.isnan(v) else v
    iv = data.intervals.get((m, s), {}).get(k) or {}
    se, ci = iv.get("se"), iv.get("ci") or [None, None]
    ok = num is not None and isinstance(se, (int, float)) and math.isfinite(se)
    tip = (f"mean {fmt(k, v)}, standard error {fmt(k, se)} over {counted(int(iv.get('n') or 0), 'video')}, "
           f"{round(100 * iv.get('level', 0.95))}% interval [{fmt(k, ci[0])}, {fmt(k, ci[1])}] "
           f"({iv.get('method')})") if ok else ""
    n_clipped = data.caveats.clipped_n(m, s, k)
    mixed = data.caveats.mixed.get((m, s))
    if n_clipped:
        tip += f"; {n_clipped} video(s) infinite, clipped to the slice's largest finite value (the release's rule)"
    same = sorted(data.caveats.identical.get((m, s), {}).get(k, ()))
    if same:
        tip += (f"; identical to the ground truth in every pixel (an empty mask?): {', '.join(same)}, moving the mean "
                "toward the best")
    if mixed:
        tip += f"; scored differently: {mixed}"
    return {"text": fmt(k, v), "se": f"±{fmt(k, se)}" if ok else "", "tip": tip.lstrip("; "), "value": num,
            "best": best == m, "tied": num is not None and m in tied and not mixed,
            "clipped": f"∞{n_clipped}" if n_clipped and num is not None else "", "mixed": bool(mixed),
            "identical": f"{IDENTICAL_MARK}{len(same)}" if same and num is not None else ""}


def _t1_key_groups(data: _ReportData) -> list[list[str]]:
    """The metrics of each Table 1 table: at most :data:`T1_MAX_COLUMNS` method columns per table."""
    per = max(1, T1_MAX_COLUMNS // max(1, len(data.methods)))
    return [data.keys[i:i + per] for i in range(0, len(data.keys), per)] or [[]]


def _table1(data: _ReportData) -> tuple[list[dict], float | None]:
    """Table 1 as one or more tables (:func:`_t1_key_groups`): one row per slice, methods side by side per metric
    (mean, standard error over videos and interval); with the first interval level found (None without intervals)."""
    tables = []
    level = None
    for n, keys in enumerate(_t1_key_groups(data)):
        rows = []
        for s in data.slices:
            cells = []
            for k in keys:
                best = _best(data.table, s, k, data.methods, caveats=data.caveats)
                tied = set() if best is None or data.comparisons is None else indistinguishable_from_best(
                    data.comparisons, s, k, best)
                for m in data.methods:
                    level = level or (data.intervals.get((m, s), {}).get(k) or {}).get("level")
                    cells.append(_table1_cell(data, (m, s, k), best, tied))
            rows.append({"slice": s, "cells": cells})
        tables.append({"id": "table1" if n == 0 else f"table1-{n + 1}", "rows": rows,
                       "header": [{"title": title(k), "key": k, "methods": data.methods} for k in keys]})
    return tables, level


def _write_plot_files(data: _ReportData, out: Path, plots: bool, plots_from: Sequence[str | Path] | None
                      ) -> list[str]:
    """The plots in ``out/plots`` (copied from ``plots_from`` or drawn); their paths relative to ``out``."""
    if not plots:
        return []
    if plots_from is None:
        return [p.relative_to(out).as_posix() for p in write_plots(data.table, out / "plots", data.keys,
                                                                    data.intervals, data.caveats)]
    plot_files: list[str] = []
    (out / "plots").mkdir(parents=True, exist_ok=True)
    for src in (Path(p) for p in plots_from if str(p).endswith(".png")):
        target = out / "plots" / src.name
        with atomic_path(target) as tmp:
            shutil.copyfile(src, tmp)
        plot_files.append(target.relative_to(out).as_posix())
    return plot_files


def _clip_metric(clip_metric: str | None, keys: Sequence[str]) -> str | None:
    """The key that ranks clips: ``clip_metric``, else ``psnr`` if shown, else the first key (None: no keys)."""
    return clip_metric or ("psnr" if "psnr" in keys else (keys[0] if keys else None))


def _chosen_clips(data: _ReportData, slice_name: str, metric: str, per_end: int) -> dict[str, list[str]]:
    """Clip id -> why it is shown (``worst for <method>``, ``best for <method>``): the union over methods."""
    chosen: dict[str, list[str]] = {}
    for m in data.methods:
        d = data.by.get((m, slice_name))
        if d is None:
            continue
        worst_clips, best_clips = pick_clips(d.get("videos") or {}, metric, per_end)
        for c in worst_clips:
            chosen.setdefault(c, []).append(f"worst for {m}")
        for c in best_clips:
            chosen.setdefault(c, []).append(f"best for {m}")
    return chosen


def _same_dataset(inputs: Mapping, source: ClipSource) -> bool:
    """Whether results ``inputs`` read their ground truth from the dataset folder of ``source``."""
    dataset = inputs.get("dataset")
    return inputs.get("mode") == "dataset" and isinstance(dataset, str) and \
        os.path.realpath(dataset) == os.path.realpath(source.dataset)


def _clip_tasks(data: _ReportData, metric: str, per_end: int, out: Path, material: ClipMaterial | None = None,
                sources: Mapping[tuple[str, str], ClipSource] | None = None
                ) -> tuple[list[_ClipTask], dict[str, list[str]]]:
    """One clip-encoding task per clip shown, holding every slice that shows it (in slice order); and per slice
    with clips to show, its clips in the order they were chosen. ``sources``: (slice, clip id) -> where its streams
    are in the clip ``material`` (used where the show's ground truth is read from the source's dataset)."""
    tasks: dict[str, _ClipTask] = {}
    order: dict[str, list[str]] = {}
    folder = None if material is None else str(material.folder)
    for s in data.slices:
        chosen = _chosen_clips(data, s, metric, per_end)
        if not chosen:
            continue
        present = [m for m in data.methods if (m, s) in data.by]
        per_method = {m: (data.by[(m, s)]["provenance"]["inputs"]["predictions"], (data.by[(m, s)].get("videos") or {}))
                      for m in present}
        inputs = data.by[(present[0], s)]["provenance"]["inputs"]
        order[s] = list(chosen)
        for cid, why in chosen.items():
            task = tasks.setdefault(cid, _ClipTask(cid, [], metric, str(out), folder))
            source = (sources or {}).get((s, cid))
            if source is not None and not _same_dataset(inputs, source):
                source = None  # the results read their ground truth elsewhere
            task.shows.append(_ClipShow(s, why, inputs, per_method, source if material is not None else None))
    return list(tasks.values()), order


def _provenance(docs: Sequence[Mapping]) -> dict[str, dict]:
    """Per ``method / slice``: package version, options, flow backend, weights and metric modes."""
    prov = {}
    for d in docs:
        p = d.get("provenance") or {}
        prov[f"{d.get('method')} / {d.get('slice')}"] = {
            "package_version": p.get("package_version"), "options": p.get("options"),
            "flow_backend": p.get("flow_backend"), "weights": p.get("weights"),
            "metric modes": {n: {k: v for k, v in (mp or {}).items() if k in ("mode", "modes", "version")}
                             for n, mp in (p.get("metrics") or {}).items()}}
    return prov


def _table_parts(data: _ReportData) -> dict[str, Any]:
    """The template's table parts: Table 1 (header, rows, interval level, significance marks and power note), the
    relative improvements and the line of what was not computed."""
    t1_tables, level = _table1(data)
    ri_header, ri_rows = _ri_rows(data.table, data.asked, data.caveats)
    pv_header, pv_rows = per_video_rows(data.docs, data.keys)
    return {"methods": data.methods, "t1_tables": t1_tables,
            "ri_header": ri_header, "ri_rows": ri_rows, "ri_caption": RELATIVE_IMPROVEMENT_CAPTION,
            "skipped": skipped_line(skipped_metrics(data.docs)), "compared": data.comparisons is not None,
            "power_note": significance_floor_note(data.comparisons), "caveats": data.caveats.legend(data.keys),
            "level": round(100 * (level or DEFAULT_LEVEL)), "alpha": SIGNIFICANCE_ALPHA,
            "pv_header": pv_header, "pv_rows": pv_rows}


@dataclass(frozen=True)
class _Media:
    """What the page links: the plots' relative paths, the clip sections and the metric that chose the clips."""

    plots: list[str]
    sections: list[dict]
    metric: str | None


def _page_template():
    """The Jinja2 template of ``index.html`` (``templates/report.html.j2``), autoescaped."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("devil_dataset.eval.report", "templates"), autoescape=select_autoescape())
    return env.get_template("report.html.j2")


def _render_page(template, tables: Mapping[str, Any], media: _Media, docs: Sequence[Mapping]) -> str:
    """``index.html``'s text: ``template`` (:func:`_page_template`) filled with the tables, media and provenance."""
    prov = json.dumps(_provenance(docs), indent=1, sort_keys=True, default=str)
    return template.render(
        **tables, plots=media.plots, sections=media.sections, metric=media.metric,
        metric_title=key_title(media.metric) if media.metric else media.metric, fps=CLIP_FPS, provenance=prov,
        escape=html.escape)


class ClipEncoding:
    """The HTML report's clips (:func:`write_html_report`), encoded by ``engine`` in a background thread from the moment
    this is made, so that the caller computes and draws the rest of the report meanwhile; :meth:`sections` waits for
    them, :meth:`cancel` stops what is still queued. Results without their inputs (ground truth, predictions) are
    refused here, before anything is written. ``docs``, ``out_dir``, ``keys``, ``clip_metric`` and ``per_end`` are
    those the report is written with. ``material`` (:class:`~devil_dataset.eval.report.clip_material.ClipMaterial`)
    and ``sources`` ((slice, clip id) -> :class:`~devil_dataset.eval.report.clip_material.ClipSource`): streams made
    ahead (``devil benchmark`` makes them while inpainting), copied instead of decoded and encoded again (the same
    files); a stream the material lacks is made from the decoded frames.

    Example:
        >>> encoding = ClipEncoding(docs, "report-html", engine=get_engine())  # doctest: +SKIP
        >>> write_html_report(docs, "report-html", encoding=encoding, engine=get_engine())  # doctest: +SKIP
    """

    def __init__(self, docs: Iterable[Mapping], out_dir: str | Path, keys: Sequence[str] | None = None, *,
                 engine: Engine, clip_metric: str | None = None, per_end: int = DEFAULT_PER_END,
                 material: ClipMaterial | None = None,
                 sources: Mapping[tuple[str, str], ClipSource] | None = None) -> None:
        data = _gather(docs, keys, None)
        require_inputs(data.docs, "the HTML report's clips (--clips-per-end 0: a report without them)")
        metric = _clip_metric(clip_metric, data.keys)
        tasks, self._order = (_clip_tasks(data, metric, per_end, Path(out_dir), material, sources)
                              if metric is not None else ([], {}))
        self._tasks = largest_first(tasks, lambda t: len(t.shows))  # the clips shown on most slices first
        self._made: dict[tuple[str, str], dict | None] = {}
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._encode, args=(engine,), name="html-report-clips", daemon=True)
        self._thread.start()

    def _encode(self, engine: Engine) -> None:
        results = engine.map_ordered(_write_clip_groups, self._tasks)
        try:
            for task, groups in zip(self._tasks, results):
                self._made.update(((show.slice, task.clip_id), group) for show, group in zip(task.shows, groups))
                if self._stop.is_set():
                    break
        except BaseException as exc:  # raised to the caller by sections()
            self._error = exc
        finally:
            close = getattr(results, "close", None)  # leaving early cancels the clips still queued
            if close is not None:
                close()

    def cancel(self) -> None:
        """Encode no further clip (the ones being encoded finish); :meth:`sections` is then incomplete."""
        self._stop.set()

    def sections(self) -> list[dict]:
        """Wait for the clips; one section of player groups per slice with clips to show, in slice order, its clips
        in the order they were chosen (a clip without ground truth left out). Raises what the encoding raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return [{"slice": s, "groups": [g for c in cids if (g := self._made.get((s, c))) is not None]}
                for s, cids in self._order.items()]


def write_html_report(  # noqa: PLR0913  (public API: keyword-only options)
    docs: Iterable[Mapping],
    out_dir: str | Path,
    keys: Sequence[str] | None = None,
    *,
    clip_metric: str | None = None,
    per_end: int = DEFAULT_PER_END,
    clips: bool = True,
    plots: bool = True,
    plots_from: Sequence[str | Path] | None = None,
    comparisons: Sequence[Mapping] | None = None,
    caveats: Caveats | None = None,
    encoding: ClipEncoding | None = None,
    engine: Engine,
) -> Path:
    """Write the HTML report folder; returns the path of ``index.html``.

    ``docs``: results documents (:func:`devil_dataset.eval.scoring.results.read_results`), one per method and slice.
    ``clip_metric``: the key that ranks clips (default: ``psnr`` if present, else the first key).
    ``plots_from``: PNG plots already drawn for the same table and keys (what
    :func:`devil_dataset.eval.report.write_report` returned): copied into ``plots/`` instead of drawn again.
    ``comparisons``: the paired comparisons of the same documents (``comparisons.json``,
    :func:`devil_dataset.eval.stats.significance.compare_methods`): Table 1 then marks the methods whose Holm-adjusted
    p against the best is not below 0.05; without them only the best is marked.
    ``caveats`` (:class:`~devil_dataset.eval.report.caveats.Caveats`): cells resting on clipped videos carry ``∞n``
    and cells scored differently ``§``; neither is ever marked best.
    ``engine`` (:func:`devil_dataset.core.engines.get_engine`) encodes the clips, one clip (over every slice that
    shows it) per task, in a background thread while the tables and plots are made (the same files on every engine
    and worker count); ``encoding``: a :class:`ClipEncoding` of the same documents and options already started (the
    caller did other work meanwhile), used instead. The page also holds every video's values (a sortable per-video
    table, also written as ``per_video.tsv``); each player has a poster (its first frame) and loads when scrolled to.

    Example:
        >>> write_html_report([read_results(p) for p in paths], "report-html", engine=get_engine())  # doctest: +SKIP
    """
    template = _page_template()
    docs = list(docs)
    data = _gather(docs, keys, comparisons, caveats)
    out = Path(out_dir)
    try:
        # Built beside ``out`` and moved in at the end: a failure leaves no partial report (report/files.py).
        # Clips a caller started encoding into ``out`` (ClipEncoding) are written beside the build, not in it.
        with built_in_sibling(out, shared=encoding is not None) as build:
            if clips and encoding is None:  # refused (inputs missing) before anything is written, not after the plots
                encoding = ClipEncoding(docs, build, keys, engine=engine, clip_metric=clip_metric, per_end=per_end)
            tables = _table_parts(data)
            atomic_write_text(build / "per_video.tsv", per_video_tsv(data.docs, data.keys))
            plot_files = _write_plot_files(data, build, plots, plots_from)
            # Clips: per slice, union of each method's worst/best; one player group per clip.
            metric = _clip_metric(clip_metric, data.keys)
            sections = encoding.sections() if clips and encoding is not None else []
            page = _render_page(template, tables, _Media(plot_files, sections, metric), data.docs)
            atomic_write_text(build / "index.html", page)
    except BaseException:
        if encoding is not None:
            encoding.cancel()  # nothing more is encoded for a report that failed
        raise
    return out / "index.html"

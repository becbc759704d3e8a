"""The one runner of the protocols that read folders of their own (ProPainter's, PROVE's, any registered one, and
DEVIL's release folders: :mod:`devil_dataset.eval.protocols.devil.run`).

A protocol supplies four things: its layout listing (the videos to score, each with a ``name``), its per-video
scoring function (a module-level function or a ``functools.partial`` of one: engine workers run it), its summary
rule (:func:`mean_over_videos`, or its own, e.g. ProPainter's frame-weighted one, or DEVIL's merge of each clip's
metric state fed through ``on_video``) and its provenance record. The runner does the rest, the same way for every
protocol:

- which metrics run (:func:`prepare_run`: the protocols' one rule,
  :func:`~devil_dataset.eval.protocols.declaration.runnable_metrics`, a skipped metric's note, the device resolved);
- the videos scored in order (:func:`score_videos`): in this process, in local worker processes or on an engine
  (:class:`~devil_dataset.core.engines.Engine`: local or Ray), with a progress bar and an ``on_video`` callback;
- interruption and resume (:class:`StoredVideoScores`): with a cache folder, each video's record is written
  atomically as soon as it is scored, under the video's content (the bytes of its files) and the scoring identity
  (protocol, metrics, options, package version, network); a run started again after an interruption scores only the
  videos without a record, and writes the same document;
- the results document (:func:`folder_document`): the head, the skipped metrics' ``null`` values and notes, the
  warnings, provenance, in the protocol's key order, through the one builder
  :func:`~devil_dataset.eval.scoring.results.results_document`. Writing it atomically is
  :func:`~devil_dataset.eval.scoring.results.write_results`'s.

    >>> from functools import partial
    >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol, ResultKey
    >>> toy = EvaluationProtocol("toy", "", (ResultKey("err", False, ".3f", "Err"),), (), ("err",), ("err",))
    >>> setup = prepare_run(toy, None, EvalOptions())
    >>> records = score_videos([3.0, 5.0], partial(pow, 2.0))
    >>> summary, uncertainty, unscored = mean_over_videos([{"err": r} for r in records], setup.metrics, seed=0)
    >>> setup.metrics, records, summary
    (('err',), [8.0, 32.0], {'err': 20.0})
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from ...core.atomic import atomic_write_text
from ...core.engines import Engine
from ...core.engines.local import map_ordered
from ...core.errors import DevilError
from ...core.progress import progress_bar
from ...core.version import __version__
from ..kernels.device import resolve_device
from ..metrics.metric import EvalOptions
from ..metrics.registry import skipped_lines
from ..scoring.results import dumps, options_record, results_document, results_provenance
from ..stats.intervals import video_summary
from .declaration import EvaluationProtocol, runnable_metrics

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class RunSetup:
    """What :func:`prepare_run` decided before any video is read: the metrics that run, the skipped ones (metric ->
    reason), the device the networks run on, and the lines the document's ``warnings`` start with (the skipped
    metrics' notes)."""

    metrics: tuple[str, ...]
    skipped: dict[str, str]
    device: str

    @property
    def notes(self) -> list[str]:
        return skipped_lines(self.skipped)


def prepare_run(protocol: EvaluationProtocol, metric_names: Sequence[str] | None, options: EvalOptions, *,
                provided: Sequence[str] = (), networks: Iterable[str] = ()) -> RunSetup:
    """The metrics that run (:func:`~.declaration.runnable_metrics`; none raises, naming every reason) and the device:
    ``options.device`` resolved (``auto``: a GPU when torch sees one) when one of ``networks`` (the metrics that run a
    network) runs, else ``cpu`` for ``auto`` (nothing imports torch). ``provided``: metrics whose network the caller
    injected.

        >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol
        >>> p = EvaluationProtocol("toy", "", (), (), ("a", "b"), ("a",))
        >>> prepare_run(p, ["b"], EvalOptions(device="auto"), networks=("a",))
        RunSetup(metrics=('b',), skipped={}, device='cpu')
    """
    metrics, skipped = runnable_metrics(protocol, metric_names, options, provided)
    if not metrics:
        raise DevilError("no metric can run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    needs_device = bool(set(networks) & set(metrics))
    device = resolve_device(options.device) if needs_device else \
        ("cpu" if options.device == "auto" else options.device)
    return RunSetup(metrics, skipped, device)


def content_digest(paths: Iterable[str | os.PathLike]) -> str:
    """SHA-256 of the names and bytes of ``paths`` (a folder: every file below it, in path order): what a video's
    stored record is keyed by, so a record never outlives the files it was scored from.

        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); _ = (d / "a.png").write_bytes(b"x")
        >>> a = content_digest([d]); _ = (d / "a.png").write_bytes(b"y"); a == content_digest([d])
        False
    """
    h = hashlib.sha256()
    for path in map(Path, paths):
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            h.update(f"{f.relative_to(path) if f != path else f.name}\0".encode())
            with open(f, "rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
    return h.hexdigest()


def scoring_identity(protocol: str, metrics: Sequence[str], options: EvalOptions, **extra: Any) -> str:
    """What makes a folder protocol's per-video values what they are, as one digest: the protocol, the metrics, the
    options (:func:`~devil_dataset.eval.scoring.results.options_record`; the seed only moves the intervals and is left
    out), the package version and ``extra`` (a network's identity, the frame size).

        >>> a = scoring_identity("toy", ["err"], EvalOptions())
        >>> a == scoring_identity("toy", ["err"], EvalOptions(seed=7)), a == scoring_identity("toy", ["err"],
        ...     EvalOptions(parity="corrected"))
        (True, False)
    """
    record = {k: v for k, v in options_record(options).items() if k != "seed"}
    text = dumps({"protocol": protocol, "metrics": list(metrics), "options": record, "package_version": __version__,
                  **extra})
    return hashlib.sha256(text.encode()).hexdigest()


class StoredVideoScores:
    """Per-video records of a folder protocol on disk, one JSON per video: ``DIR/<protocol>/<video>-<key>.json``,
    ``key`` a digest of the scoring identity (:func:`scoring_identity`) and the video's content
    (:func:`content_digest`). A record is read back only when both match (another option, metric set, package
    version or file reads as missing); it is written atomically as soon as its video is scored. ``encode`` /
    ``decode``: the protocol's record to / from JSON-safe values (NaN and infinity through
    :func:`~devil_dataset.eval.scoring.results.dumps`' codec).

        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); _ = (d / "v.txt").write_text("1 2")
        >>> store, content = StoredVideoScores(d / "cache", "toy", "id1", dict, dict), content_digest([d / "v.txt"])
        >>> store.load("v", content) is None
        True
        >>> store.save("v", content, {"err": float("nan")}); store.load("v", content)
        {'err': None}
        >>> StoredVideoScores(d / "cache", "toy", "id2", dict, dict).load("v", content) is None
        True
    """

    def __init__(self, directory: str | os.PathLike, protocol: str, identity: str,
                 encode: Callable[[Any], Mapping[str, Any]], decode: Callable[[Mapping[str, Any]], Any]):
        self.directory, self.protocol, self.identity = Path(directory) / protocol, protocol, identity
        self.encode, self.decode = encode, decode

    def path(self, name: str, content: str) -> Path:
        key = hashlib.sha256(f"{self.identity}\0{content}".encode()).hexdigest()[:20]
        return self.directory / f"{name}-{key}.json"

    def load(self, name: str, content: str) -> Any | None:
        """The stored record of the video ``name`` whose files have the :func:`content_digest` ``content``, or
        None."""
        try:
            doc = json.loads(self.path(name, content).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("scoring") != self.identity or doc.get("content") != content:
            return None
        try:
            return self.decode(doc["record"])
        except (KeyError, TypeError, ValueError):  # a damaged record reads as missing: the video is scored again
            return None

    def save(self, name: str, content: str, record: Any) -> None:
        atomic_write_text(self.path(name, content), dumps({"video": name, "scoring": self.identity,
                                                           "content": content, "record": self.encode(record)}))


def score_videos(  # noqa: PLR0913 - keyword-only options of the one loop every folder protocol runs
    items: Sequence[T],
    score: Callable[[T], R],
    *,
    engine: Engine | None = None,
    jobs: int = 1,
    progress: bool = False,
    desc: str = "videos",
    on_video: Callable[[R], None] | None = None,
    store: StoredVideoScores | None = None,
    name_of: Callable[[Any], str] = lambda item: str(item.name),
    content_of: Callable[[T], str] | None = None,
) -> list[R]:
    """``score(item)`` of every item, in item order: on ``engine`` (local processes or Ray) when given, else in
    ``jobs`` local processes (1: here); a progress bar over the videos, ``on_video`` called with each result in
    order. With a ``store`` (and ``content_of``: the :func:`content_digest` of the files each item is scored from),
    the items with a stored record are not scored again, and each new result is stored before ``on_video`` sees it:
    an interrupted run loses at most the videos in flight."""
    stored: dict[int, R] = {}
    contents: dict[int, str] = {}  # each item's content digest, read once
    if store is not None and content_of is not None:
        for i, item in enumerate(items):
            contents[i] = content_of(item)
            found = store.load(name_of(item), contents[i])
            if found is not None:
                stored[i] = found
    todo = [item for i, item in enumerate(items) if i not in stored]
    runs = iter(engine.map_ordered(score, todo) if engine is not None else map_ordered(score, todo, jobs=jobs))
    out: list[R] = []
    try:
        with progress_bar(total=len(items), desc=desc, unit="video", enabled=progress) as bar:
            bar.update(len(stored))
            for i, item in enumerate(items):
                if i in stored:
                    result = stored[i]
                else:
                    result = next(runs)
                    if store is not None and i in contents:
                        store.save(name_of(item), contents[i], result)
                    bar.update(1)
                out.append(result)
                if on_video is not None:
                    on_video(result)
    finally:  # an interruption cancels the videos still queued (the engines' map_ordered)
        close = getattr(runs, "close", None)
        if close is not None:
            close()
    return out


def mean_over_videos(values: Sequence[Mapping[str, float]], metrics: Sequence[str], seed: int, *,
                     names: Sequence[str] = ()) -> tuple[dict[str, float], dict[str, dict], dict[str, list[str]]]:
    """The video-weighted summary rule: per metric, the mean of the per-video values that exist (``math.fsum``:
    the same for any order), the seeded interval over videos
    (:func:`~devil_dataset.eval.stats.intervals.video_summary`) and the videos (``names``) without a value
    (``unscored``, left out of the mean). Returns ``(summary, uncertainty, unscored)``."""
    summary, uncertainty, unscored = {}, {}, {}
    for m in metrics:
        column = [v[m] for v in values]
        ok = [x for x in column if not math.isnan(x)]
        summary[m] = math.fsum(ok) / len(ok) if ok else float("nan")
        uncertainty[m] = video_summary(column, seed=seed)
        missing = [n for n, x in zip(names, column) if math.isnan(x)]
        if missing:
            unscored[m] = missing
    return summary, uncertainty, unscored


def folder_document(protocol: EvaluationProtocol, options: EvalOptions, setup: RunSetup, *,  # noqa: PLR0913
                    method: str | None, predictions: str | Path, inputs: Mapping[str, Any],
                    record: Mapping[str, Any], fields: Mapping[str, Any], order: Sequence[str]) -> dict:
    """The results document of a folder protocol: the head (``protocol``, ``parity``, ``method``: the predictions
    folder's name unless given, ``slice``: none), then ``fields`` with ``metrics``, ``skipped`` and ``provenance``
    (the package version, options, ``inputs`` and the protocol's ``record``) added, in ``order``
    (:func:`~devil_dataset.eval.scoring.results.results_document`). The ``summary`` (metric -> value) is written in
    the order of the metrics that ran, then each skipped metric as ``null``: a stable schema."""
    summary = fields["summary"]
    return results_document(method or Path(predictions).resolve().name, None, {
        **fields, "metrics": list(setup.metrics), "skipped": setup.skipped,
        "summary": {**{m: summary[m] for m in setup.metrics}, **{m: float("nan") for m in setup.skipped}},
        "provenance": results_provenance(options, inputs, record)}, order, protocol=protocol.name,
        parity=options.parity)


def as_record(obj: Any) -> dict:
    """A dataclass record as a dict of its fields, arrays as lists (at any depth), for :class:`StoredVideoScores`'
    ``encode``.

        >>> import numpy as np
        >>> from devil_dataset.eval.protocols.propainter.run import VideoFrameScores
        >>> as_record(VideoFrameScores("v", 2, {"psnr": np.array([30.0, np.inf])}))
        {'name': 'v', 'num_frames': 2, 'values': {'psnr': [30.0, inf]}, 'hole_problem': None}
    """
    return {f.name: _listed(getattr(obj, f.name)) for f in fields(obj)}


def _listed(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    return value


__all__ = ["RunSetup", "StoredVideoScores", "as_record", "content_digest", "folder_document", "mean_over_videos",
           "prepare_run", "score_videos", "scoring_identity"]

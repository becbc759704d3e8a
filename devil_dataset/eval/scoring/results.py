"""The results document of ``devil evaluate`` (JSON) and its reader.

Schema (``format: "devil-results"``, ``format_version: 1``)::

    {
      "format": "devil-results", "format_version": 1,
      "method": "cpnet",                    # --method-name, else the predictions folder name
      "slice": "fg_displacement_high",      # --config in dataset mode; null in directory mode unless --slice
      "num_videos": 150, "num_frames": 13500,
      "metrics": ["psnr", "ssim", ...],     # metrics that ran (registry names)
      "summary": {"psnr": 36.62, "ssim": 0.9807, "vfid_clips": 0.0622, ...},   # slice-level values
      "videos": {"<clip id>": {"psnr": 35.1, ...}, ...},                        # per-video values
      "uncertainty": {"psnr": {"n": 150, "mean": 36.62, "se": 0.41, "ci": [35.8, 37.4], "level": 0.95,
                               "method": "bootstrap BCa, ..."}, ...,    # per-video keys, eval/stats/
                      "fid": {"n": 150, "mean": 12.3, ..., "groups": 10,
                              "method": "jackknife over 10 groups of videos ..."}},  # with --set-level-ci
      "clipped": {"psnr": ["<clip id>", ...]},   # PSNR-type values that were infinite (clipped, the release's rule)
      "skipped": {"fid": "<reason>"},           # default metrics that could not run here (summary: null)
      "left_out": {"<video>": "<reason>"},      # a folder protocol: ground-truth videos without masks
      "warnings": ["<line>", ...],              # what the run noticed (ignored hidden files, inverted masks)
      "hole_problems": {"<clip id>": "<what>"}, # the clips whose masks look inverted (core/hole_check.py)
      "provenance": {"package_version": ..., "options": {...}, "inputs": {...}, "flow_backend": ...,
                     "weights": {...}, "metrics": {"<name>": {...modes, hashes...}}}
    }

Values that do not exist (NaN) are written as ``null``; an infinite value (a PSNR-type value of a slice where
no video has a finite one to clip to, the release's metrics) as the string ``"inf"`` (JSON has no infinity), which
:func:`read_results` reads back as ``float("inf")``; no sentinel number is ever stored as a score. No timestamps,
so equal inputs give equal bytes. The input paths of ``provenance.inputs`` (dataset, predictions, ground-truth
folder) are written absolute and also relative to the results file (``inputs.from_results``,
:func:`locate_inputs`), and :func:`read_results` points them at where the inputs are now: a report works from any
folder, and after the results and their inputs were moved together. ``provenance.method`` (``devil benchmark``
of a command or callable) records what the method is: the command or callable and the hashes of its code.
:func:`merge_results` joins two documents of the same method and slice (other metrics); :class:`ValuesCache`
keeps per-video values on disk so that a resumed run scores only what is missing.

    >>> doc = {"summary": {"psnr": float("nan")}}
    >>> dumps(doc)
    '{\\n  "summary": {\\n    "psnr": null\\n  }\\n}\\n'
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ...core.atomic import atomic_write_text
from ...core.errors import DevilError
from ...core.hole_check import hole_warning
from ...core.networks import DEFAULT_DINO_MODEL
from ...core.version import __version__
from ...data.load import MANIFEST_NAME
from ..metrics.metric import EvalOptions
from ..metrics.registry import METRICS
from ..stats.intervals import results_uncertainty
from .storage import decode_value, encode_value

if TYPE_CHECKING:  # pragma: no cover
    from .one_pass import Evaluation

RESULTS_FORMAT = "devil-results"
RESULTS_FORMAT_VERSION = 1


def _clean(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats -> None (NaN) or strings (+/-inf), tuples -> lists, numpy scalars -> float."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            obj = obj.item()
        except (TypeError, ValueError):
            return str(obj)
    if isinstance(obj, float):
        return encode_value(obj)
    return obj


def dumps(doc: dict) -> str:
    """Serialise a results document: strict JSON, 2-space indent, trailing newline."""
    return json.dumps(_clean(doc), indent=2, allow_nan=False) + "\n"


def _find(prov: dict, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in prov:
            return prov[k]
    return None


def options_record(options: EvalOptions) -> dict:
    """``asdict(options)`` as results files record it: ``protocol`` only when it is not ``"devil"``, so
    DEVIL's results files keep the bytes they had before the field existed.

    >>> "protocol" in options_record(EvalOptions()), options_record(EvalOptions(protocol="other"))["protocol"]
    (False, 'other')
    """
    record = asdict(options)
    if record.get("protocol") == "devil":
        del record["protocol"]
    if record.get("psnr_cap") == "slice_max":  # the release's rule, recorded as before the field existed
        del record["psnr_cap"]
    if record.get("dino_model") == DEFAULT_DINO_MODEL:  # recorded when it differs (removal metrics)
        del record["dino_model"]
    return record


#: The fields of DEVIL's results documents after the head, in their order (``?``: written only when not empty).
DEVIL_FIELDS: tuple[str, ...] = ("num_videos", "num_frames", "metrics", "summary", "videos", "uncertainty", "clipped",
                                 "skipped", "provenance", "warnings?", "hole_problems?")


def results_document(method: str, slice_name: str | None, fields: Mapping[str, Any], order: Sequence[str], *,
                     protocol: str | None = None, parity: str | None = None) -> dict:
    """The one builder of every results document: the head (format and version; ``protocol`` and ``parity`` for a
    protocol other than DEVIL's, whose documents keep the bytes they had before the fields existed; ``method``,
    ``slice``), then ``fields`` in ``order``. A name of ``order`` ending in ``?`` is written only when its value is not
    empty (``warnings``, ``hole_problems``); every other one must be in ``fields``, and every field must be placed.

    >>> doc = results_document("mine", None, {"num_videos": 2, "warnings": []}, ("num_videos", "warnings?"),
    ...                        protocol="toy", parity="release")
    >>> list(doc)
    ['format', 'format_version', 'protocol', 'parity', 'method', 'slice', 'num_videos']
    """
    head: dict[str, Any] = {"format": RESULTS_FORMAT, "format_version": RESULTS_FORMAT_VERSION}
    if protocol is not None:
        head.update({"protocol": protocol, "parity": parity})
    head.update({"method": method, "slice": slice_name})
    names = [n.rstrip("?") for n in order]
    unplaced = [k for k in fields if k not in names]
    if unplaced:
        raise ValueError(f"results fields without a place in the document: {', '.join(unplaced)}")
    for name in order:
        key = name.rstrip("?")
        if name.endswith("?"):
            if fields.get(key):
                head[key] = fields[key]
        else:
            head[key] = fields[key]
    return head


def results_provenance(options: EvalOptions, inputs: Mapping[str, Any], fields: Mapping[str, Any]) -> dict:
    """The ``provenance`` of every results document: the package version, the options (:func:`options_record`), the
    inputs, then the protocol's ``fields`` (what it did, its networks, its metrics' modes)."""
    return {"package_version": __version__, "options": options_record(options), "inputs": dict(inputs), **fields}


def build_results(
    ev: "Evaluation",
    *,
    method: str,
    slice_name: str | None,
    inputs: dict,
    options: EvalOptions,
    metrics: list[str],
    skipped: dict[str, str],
) -> dict:
    """Assemble DEVIL's results document from an :class:`~devil_dataset.eval.scoring.one_pass.Evaluation`
    (:func:`results_document`, :data:`DEVIL_FIELDS`)."""

    summary = dict(ev.summary)
    for name in skipped:  # a stable schema: keys of skipped metrics are present, null
        for key in METRICS[name].keys if name in METRICS else ():
            summary.setdefault(key, float("nan"))
    flows = {n: f for n, p in ev.metric_provenance.items() if (f := _find(p, ("flow_backend", "flow"))) is not None}
    weights = {n: w for n, p in ev.metric_provenance.items()
               if (w := _find(p, ("weights", "weights_sha256"))) is not None}
    inverted = hole_warning(ev.hole_problems, len(ev.videos), str(inputs.get("predictions", "")))
    return results_document(method, slice_name, {
        "num_videos": len(ev.videos),
        "num_frames": ev.num_frames,
        "metrics": metrics,
        "summary": summary,
        "videos": ev.videos,
        # per-video keys: a function of the per-video values (mergeable); set-level keys (FID, VFID with
        # set_level_ci): the jackknife of the merged per-group metric state
        "uncertainty": {**results_uncertainty(ev.videos), **ev.set_level_uncertainty},
        "clipped": ev.clipped,
        "skipped": skipped,
        "provenance": results_provenance(options, inputs, {"flow_backend": flows, "weights": weights,
                                                           "metrics": ev.metric_provenance}),
        "warnings": [inverted] if inverted else [],
        "hole_problems": dict(ev.hole_problems) if inverted else {},
    }, DEVIL_FIELDS)


# The keys of ``provenance.inputs`` that are paths (the dataset folder, a ground-truth folder, the predictions), and
# the key under which a written results file also records each relative to the file's own folder.
INPUT_PATH_KEYS = ("dataset", "gt_dir", "predictions")
FROM_RESULTS = "from_results"


def locate_inputs(doc: dict, path: str | Path) -> dict:
    """``doc`` with every local input path of ``provenance.inputs`` absolute, and each also recorded relative to the
    folder of the results file ``path`` (``inputs.from_results``), so :func:`read_results` finds the inputs from any
    working directory, and after the results and the inputs were moved together. A Hub repo id is kept as given.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "dataset").mkdir()
    >>> doc = {"provenance": {"inputs": {"mode": "dataset", "dataset": str(d / "dataset")}}}
    >>> locate_inputs(doc, d / "results" / "telea" / "s.json")["provenance"]["inputs"]["from_results"]
    {'dataset': '../../dataset'}
    """
    inputs = (doc.get("provenance") or {}).get("inputs")
    if not isinstance(inputs, dict):
        return doc
    here = Path(path).absolute().parent
    located, relative = dict(inputs), {}
    for key in INPUT_PATH_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value and Path(value).exists():
            absolute = Path(value).resolve()
            located[key] = str(absolute)
            relative[key] = os.path.relpath(absolute, here.resolve())
    if relative:
        located[FROM_RESULTS] = relative
    return {**doc, "provenance": {**doc["provenance"], "inputs": located}}


def _resolve_inputs(doc: dict, path: Path) -> None:
    """Point ``provenance.inputs``' paths at where the inputs are now: as stored (absolute, or relative to the
    working directory), else relative to the results file (``from_results``), else, for a relative path of an older
    file, below one of the results file's parent folders. Paths found nowhere are left as they are
    (:func:`missing_inputs` names them)."""
    inputs = (doc.get("provenance") or {}).get("inputs")
    if not isinstance(inputs, dict):
        return
    here = path.absolute().parent
    stored = inputs.get(FROM_RESULTS)
    relative: dict = stored if isinstance(stored, dict) else {}
    for key in INPUT_PATH_KEYS:
        value = inputs.get(key)
        if not isinstance(value, str) or not value or Path(value).exists():
            continue
        candidates = [here / relative[key]] if isinstance(relative.get(key), str) else []
        if not Path(value).is_absolute():
            candidates += [folder / value for folder in (here, *here.parents)]
        found = next((c for c in candidates if c.exists()), None)
        if found is not None:
            inputs[key] = str(found.resolve())


def missing_inputs(doc: Mapping) -> list[str]:
    """The input paths of a results document (as :func:`read_results` resolved them) that are not on this machine,
    as ``"dataset /path"`` lines; a dataset that may be a Hub repo id (``ORG/NAME``, never located) is not listed.

    >>> missing_inputs({"provenance": {"inputs": {"dataset": "/nope/ds", "predictions": "/nope/p"}}})
    ['dataset /nope/ds', 'predictions /nope/p']
    """
    inputs = (doc.get("provenance") or {}).get("inputs") or {}
    located = inputs.get(FROM_RESULTS) or {}
    out = []
    for key in INPUT_PATH_KEYS:
        value = inputs.get(key)
        if not isinstance(value, str) or not value or Path(value).exists():
            continue
        maybe_repo = key == "dataset" and key not in located and not value.startswith(("/", ".", "~")) \
            and value.count("/") == 1
        if not maybe_repo:
            out.append(f"{key} {value}")
    return out


def require_inputs(docs: Iterable[Mapping], needed_for: str) -> None:
    """Refuse (:class:`DevilError`, every missing path listed once) results documents whose inputs are not on this
    machine, before anything is written for ``needed_for`` (e.g. ``"the HTML report's clips"``).

    >>> require_inputs([{"method": "m", "slice": "s", "provenance": {"inputs": {"dataset": "/nope"}}}], "Clips")
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: Clips need the inputs the results were made from; not found: m / s: ...
    """
    problems = [f"{d.get('method')} / {d.get('slice')}: {line}" for d in docs for line in missing_inputs(d)]
    if problems:
        raise DevilError(f"{needed_for} need the inputs the results were made from; not found: "
                         + "; ".join(dict.fromkeys(problems)))


def write_results(path: str | Path, doc: dict) -> Path:
    """Write a results document atomically, its input paths located (:func:`locate_inputs`)."""
    return atomic_write_text(path, dumps(locate_inputs(doc, path)))


def read_results(path: str | Path) -> dict:
    """Read and check a results document; ``null`` summary values come back as NaN, and the input paths point at
    where the inputs are now (see :func:`locate_inputs`), whatever the working directory."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DevilError(f"{path}: no such results file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DevilError(f"{path}: not a JSON results file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT or not isinstance(doc.get("summary"), dict):
        raise DevilError(f"{path}: not a devil results file (expected format {RESULTS_FORMAT!r} with a summary)")
    if doc.get("format_version", 0) > RESULTS_FORMAT_VERSION:
        raise DevilError(f"{path}: results format version {doc['format_version']} is newer than this package's")
    _resolve_inputs(doc, path)

    num = decode_value
    try:
        doc["summary"] = {k: num(v) for k, v in doc["summary"].items()}
    except (TypeError, ValueError):
        raise DevilError(f"{path}: summary values must be numbers") from None
    try:  # per-video values: "inf" (an infinite PSNR-type value with no finite one to clip to) -> float inf
        doc["videos"] = {c: {k: num(v) for k, v in row.items()} for c, row in (doc.get("videos") or {}).items()}
    except (TypeError, ValueError, AttributeError):
        raise DevilError(f"{path}: per-video values must be numbers") from None
    return doc


def results_in(directory: str | Path) -> list[tuple[Path, dict]]:
    """Every results file under ``directory`` (its ``results/`` sub-folder when it has one, e.g. a ``devil demo`` or
    ``devil benchmark`` output), searched recursively in path order, read and checked; other JSON files (findings,
    comparisons, timings) are passed over. A folder without any results file is a :class:`DevilError`.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = write_results(d / "results" / "telea" / "s.json",
    ...     {"format": RESULTS_FORMAT, "format_version": 1, "method": "telea", "slice": "s", "summary": {}})
    >>> [(p.name, doc["method"]) for p, doc in results_in(d)]
    [('s.json', 'telea')]
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DevilError(f"{directory}: not a folder of results files")
    root = directory / "results" if (directory / "results").is_dir() else directory
    found = []
    for path in sorted(root.rglob("*.json")):
        try:
            head = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(head, dict) and head.get("format") == RESULTS_FORMAT:
            found.append((path, read_results(path)))
    if not found:
        raise DevilError(f"{directory}: no devil results files (*.json of `devil evaluate`/`devil benchmark`) under "
                         f"{root}")
    return found


def merge_results(doc: dict, extra: dict) -> dict:
    """Merge ``extra`` (other metrics of the same method, slice and videos) into the results document ``doc``.

    Metrics, per-video values, clipped lists and provenance are joined; a summary value of ``extra`` replaces
    ``doc``'s unless it is NaN (a skipped metric's placeholder) where ``doc`` has the key.

    >>> a = {"metrics": ["psnr"], "summary": {"psnr": 30.0, "lpips": float("nan")}, "videos": {"c": {"psnr": 30.0}},
    ...      "clipped": {}, "provenance": {"metrics": {"psnr": {}}, "weights": {}, "flow_backend": {}}}
    >>> b = {"metrics": ["lpips"], "summary": {"psnr": float("nan"), "lpips": 0.1}, "videos": {"c": {"lpips": 0.1}},
    ...      "clipped": {}, "provenance": {"metrics": {"lpips": {}}, "weights": {"lpips": "ab"}}}
    >>> m = merge_results(a, b)
    >>> m["metrics"], m["summary"], m["videos"]
    (['psnr', 'lpips'], {'psnr': 30.0, 'lpips': 0.1}, {'c': {'psnr': 30.0, 'lpips': 0.1}})
    """
    doc["metrics"] = list(dict.fromkeys(doc["metrics"] + extra["metrics"]))
    for k, v in extra["summary"].items():
        if not (k in doc["summary"] and isinstance(v, float) and math.isnan(v)):
            doc["summary"][k] = v
    for c, vals in extra["videos"].items():
        doc["videos"].setdefault(c, {}).update(vals)
    doc["clipped"].update(extra.get("clipped", {}))

    # recomputed from the joined per-video values (same numbers as one pass); set-level entries (FID, VFID) carried
    # over, except doc's entry for a key whose value extra replaced (it belonged to the old value)
    replaced = {k for k, v in extra["summary"].items() if not (isinstance(v, float) and math.isnan(v))}
    doc["uncertainty"] = {**{k: v for k, v in doc.get("uncertainty", {}).items() if k not in replaced},
                          **extra.get("uncertainty", {}), **results_uncertainty(doc["videos"])}
    doc["provenance"]["metrics"].update(extra["provenance"]["metrics"])
    doc["provenance"]["weights"].update(extra["provenance"].get("weights", {}))
    doc["provenance"]["flow_backend"].update(extra["provenance"].get("flow_backend", {}))
    return doc


def dataset_digest(directory: str | os.PathLike) -> str:
    """A short digest of a built dataset's ``manifest.json`` (it changes whenever a published file changes); for
    a folder without one, of its shard names.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "manifest.json").write_text("{}")
    2
    >>> dataset_digest(d)
    '44136fa355b3678a'
    """

    directory = Path(directory)
    path = directory / MANIFEST_NAME
    data = path.read_bytes() if path.is_file() else repr(sorted(p.name for p in directory.glob("data/*/*"))).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class ValuesCache:
    """Per-video metric values on disk, one JSON per (method, clip, hole): ``DIR/<method>/<clip id>-<hole>.json``.

    A stored entry is used only for the same dataset (``digest``, see :func:`dataset_digest`), the same
    ``scoring`` identity (what makes the values what they are:
    :func:`~devil_dataset.eval.metrics.registry.scoring_identity`; another mode, arithmetic or flow backend reads as
    missing) and when it holds every one of ``metrics``; anything else reads as missing. NaN values are stored as
    ``null``. An entry also records the identity of the method version that made the prediction it scored
    (``identity``, :meth:`~devil_dataset.inpaint.method_spec.MethodSpec.identity`): the benchmark's workers write
    it as each unit finishes, so a resumed run can trust a prediction finished but not yet recorded (:meth:`made`).

        >>> import tempfile
        >>> cache = ValuesCache(tempfile.mkdtemp(), "d1", ["psnr"])
        >>> cache.load("telea", "c", "f") is None
        True
        >>> cache.save("telea", "c", "f", {"psnr": 30.0, "ssim": float("nan")})
        >>> cache.load("telea", "c", "f")
        {'psnr': 30.0, 'ssim': nan}
        >>> ValuesCache(cache.directory, "d2", ["psnr"]).load("telea", "c", "f") is None  # another dataset
        True
        >>> ValuesCache(cache.directory, "d1", ["psnr"], "other").load("telea", "c", "f") is None  # other scoring
        True
    """

    def __init__(self, directory: str | os.PathLike, digest: str, metrics: Sequence[str], scoring: str = ""):
        self.directory, self.digest, self.metrics, self.scoring = Path(directory), digest, list(metrics), scoring

    def path(self, method: str, clip_id: str, fingerprint: str) -> Path:
        return self.directory / method / f"{clip_id}-{fingerprint}.json"

    def load(self, method: str, clip_id: str, fingerprint: str) -> dict[str, float] | None:
        """The stored values, or None when there are none usable."""
        path = self.path(method, clip_id, fingerprint)
        if not path.is_file():
            return None
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            return None
        if (doc.get("dataset") != self.digest or doc.get("scoring", "") != self.scoring
                or not set(self.metrics) <= set(doc.get("metrics", []))):
            return None
        return {k: (float("nan") if v is None else float(v)) for k, v in doc["values"].items()}

    def save(self, method: str, clip_id: str, fingerprint: str, values: Mapping[str, float],
             identity: str | None = None) -> None:
        doc = {"dataset": self.digest, "scoring": self.scoring, "metrics": self.metrics, "clip_id": clip_id,
               "hole": fingerprint,
               "values": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}}
        if identity is not None:
            doc["identity"] = identity
        atomic_write_text(self.path(method, clip_id, fingerprint), json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def made(self, method: str, clip_id: str, fingerprint: str, identity: str | None) -> bool:
        """True when an entry of this dataset says the unit's prediction was made (and scored) by the method version
        ``identity`` (None: a baseline, whose entries carry none)."""
        try:
            doc = json.loads(self.path(method, clip_id, fingerprint).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and doc.get("dataset") == self.digest and doc.get("identity") == identity

    def forget(self, method: str, clip_id: str, fingerprint: str) -> None:
        """Remove the unit's entry (before its prediction is made again: values never outlive their prediction)."""
        self.path(method, clip_id, fingerprint).unlink(missing_ok=True)

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
      "clipped": {"psnr": ["<clip id>", ...]},   # PSNR-type values that were infinite (clipped, SPEC s.7)
      "skipped": {"fid": "<reason>"},           # default metrics that could not run here (summary: null)
      "provenance": {"package_version": ..., "options": {...}, "inputs": {...}, "flow_backend": ...,
                     "weights": {...}, "metrics": {"<name>": {...modes, hashes...}}}
    }

Values that do not exist (NaN) are written as ``null``; no timestamps, so equal inputs give equal bytes.

    >>> doc = {"summary": {"psnr": float("nan")}}
    >>> dumps(doc)
    '{\\n  "summary": {\\n    "psnr": null\\n  }\\n}\\n'
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.atomic import atomic_write_text
from ..core.errors import DevilError
from .protocol import EvalOptions

if TYPE_CHECKING:  # pragma: no cover
    from .evaluate import Evaluation

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
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
    return obj


def dumps(doc: dict) -> str:
    """Serialise a results document: strict JSON, 2-space indent, trailing newline."""
    return json.dumps(_clean(doc), indent=2, allow_nan=False) + "\n"


def _find(prov: dict, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in prov:
            return prov[k]
    return None


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
    """Assemble the results document from an :class:`~devil_dataset.eval.evaluate.Evaluation`."""
    from ..core.version import __version__

    from .registry import METRICS

    summary = dict(ev.summary)
    for name in skipped:  # a stable schema: keys of skipped metrics are present, null
        for key in METRICS[name].keys if name in METRICS else ():
            summary.setdefault(key, float("nan"))
    flows = {n: f for n, p in ev.metric_provenance.items() if (f := _find(p, ("flow_backend", "flow"))) is not None}
    weights = {n: w for n, p in ev.metric_provenance.items()
               if (w := _find(p, ("weights", "weights_sha256"))) is not None}
    return {
        "format": RESULTS_FORMAT,
        "format_version": RESULTS_FORMAT_VERSION,
        "method": method,
        "slice": slice_name,
        "num_videos": len(ev.videos),
        "num_frames": ev.num_frames,
        "metrics": metrics,
        "summary": summary,
        "videos": ev.videos,
        "clipped": ev.clipped,
        "skipped": skipped,
        "provenance": {
            "package_version": __version__,
            "options": asdict(options),
            "inputs": inputs,
            "flow_backend": flows,
            "weights": weights,
            "metrics": ev.metric_provenance,
        },
    }


def write_results(path: str | Path, doc: dict) -> Path:
    """Write a results document atomically."""
    return atomic_write_text(path, dumps(doc))


def read_results(path: str | Path) -> dict:
    """Read and check a results document; ``null`` summary values come back as NaN."""
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

    def num(v):
        if v is None:
            return float("nan")
        if v in ("inf", "-inf"):
            return float(v)
        return float(v)

    try:
        doc["summary"] = {k: num(v) for k, v in doc["summary"].items()}
    except (TypeError, ValueError):
        raise DevilError(f"{path}: summary values must be numbers") from None
    return doc

"""Per-pair metric values of ``devil diagnose --predictions``, cached as the attributes are
(:mod:`devil_dataset.diagnosis.cache`), so a warm run scores nothing it scored before.

An entry's key is the sha256 of :data:`METRIC_CACHE_VERSION`, the package version, the **scoring identity** (what
makes the values what they are: every metric's provenance, modes and weights,
:func:`devil_dataset.eval.metrics.registry.scoring_identity`) and the **content** of what was scored: the stored
frames' and hole's fingerprints (:func:`devil_dataset.diagnosis.fingerprint.source_fingerprint`: the files' bytes
and the read size, or a built dataset's shard checksums) and the prediction files' bytes
(:func:`prediction_fingerprint`). The entry holds the values and what the inverted-mask check said
(:mod:`devil_dataset.core.hole_check`), with the cache's checksum of key and content: a damaged entry is scored
again and reported. Another method version (other prediction bytes), another metric option or another package
version is another key.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "bear").mkdir(); _ = (d / "bear" / "00000.png").write_bytes(b"x")
    >>> prediction_fingerprint(d, "bear") == prediction_fingerprint(d, "bear"), prediction_fingerprint(d, "boat")
    (True, None)
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Mapping

from ..core.version import __version__
from .cache import AttributeCache
from .fingerprint import source_fingerprint
from .pairs import Pair

#: Version of the metric-value entries: bump it when their layout changes.
METRIC_CACHE_VERSION = 1


def _digest_files(paths: list[Path]) -> str:
    h = hashlib.sha256(b"prediction")
    for p in paths:
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def prediction_fingerprint(folder: str | Path, clip_id: str, paths: tuple[Path, ...] | None = None) -> str | None:
    """sha256 of a clip's prediction files: ``paths`` when given, else every file of ``folder/<clip_id>/`` and the
    files ``folder/<clip_id>.*`` (hidden files left out), in name order; ``None`` when there is none."""
    if paths is None:
        folder = Path(folder)
        found: list[Path] = []
        clip_dir = folder / clip_id
        if clip_dir.is_dir():
            found += sorted((p for p in clip_dir.rglob("*") if p.is_file() and not p.name.startswith(".")),
                            key=lambda p: p.relative_to(clip_dir).as_posix())
        if folder.is_dir():
            found += sorted(p for p in folder.glob(f"{clip_id}.*") if p.is_file())
        paths = tuple(found)
    return _digest_files(list(paths)) if paths else None


class MetricValuesCache:
    """Per-pair metric values of one scoring identity in an :class:`~devil_dataset.diagnosis.cache.AttributeCache`
    (see the module docstring); counts what it served and stored."""

    def __init__(self, cache: AttributeCache, scoring: str) -> None:
        self.cache, self.scoring = cache, scoring
        self.served = 0
        self.stored = 0
        self._sources: dict[tuple[str, str], tuple[str | None, str | None]] = {}  # pair -> (frames, hole) prints

    def key(self, pair: Pair, prediction: str | None) -> str | None:
        """The entry key of ``pair`` scored against a prediction of fingerprint ``prediction``; ``None`` when the
        pair's files have no fingerprint (nothing is cached then)."""
        if (pair.clip_id, pair.mask_id) not in self._sources:  # once per pair, however many methods
            self._sources[(pair.clip_id, pair.mask_id)] = (source_fingerprint(pair.source, "frames"),
                                                           source_fingerprint(pair.source, "hole"))
        frames, hole = self._sources[(pair.clip_id, pair.mask_id)]
        return self.content_key(frames, hole, prediction)

    def content_key(self, *fingerprints: str | None) -> str | None:
        """The entry key of values scored on the contents of ``fingerprints`` (in order) under this scoring identity;
        ``None`` when one is missing."""
        if not all(fingerprints):
            return None
        text = f"metrics|{METRIC_CACHE_VERSION}|{__version__}|{self.scoring}|" + "|".join(map(str, fingerprints))
        return hashlib.sha256(text.encode()).hexdigest()

    def _content(self, key: str | None) -> dict | None:
        content = self.cache.load_entry(key) if key else None
        if content is None or not isinstance(content.get("values"), dict):
            return None
        self.served += 1
        return content

    def load(self, key: str | None) -> tuple[dict[str, float], str | None] | None:
        """``(values, inverted-mask problem)`` stored under ``key``, or ``None``."""
        content = self._content(key)
        return None if content is None else (_decoded(content["values"]), content.get("hole_problem"))

    def load_with_notes(self, key: str | None) -> tuple[dict[str, float], dict] | None:
        """``(values, notes)`` stored under ``key`` by :meth:`save` with ``notes``, or ``None``."""
        content = self._content(key)
        return None if content is None else (_decoded(content["values"]), dict(content.get("notes") or {}))

    def save(self, key: str | None, values: Mapping[str, float], problem: str | None = None,
             notes: Mapping | None = None) -> None:
        """Store a pair's ``values`` (NaN as null) and what the inverted-mask check said (or, with ``notes``, what
        reading the inputs changed)."""
        if key is None:
            return
        content: dict = {"values": {k: (None if math.isnan(v) else (str(v) if math.isinf(v) else v))
                                    for k, v in values.items()}}
        if notes is None:
            content["hole_problem"] = problem
        else:
            content["notes"] = dict(notes)
        self.cache.save_entry(key, content)
        self.stored += 1


def _decoded(values: Mapping[str, object]) -> dict[str, float]:
    return {k: (math.nan if v is None else float(v)) for k, v in values.items()}  # type: ignore[arg-type]


__all__ = ["METRIC_CACHE_VERSION", "MetricValuesCache", "prediction_fingerprint"]

"""The attribute cache: one small JSON file per (attribute, content, options, code version), so a second run, or
a second method on the same videos, computes nothing.

A key is the sha256 of the attribute name, :data:`ATTRIBUTE_CODE_VERSION`, the package version, the scoring
options (video attributes) and the content hash of what the attribute reads (the frames for the video attributes,
the hole for the foreground ones: :func:`devil_dataset.core.content_hash.clip_content_hash`). Entries are written
atomically; an unreadable entry counts as missing. Default folder: ``$DEVIL_ATTRIBUTE_CACHE``, else
``$XDG_CACHE_HOME/devil-dataset/attributes``, else ``~/.cache/devil-dataset/attributes``.

    >>> import tempfile
    >>> cache = AttributeCache(tempfile.mkdtemp())
    >>> k = cache.key("fg_size", "abc", "")
    >>> cache.load(k) is None
    True
    >>> cache.save(k, float("inf")); cache.load(k)
    inf
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from ..core.atomic import atomic_write_text
from ..core.version import __version__

#: Version of the attribute code and of the entry layout: bump it when a score's definition changes.
ATTRIBUTE_CODE_VERSION = 1
ATTRIBUTE_CACHE_ENV = "DEVIL_ATTRIBUTE_CACHE"


def default_attribute_cache_dir() -> Path:
    """``$DEVIL_ATTRIBUTE_CACHE``, else ``$XDG_CACHE_HOME/devil-dataset/attributes``, else
    ``~/.cache/devil-dataset/attributes``."""
    env = os.environ.get(ATTRIBUTE_CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "devil-dataset" / "attributes"


def encode_value(value: float) -> float | str | None:
    """A score as JSON can hold it: NaN -> ``None``, +/-inf -> ``"inf"`` / ``"-inf"`` (undone by :func:`decode_value`).

    >>> encode_value(float("nan")), encode_value(float("-inf")), encode_value(0.5)
    (None, '-inf', 0.5)
    """
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def decode_value(value: object) -> float:
    """A stored score back as a float: ``None`` -> NaN, ``"inf"`` -> +inf.

    >>> decode_value(None), decode_value("inf"), decode_value(0.5)
    (nan, inf, 0.5)
    """
    if value is None or value == "":
        return math.nan
    return float(value)  # type: ignore[arg-type]


class AttributeCache:
    """Attribute scores on disk under ``root`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def key(self, attribute: str, content_hash: str, options_key: str) -> str:
        """The entry key of ``attribute`` for content ``content_hash`` scored with ``options_key``."""
        text = f"{attribute}|{ATTRIBUTE_CODE_VERSION}|{__version__}|{options_key}|{content_hash}"
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def load(self, key: str) -> float | None:
        """The cached score, or ``None`` when there is none (or it is unreadable)."""
        try:
            doc = json.loads(self._path(key).read_text(encoding="utf-8"))
            return decode_value(doc["value"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def load_hash(self, fingerprint: str) -> str | None:
        """The content hash recorded for a stored-file ``fingerprint``, or ``None``."""
        try:
            doc = json.loads(self._path(self.key("source", fingerprint, "")).read_text(encoding="utf-8"))
            return str(doc["content"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save_hash(self, fingerprint: str, content_hash: str) -> None:
        """Record that the files of ``fingerprint`` decode to content ``content_hash``."""
        path = self._path(self.key("source", fingerprint, ""))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"content": content_hash}) + "\n")

    def save(self, key: str, value: float) -> None:
        """Store ``value`` (atomic: a concurrent reader sees the old state or the new one)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"value": encode_value(float(value))}) + "\n")


__all__ = ["ATTRIBUTE_CACHE_ENV", "ATTRIBUTE_CODE_VERSION", "AttributeCache", "decode_value", "encode_value",
           "default_attribute_cache_dir"]

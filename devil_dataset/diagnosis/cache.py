"""The attribute cache: one small JSON file per (attribute, content, options, code version), so a second run, or
a second method on the same videos, computes nothing.

A key is the sha256 of the attribute name, :data:`ATTRIBUTE_CODE_VERSION`, the package version, the scoring
options (video attributes) and the content hash of what the attribute reads (the frames for the video attributes,
the hole for the foreground ones: :func:`devil_dataset.core.content_hash.clip_content_hash`). Entries are written
atomically and carry a checksum of their key and content; an unreadable or damaged entry counts as missing (and is
reported). Scores are stored with the package's one NaN / infinity JSON codec and the folder is found by its one
cache-folder rule (:mod:`devil_dataset.eval.scoring.storage`). A folder that cannot be written is only read. Default
folder: ``$DEVIL_ATTRIBUTE_CACHE``, else ``$XDG_CACHE_HOME/devil-dataset/attributes``, else
``~/.cache/devil-dataset/attributes``.

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
import os
from pathlib import Path

from ..core.atomic import atomic_write_text
from ..core.version import __version__
from ..eval.scoring.storage import cache_folder, decode_value, encode_value

#: Version of the attribute code and of the entry layout: bump it when a score's definition changes.
ATTRIBUTE_CODE_VERSION = 2  # 2: entries carry a checksum of key and content
ATTRIBUTE_CACHE_ENV = "DEVIL_ATTRIBUTE_CACHE"


def default_attribute_cache_dir() -> Path:
    """``$DEVIL_ATTRIBUTE_CACHE``, else ``$XDG_CACHE_HOME/devil-dataset/attributes``, else
    ``~/.cache/devil-dataset/attributes`` (the package's one cache-folder rule,
    :func:`~devil_dataset.eval.scoring.storage.cache_folder`).

    >>> import os; os.environ[ATTRIBUTE_CACHE_ENV] = "/tmp/attrs"; str(default_attribute_cache_dir())
    '/tmp/attrs'
    >>> del os.environ[ATTRIBUTE_CACHE_ENV]
    """
    return cache_folder(ATTRIBUTE_CACHE_ENV, "attributes")


class AttributeCache:
    """Attribute scores on disk under ``root`` (see the module docstring).

    Every entry carries a checksum of its key and content (:func:`entry_checksum`): an entry whose bytes changed
    (a flipped bit that still parses as JSON, or bytes that are no longer UTF-8 or JSON) reads as missing, is
    recomputed and rewritten, and its path is kept in :attr:`damaged` for the run to report. A folder that cannot be
    written (read-only, immutable, a file in the way) is read but not written: the first failed write is kept in
    :attr:`write_error` and later writes are skipped.

        >>> import tempfile, pathlib
        >>> cache = AttributeCache(tempfile.mkdtemp())
        >>> k = cache.key("fg_size", "abc", ""); cache.save(k, 0.25)
        >>> path = cache.entry_path(k); _ = path.write_text(path.read_text().replace("0.25", "0.75"))
        >>> cache.load(k) is None, [p.name == path.name for p in cache.damaged]
        (True, [True])
    """

    def __init__(self, root: str | os.PathLike, *, writable: bool = True) -> None:
        self.root = Path(root)
        self.writable = writable
        self.damaged: list[Path] = []
        self.write_error: str | None = None

    def key(self, attribute: str, content_hash: str, options_key: str) -> str:
        """The entry key of ``attribute`` for content ``content_hash`` scored with ``options_key``."""
        text = f"{attribute}|{ATTRIBUTE_CODE_VERSION}|{__version__}|{options_key}|{content_hash}"
        return hashlib.sha256(text.encode()).hexdigest()

    def entry_path(self, key: str) -> Path:
        """Where the entry of ``key`` is stored."""
        return self.root / key[:2] / f"{key}.json"

    def load_entry(self, key: str) -> dict | None:
        """The stored content of ``key`` (a dict), or ``None`` when there is none, it is unreadable or its checksum
        does not match (then the path is added to :attr:`damaged`)."""
        path = self.entry_path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:  # a damaged byte may leave invalid UTF-8 (UnicodeDecodeError is a ValueError) or invalid JSON
            doc = json.loads(data.decode("utf-8"))
            content, checksum = doc["content"], doc["checksum"]
        except (ValueError, KeyError, TypeError):
            self.damaged.append(path)
            return None
        if not isinstance(content, dict) or checksum != entry_checksum(key, content):
            self.damaged.append(path)
            return None
        return content

    def save_entry(self, key: str, content: dict) -> None:
        """Store ``content`` under ``key`` with its checksum (atomic: a concurrent reader sees the old state or the
        new one); nothing when the folder cannot be written (:attr:`write_error`)."""
        if not self.writable:
            return
        path = self.entry_path(key)
        doc = {"content": content, "checksum": entry_checksum(key, content)}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(doc, sort_keys=True) + "\n")
        except OSError as exc:
            self.writable = False
            self.write_error = f"{type(exc).__name__}: {exc}"

    def load(self, key: str) -> float | None:
        """The cached score, or ``None`` when there is none (or it is unreadable or damaged)."""
        content = self.load_entry(key)
        try:
            return decode_value(content["value"]) if content is not None else None
        except (KeyError, TypeError, ValueError):
            return None

    def load_hash(self, fingerprint: str) -> str | None:
        """The content hash recorded for a stored-file ``fingerprint``, or ``None``."""
        content = self.load_entry(self.key("source", fingerprint, ""))
        return str(content["content"]) if content is not None and "content" in content else None

    def save_hash(self, fingerprint: str, content_hash: str) -> None:
        """Record that the files of ``fingerprint`` decode to content ``content_hash``."""
        self.save_entry(self.key("source", fingerprint, ""), {"content": content_hash})

    def save(self, key: str, value: float) -> None:
        """Store ``value`` (see :meth:`save_entry`)."""
        self.save_entry(key, {"value": encode_value(float(value))})


def entry_checksum(key: str, content: dict) -> str:
    """sha256 of an entry's key and its content as canonical JSON: a changed value, key or file name no longer
    matches.

    >>> entry_checksum("k", {"value": 0.5}) == entry_checksum("k", {"value": 0.5000001})
    False
    """
    return hashlib.sha256((key + "|" + json.dumps(content, sort_keys=True)).encode()).hexdigest()


__all__ = ["ATTRIBUTE_CACHE_ENV", "ATTRIBUTE_CODE_VERSION", "AttributeCache", "decode_value",
           "default_attribute_cache_dir", "encode_value", "entry_checksum"]

"""How evaluation values and caches are stored: the one NaN / infinity codec of JSON files (results documents, the
per-video values cache, the diagnosis' attribute cache and attribute table) and the one resolver of cache folders (the
ground-truth cache, the diagnosis' attribute cache).

JSON has neither NaN nor infinity: NaN is stored as ``null``, +/-inf as the strings ``"inf"`` / ``"-inf"``.

    >>> encode_value(float("nan")), encode_value(float("-inf")), encode_value(0.5)
    (None, '-inf', 0.5)
    >>> decode_value(None), decode_value("inf"), decode_value(0.5)
    (nan, inf, 0.5)
"""
from __future__ import annotations

import math
import os
from pathlib import Path


def encode_value(value: float) -> float | str | None:
    """A float as JSON can hold it: NaN -> ``None``, +/-inf -> ``"inf"`` / ``"-inf"``, any other unchanged."""
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def decode_value(value: object) -> float:
    """A stored value back as a float: ``None`` -> NaN, ``"inf"`` / ``"-inf"`` -> +/-inf, a number -> float (anything
    else raises ``TypeError`` / ``ValueError``)."""
    if value is None:
        return math.nan
    return float(value)  # type: ignore[arg-type]


def cache_folder(env: str, name: str) -> Path:
    """``$<env>``, else ``$XDG_CACHE_HOME/devil-dataset/<name>``, else ``~/.cache/devil-dataset/<name>``.

    >>> import os; os.environ["DEVIL_X"] = "/tmp/x"; str(cache_folder("DEVIL_X", "x"))
    '/tmp/x'
    >>> del os.environ["DEVIL_X"]
    """
    given = os.environ.get(env)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "devil-dataset" / name


__all__ = ["cache_folder", "decode_value", "encode_value"]

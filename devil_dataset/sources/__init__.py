"""The DEVIL release's source videos: the shipped source list (:mod:`.catalog`) and the downloader (:mod:`.download`).

    >>> from devil_dataset.sources import load_catalog
    >>> load_catalog().video_ids[0]
    '23467104578'

Each name is imported on first use (:mod:`devil_dataset.core.lazy_exports`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .catalog import SourceCatalog, load_catalog

__getattr__, __dir__ = lazy_exports(__name__, {".catalog": ("SourceCatalog", "load_catalog")})

__all__ = ["SourceCatalog", "load_catalog"]

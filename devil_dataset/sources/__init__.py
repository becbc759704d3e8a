"""The DEVIL release's source videos: the shipped source list (:mod:`.catalog`) and the downloader (:mod:`.download`).

    >>> from devil_dataset.sources import load_catalog
    >>> load_catalog().video_ids[0]
    '23467104578'
"""
from .catalog import SourceCatalog, load_catalog

__all__ = ["SourceCatalog", "load_catalog"]

"""Load DEVIL slices: HF ``datasets`` wrapper, numpy iterator, collate, and the training dataset.

    >>> from devil_dataset.data import iter_slice, load_slice  # doctest: +SKIP
    >>> for row in iter_slice("sample-dataset", "fg_size_high"):  # doctest: +SKIP
    ...     row["frames"].shape, row["hole"].dtype   # (T, 480, 832, 3), bool
"""
from __future__ import annotations

from .load import (
    as_torch,
    check_local_slice,
    collate_videos,
    fetch_slice,
    iter_slice,
    load_slice,
    local_dataset_dir,
    row_arrays,
)

__all__ = ["load_slice", "iter_slice", "fetch_slice", "local_dataset_dir", "check_local_slice", "as_torch",
           "collate_videos", "row_arrays", "InpaintingTrainDataset", "worker_init_fn"]


def __getattr__(name: str):
    if name in ("InpaintingTrainDataset", "worker_init_fn"):  # imports torch: only on use
        from . import train

        return getattr(train, name)
    raise AttributeError(name)

"""Load DEVIL slices: HF ``datasets`` wrapper, numpy iterator, collate, and the training dataset.

    >>> from devil_dataset.data import iter_slice, load_slice  # doctest: +SKIP
    >>> for row in iter_slice("sample-dataset", "fg_size_high"):  # doctest: +SKIP
    ...     row["frames"].shape, row["hole"].dtype   # (T, 480, 832, 3), bool

Each name is imported on first use (:mod:`devil_dataset.core.lazy_exports`); the training dataset imports torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
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
    from .train import InpaintingTrainDataset, worker_init_fn

__getattr__, __dir__ = lazy_exports(__name__, {
    ".load": ("as_torch", "check_local_slice", "collate_videos", "fetch_slice", "iter_slice", "load_slice",
              "local_dataset_dir", "row_arrays"),
    ".train": ("InpaintingTrainDataset", "worker_init_fn"),
})

__all__ = ["load_slice", "iter_slice", "fetch_slice", "local_dataset_dir", "check_local_slice", "as_torch",
           "collate_videos", "row_arrays", "InpaintingTrainDataset", "worker_init_fn"]

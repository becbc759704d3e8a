"""devil-dataset: the DEVIL video-inpainting benchmark, rebuilt on today's libraries.

Example:
    >>> import devil_dataset
    >>> devil_dataset.mask_seed(0)
    2357136044
"""
from __future__ import annotations

__version__ = "0.1.0"

from .builder.masks import PRESETS, mask_seed, render_mask  # noqa: E402
from .slices import SLICES, SliceSpec  # noqa: E402

__all__ = ["__version__", "PRESETS", "mask_seed", "render_mask", "SLICES", "SliceSpec"]

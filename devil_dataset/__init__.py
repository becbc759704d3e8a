"""devil-dataset: the DEVIL video-inpainting benchmark, rebuilt on today's libraries.

Example:
    >>> import devil_dataset
    >>> devil_dataset.mask_seed(0)
    2357136044
    >>> devil_dataset.render_mask("fgs-h_fgm-l_fgd-l", devil_dataset.mask_seed(1), num_frames=2).shape
    (2, 1080, 1920)

Importing the package changes nothing in the process (environment, OpenCV, torch, BLAS). For the ``devil``
command's numbers bit for bit in your own process, pin it first, before importing torch or scipy
(:func:`~devil_dataset.core.cpu_pins.pin_process`; ``docs/reliability.md``):

    >>> devil_dataset.pin_process()["level"] in {"avx2", "none"}  # doctest: +SKIP
    True

Benchmark your methods on a built dataset in one call (imported on first use; see :mod:`devil_dataset.pipeline`):

    >>> result = devil_dataset.benchmark("devil-build/", {"telea": "telea"}, "bench-out")  # doctest: +SKIP

Every name but ``__version__`` is imported on first use (:mod:`devil_dataset.core.lazy_exports`): importing the
package loads none of numpy, the metrics or the pipeline.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .core.lazy_exports import lazy_exports
from .core.version import __version__

if TYPE_CHECKING:
    from .core.cpu_pins import pin_process
    from .core.mask_stats import MaskStats, mask_stats
    from .core.mask_store import stored_mask, time_reverse
    from .core.masks import PRESETS, mask_seed, render_mask
    from .core.slices import SLICES, SliceSpec
    from .pipeline.benchmark import benchmark

__getattr__, __dir__ = lazy_exports(__name__, {
    ".core.cpu_pins": ("pin_process",),
    ".core.mask_stats": ("MaskStats", "mask_stats"),
    ".core.mask_store": ("stored_mask", "time_reverse"),
    ".core.masks": ("PRESETS", "mask_seed", "render_mask"),
    ".core.slices": ("SLICES", "SliceSpec"),
    ".pipeline.benchmark": ("benchmark",),
})

__all__ = [
    "__version__", "PRESETS", "mask_seed", "render_mask", "stored_mask", "time_reverse",
    "MaskStats", "mask_stats", "SLICES", "SliceSpec", "benchmark", "pin_process",
]

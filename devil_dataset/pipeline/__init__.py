"""The benchmark pipeline: any methods inpainted, evaluated and reported on a built dataset (``devil benchmark``).

:func:`benchmark` is the entry point (``devil_dataset.benchmark``); :mod:`~devil_dataset.pipeline.plan` holds the
units and the plan object, :mod:`~devil_dataset.pipeline.clip_task` one clip's work in a worker,
:mod:`~devil_dataset.pipeline.inpaint_and_score` the clip loop and the results documents.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from ..inpaint.method_spec import MethodSpec
    from .benchmark import BenchmarkResult, benchmark
    from .plan import BenchmarkPlan

# Each name is imported on first use (core/lazy_exports.py); `benchmark` stays the function after
# devil_dataset.pipeline.benchmark, the module, is imported.
__getattr__, __dir__ = lazy_exports(__name__, {
    "..inpaint.method_spec": ("MethodSpec",),
    ".benchmark": ("BenchmarkResult", "benchmark"),
    ".plan": ("BenchmarkPlan",),
})

__all__ = ["BenchmarkPlan", "BenchmarkResult", "MethodSpec", "benchmark"]

"""The benchmark pipeline: any methods inpainted, evaluated and reported on a built dataset (``devil benchmark``).

:func:`benchmark` is the entry point (``devil_dataset.benchmark``); :mod:`~devil_dataset.pipeline.plan` holds the
units and the plan object, :mod:`~devil_dataset.pipeline.clip_task` one clip's work in a worker,
:mod:`~devil_dataset.pipeline.inpaint_and_score` the clip loop and the results documents.
"""
from __future__ import annotations

from ..inpaint.method_spec import MethodSpec
from .benchmark import BenchmarkResult, benchmark
from .plan import BenchmarkPlan

__all__ = ["BenchmarkPlan", "BenchmarkResult", "MethodSpec", "benchmark"]

"""DEVIL evaluation: functional metrics for one video, a streaming :class:`Evaluator`, the evaluation pass and the
evaluation protocols.

    >>> import numpy as np
    >>> from devil_dataset.eval import psnr
    >>> gt = np.zeros((3, 64, 64, 3), np.uint8); hole = np.zeros((3, 64, 64), bool); hole[:, 8:24, 8:24] = True
    >>> round(psnr(np.full_like(gt, 255), gt, hole), 2)
    12.04

The floors, each importing only those below it (``tests/test_layers.py`` holds the table):

- :mod:`~devil_dataset.eval.kernels`: stateless numpy and torch math (PSNR, SSIM, PCons, warp, Frechet, ...);
- :mod:`~devil_dataset.eval.stats`: intervals, significance tests, the jackknife;
- :mod:`~devil_dataset.eval.metrics`: metric classes that declare their state and what they prepare, the registry;
- :mod:`~devil_dataset.eval.scoring`: one evaluation pass, its inputs, the ground-truth cache, results documents;
- :mod:`~devil_dataset.eval.protocols`: one folder per evaluation protocol and their registry (``docs/protocols.md``);
- :mod:`~devil_dataset.eval.report`: tables, figures, comparisons, findings, the HTML report, paper tables;
- :mod:`~devil_dataset.eval.functional` and this package: the public API.

Torch and the networks are imported only when a network metric (``lpips``, ``pvcs``, ...) runs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .functional import Evaluator, as_frames, as_hole, lpips, pcons, psnr, pvcs, ssim, warp_error
    from .metrics.metric import EvalOptions, Metric, VideoSample
    from .metrics.registry import DEVIL_METRICS
    from .protocols.declaration import EvaluationProtocol
    from .protocols.devil.run import evaluate_directory
    from .protocols.propainter.run import evaluate_propainter
    from .protocols.registry import METRICS, get_protocol, register_protocol
    from .scoring.evaluate import evaluate_dataset, evaluate_slice
    from .scoring.one_pass import evaluate_methods

# Each name is imported on first use (core/lazy_exports.py): `import devil_dataset.eval.metrics.metric` or the
# `devil` parser reads none of the evaluation pass.
__getattr__, __dir__ = lazy_exports(__name__, {
    ".functional": ("Evaluator", "as_frames", "as_hole", "lpips", "pcons", "psnr", "pvcs", "ssim", "warp_error"),
    ".metrics.metric": ("EvalOptions", "Metric", "VideoSample"),
    ".metrics.registry": ("DEVIL_METRICS",),
    ".protocols.declaration": ("EvaluationProtocol",),
    ".protocols.devil.run": ("evaluate_directory",),
    ".protocols.propainter.run": ("evaluate_propainter",),
    ".protocols.registry": ("METRICS", "get_protocol", "register_protocol"),  # the table with the protocols' classes
    ".scoring.evaluate": ("evaluate_dataset", "evaluate_slice"),
    ".scoring.one_pass": ("evaluate_methods",),
})

__all__ = ["DEVIL_METRICS", "EvalOptions", "EvaluationProtocol", "Evaluator", "METRICS", "Metric", "VideoSample",
           "as_frames", "as_hole", "evaluate_dataset", "evaluate_directory", "evaluate_methods", "evaluate_propainter",
           "evaluate_slice", "get_protocol", "lpips", "pcons", "psnr", "pvcs", "register_protocol", "ssim",
           "warp_error"]

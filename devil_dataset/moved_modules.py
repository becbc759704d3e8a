"""Module paths that moved (issue 37: ``eval/`` got sub-packages, the benchmark pipeline a unit of its own), so that
imports users wrote before keep working: ``from devil_dataset.eval.protocol import EvalOptions`` imports
``devil_dataset.eval.metrics.protocol``.

:data:`MOVED` is the one table; :class:`MovedModuleFinder` (installed by the package's ``__init__``) answers an
import of an old path with the module at its new path, the same object (``sys.modules`` holds it under both names).
Nothing here imports the package: the table holds names, not modules.

    >>> import importlib
    >>> importlib.import_module("devil_dataset.eval.protocol") is importlib.import_module(
    ...     "devil_dataset.eval.metrics.protocol")
    True
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Sequence

#: old module path -> new module path (each a module of the package).
MOVED: dict[str, str] = {
    "devil_dataset.benchmarking": "devil_dataset.pipeline.benchmark",
    "devil_dataset.eval.clip_scoring": "devil_dataset.eval.engine.clip_scoring",
    "devil_dataset.eval.comparisons": "devil_dataset.eval.report.comparisons",
    "devil_dataset.eval.composite": "devil_dataset.eval.engine.inputs",
    "devil_dataset.eval.evaluate": "devil_dataset.eval.engine.evaluate",
    "devil_dataset.eval.fidelity": "devil_dataset.eval.metrics.fidelity",
    "devil_dataset.eval.findings": "devil_dataset.eval.report.findings",
    "devil_dataset.eval.frechet": "devil_dataset.eval.kernels.frechet",
    "devil_dataset.eval.gt_cache": "devil_dataset.eval.engine.gt_cache",
    "devil_dataset.eval.html_report": "devil_dataset.eval.report.html",
    "devil_dataset.eval.i3d_metrics": "devil_dataset.eval.metrics.i3d",
    "devil_dataset.eval.inpaint_and_score": "devil_dataset.pipeline.inpaint_and_score",
    "devil_dataset.eval.patch_masks": "devil_dataset.eval.kernels.patch_masks",
    "devil_dataset.eval.perceptual": "devil_dataset.eval.metrics.perceptual",
    "devil_dataset.eval.pixel": "devil_dataset.eval.kernels.pixel",
    "devil_dataset.eval.pixel_torch": "devil_dataset.eval.kernels.pixel_torch",
    "devil_dataset.eval.protocol": "devil_dataset.eval.metrics.protocol",
    "devil_dataset.eval.registry": "devil_dataset.eval.metrics.registry",
    "devil_dataset.eval.results": "devil_dataset.eval.engine.results",
    "devil_dataset.eval.self_consistency": "devil_dataset.eval.metrics.self_consistency",
    "devil_dataset.eval.ssim_window": "devil_dataset.eval.kernels.ssim_window",
    "devil_dataset.eval.uncertainty": "devil_dataset.eval.stats",
    "devil_dataset.eval.warp": "devil_dataset.eval.kernels.warp",
    "devil_dataset.eval.warp_torch": "devil_dataset.eval.kernels.warp_torch",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new path (imported first), the same object."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__  # importlib sets the alias's spec on the module next: restored below
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the new module ran when it was imported); its own ``__spec__`` is put back."""
        if self.spec is not None:
            module.__spec__ = self.spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` (and nothing else)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` once (idempotent)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


__all__ = ["MOVED", "MovedModuleFinder", "install"]

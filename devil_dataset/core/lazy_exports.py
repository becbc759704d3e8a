"""A package's public names imported on first use (PEP 562), so that importing the package, or one light module of
it, reads none of the heavy modules behind its other names: ``devil --help`` parses its arguments without numpy's
metric kernels, scipy.stats or the pipeline, and ``import devil_dataset`` costs what the names used cost.

A package's ``__init__`` lists its names once per defining module; each is imported the first time it is read, and
``dir()`` and ``__all__`` list them all:

    >>> import devil_dataset.eval as ev
    >>> "psnr" in dir(ev) and "psnr" in ev.__all__
    True
    >>> ev.psnr.__module__
    'devil_dataset.eval.functional'
    >>> ev.no_such_name
    Traceback (most recent call last):
    ...
    AttributeError: module 'devil_dataset.eval' has no attribute 'no_such_name'

A name is looked up in its module on every read (nothing is copied into the package), so replacing it in its module
(a test's monkeypatch) is what the package gives too. Where a name is also a submodule of the package
(``devil_dataset.pipeline.benchmark``, the function, beside ``pipeline/benchmark.py``), the name keeps meaning the
exported object even after that submodule is imported, as an eager ``from .benchmark import benchmark`` in the
``__init__`` made it.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Callable, Mapping


class LazyPackage(types.ModuleType):
    """A package module whose exported names are not replaced by its submodules of the same name (the import system
    sets ``package.<child>`` to the child module when the child is first imported)."""

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("__lazy_exports__", {})
        if name in exports and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


def lazy_exports(package: str, modules: Mapping[str, tuple[str, ...]]) -> tuple[Callable[[str], Any],
                                                                                 Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``), which exports ``modules``: relative module
    name (``".engine.evaluate"``) -> the names it defines that the package exports.

    The package's module becomes a :class:`LazyPackage`; a name given by two modules is refused.

    >>> import devil_dataset.inpaint as ip
    >>> getattr_, dir_ = ip.__getattr__, ip.__dir__
    >>> getattr_("telea") is __import__("devil_dataset.inpaint.spatial", fromlist=["telea"]).telea
    True
    """
    where: dict[str, str] = {}
    for module_name, names in modules.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name!r} exported from both {where[name]} and {module_name}")
            where[name] = module_name
    module = sys.modules[package]
    module.__class__ = LazyPackage
    module.__dict__["__lazy_exports__"] = where

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name], package), name)

    def __dir__() -> list[str]:
        return sorted(set(module.__dict__) | set(where))

    return __getattr__, __dir__


__all__ = ["LazyPackage", "lazy_exports"]

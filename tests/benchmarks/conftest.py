"""The experiment scripts of ``benchmarks/`` loaded as modules: see ``load_benchmark`` in ``tests/conftest.py``."""
from __future__ import annotations

from ..conftest import load_benchmark

__all__ = ["load_benchmark"]

"""The package's layers, checked from its source: no import cycle between units, nothing imports a layer above it.

Every ``import`` and ``from ... import`` of every module is read with :mod:`ast`, those inside functions included
(a lazy import is still a dependency). A *unit* is a subpackage (``core``, ``builder``, ...) or a top-level module
(``demo``); the package's ``__init__`` is the unit ``devil_dataset``. :data:`ALLOWED` is the one table of which unit
may import which; ``README.md`` ("Architecture") and ``../shared/ARCHITECTURE.md`` draw the same picture.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "devil_dataset"
ROOT_UNIT = "devil_dataset"

# unit -> the units it may import (besides itself). Layers, bottom to top:
#   core                                   building blocks; imports nothing else of the package
#   sources, data, inpaint                 stages over core only
#   builder                                may use the release's source list (sources)
#   eval                                   may read slices (data) and call an inpainter it is given (inpaint)
#   benchmark                              the pipeline: inpaint + evaluate + report any methods
#   demo, cli, the package's __init__      orchestration and the public facade
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "sources": frozenset({"core"}),
    "data": frozenset({"core"}),
    "inpaint": frozenset({"core"}),
    "builder": frozenset({"core", "sources"}),
    "eval": frozenset({"core", "data", "inpaint"}),
    "benchmarking": frozenset({"core", "data", "inpaint", "eval"}),
    "demo": frozenset({"core", "builder", "data", "inpaint", "eval", "benchmarking"}),
    "cli": frozenset({"core", "builder", "data", "inpaint", "eval", "sources", "demo", "benchmarking"}),
    ROOT_UNIT: frozenset({"core", "builder", "data", "inpaint", "eval", "sources", "demo", "benchmarking"}),
}


def module_name(path: Path) -> str:
    """``devil_dataset/eval/kernels/pixel.py`` -> ``devil_dataset.eval.kernels.pixel`` (a package's ``__init__`` ->
    the package)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """The unit of a dotted module name: its first component below the package (the package itself: ROOT_UNIT)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_UNIT


def imported_modules(source: str, module: str, is_package: bool, modules: set[str]) -> list[tuple[int, str]]:
    """(line, module of the package) for every import in ``source`` (the text of ``module``), relative imports
    resolved, imports inside functions included; ``modules`` are the package's modules."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import submodule` depends on the submodule
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] != PACKAGE.name:
                continue
            while target and target not in modules:  # `from m import function` -> m
                target = target.rpartition(".")[0]
            if target:
                found.append((node.lineno, target))
    return found


@functools.lru_cache(maxsize=1)
def unit_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """(unit -> imported units, (unit, unit) -> the import sites ``file:line -> module``)."""
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    edges: dict[str, set[str]] = {}
    sites: dict[tuple[str, str], list[str]] = {}
    for path in files:
        src = unit_of(module_name(path))
        edges.setdefault(src, set())
        source = path.read_text(encoding="utf-8")
        for line, target in imported_modules(source, module_name(path), path.name == "__init__.py", modules):
            dst = unit_of(target)
            if dst != src:
                edges[src].add(dst)
                sites.setdefault((src, dst), []).append(f"{path.relative_to(PACKAGE.parent)}:{line} -> {target}")
    return edges, sites


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one unit (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_unit_is_in_the_table():
    edges, _ = unit_graph()
    assert set(edges) == set(ALLOWED), "add the new unit to ALLOWED (and to README's architecture section)"


def test_no_import_cycle_between_units():
    edges, sites = unit_graph()
    found = cycles(edges)
    detail = [s for comp in found for a in comp for b in comp if (a, b) in sites for s in sites[(a, b)]]
    assert not found, f"import cycles between units {found}:\n" + "\n".join(detail)


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_unit_imports_only_layers_below_it(unit):
    edges, sites = unit_graph()
    bad = sorted(edges.get(unit, set()) - ALLOWED[unit])
    assert not bad, f"{unit} imports {bad}, above it or beside it:\n" + "\n".join(
        s for b in bad for s in sites[(unit, b)])


def test_the_table_itself_has_no_cycle():
    assert cycles({u: set(v) for u, v in ALLOWED.items()}) == []


def test_the_checker_sees_imports_inside_functions_and_relative_ones():
    """The reader must catch a lazy relative import (the kind that hid the old cycle) and a plain absolute one."""
    pkg = PACKAGE.name
    modules = {pkg, f"{pkg}.eval", f"{pkg}.eval.pixel", f"{pkg}.core", f"{pkg}.core.errors", f"{pkg}.core.flow"}
    source = "def f():\n    from ..eval import pixel\n    import devil_dataset.core.errors\n    from . import flow\n"
    found = imported_modules(source, f"{pkg}.core.flow", False, modules)
    assert found[:1] == [(2, f"{pkg}.eval")] and (2, f"{pkg}.eval.pixel") in found
    assert (3, f"{pkg}.core.errors") in found and (4, f"{pkg}.core.flow") in found
    assert [unit_of(m) for _, m in found] == ["eval", "eval", "core", "core", "core"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

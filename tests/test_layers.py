"""The package's layers, checked from its source: no import circle between files, nothing imports a layer above it,
imports at the head of the file, and functions that do one step.

Every ``import`` and ``from ... import`` of every module is read with :mod:`ast`, those inside functions and under
``TYPE_CHECKING`` included (a lazy import is still a dependency). A *unit* is a subpackage (``core``, ``builder``, ...)
or a top-level module (``demo``); the package's ``__init__`` is the unit ``devil_dataset``. :data:`ALLOWED` is the one
table of which unit may import which, :data:`EVAL_FLOORS` the same inside ``eval``; ``README.md`` ("Architecture"),
``docs/architecture.md`` and ``../shared/ARCHITECTURE.md`` draw the same picture.
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
#   pipeline                               `devil benchmark`: inpaint + evaluate + report any methods
#   diagnosis                              `devil diagnose`: attributes (builder's labellers) + eval of any data
#   demo, cli, the package's __init__      orchestration and the public facade
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "sources": frozenset({"core"}),
    "data": frozenset({"core"}),
    "inpaint": frozenset({"core"}),
    "builder": frozenset({"core", "sources"}),
    "eval": frozenset({"core", "data", "inpaint"}),
    "pipeline": frozenset({"core", "data", "inpaint", "eval"}),
    "diagnosis": frozenset({"core", "sources", "builder", "data", "inpaint", "eval"}),
    "demo": frozenset({"core", "builder", "data", "inpaint", "eval", "pipeline", "diagnosis"}),
    "cli": frozenset({"core", "builder", "data", "inpaint", "eval", "sources", "demo", "pipeline", "diagnosis"}),
    ROOT_UNIT: frozenset({"core", "builder", "data", "inpaint", "eval", "sources", "demo", "pipeline",
                          "diagnosis"}),
}

# eval's floors: sub-package -> the sub-packages it may import (besides itself). ``eval/functional.py`` and the
# package's ``__init__`` (the public API) are above them all.
#   kernels   stateless numpy and torch math          stats    intervals, significance, the jackknife
#   metrics   metric classes and the registry         scoring  one pass, inputs, gt cache, results
#   protocols one folder per evaluation protocol (DEVIL's, ProPainter's, PROVE's): what belongs to one protocol only,
#             and the registry of protocols
#   report    tables, figures, comparisons, findings, HTML: generic over the protocols
EVAL_FLOORS: dict[str, frozenset[str]] = {
    "kernels": frozenset(),
    "stats": frozenset({"kernels"}),
    "metrics": frozenset({"kernels", "stats"}),
    "scoring": frozenset({"kernels", "stats", "metrics"}),
    "protocols": frozenset({"kernels", "stats", "metrics", "scoring"}),
    "report": frozenset({"kernels", "stats", "metrics", "scoring", "protocols"}),
}
EVAL_TOP = frozenset({"__init__", "functional"})  # eval/__init__.py, eval/functional.py: may import every floor

# Imports that may stay inside a function: heavy optional dependencies (seconds to import, or an extra that may be
# absent), and modules of the package whose head imports one of them (deferring those buys the same).
HEAVY_DEPENDENCIES = frozenset({"torch", "torchvision", "lpips", "pytorch_fid", "matplotlib", "jinja2", "av", "ray",
                                "decord", "scenedetect", "yt_dlp", "skvideo", "selenium", "datasets", "pyarrow",
                                "huggingface_hub", "transformers", "safetensors", "numba", "scipy"})
# Units whose functions may import any module of the package: the ``devil`` commands declare their parsers with light
# imports and import the library when the command runs (``devil --help`` answers at once: tests/cli/test_startup.py).
DEFERRING_UNITS = frozenset({"cli"})
# no function of the package is longer than this (lines, signature and docstring included).
MAX_FUNCTION_LINES = 100


def module_name(path: Path) -> str:
    """``devil_dataset/eval/kernels/pixel.py`` -> ``devil_dataset.eval.kernels.pixel`` (a package's ``__init__`` ->
    the package)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """The unit of a dotted module name: its first component below the package (the package itself: ROOT_UNIT)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_UNIT


def import_targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement of ``module`` names, relative imports resolved (``from pkg import x`` names
    ``pkg`` and ``pkg.x``: x may be a submodule)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    package = module if is_package else module.rpartition(".")[0]
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def imported_modules(source: str, module: str, is_package: bool, modules: set[str]) -> list[tuple[int, str]]:
    """(line, module of the package) for every import in ``source`` (the text of ``module``), relative imports
    resolved, imports inside functions included; ``modules`` are the package's modules."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in import_targets(node, module, is_package):
            if target.split(".")[0] != PACKAGE.name:
                continue
            while target and target not in modules:  # `from m import function` -> m
                target = target.rpartition(".")[0]
            if target:
                found.append((node.lineno, target))
    return found


@functools.lru_cache(maxsize=1)
def package_modules() -> dict[str, Path]:
    """Module name -> file of every module of the package."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@functools.lru_cache(maxsize=1)
def file_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """(module -> imported modules of the package, (module, module) -> the import sites), every import counted."""
    modules = package_modules()
    edges: dict[str, set[str]] = {}
    sites: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        edges.setdefault(name, set())
        for line, target in imported_modules(path.read_text(encoding="utf-8"), name, path.name == "__init__.py",
                                             set(modules)):
            if target != name:
                edges[name].add(target)
                sites.setdefault((name, target), []).append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return edges, sites


def head_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """The import statements at the head of a file: top level, or in a top-level ``try`` (not in functions)."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.Try):
            out += [n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


@functools.lru_cache(maxsize=1)
def heavy_modules() -> frozenset[str]:
    """The package's modules whose head imports a heavy dependency, directly or through another such module."""
    modules = package_modules()
    direct: dict[str, set[str]] = {}
    heavy: set[str] = set()
    for name, path in modules.items():
        direct[name] = set()
        for node in head_imports(path):
            for target in import_targets(node, name, path.name == "__init__.py"):
                if target.split(".")[0] in HEAVY_DEPENDENCIES:
                    heavy.add(name)
                elif target.split(".")[0] == PACKAGE.name:
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target and target != name:
                        direct[name].add(target)
    changed = True
    while changed:
        changed = False
        for name, targets in direct.items():
            if name not in heavy and targets & heavy:
                heavy.add(name)
                changed = True
    return frozenset(heavy)


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


def test_no_import_circle_between_files():
    """No two files of the package import each other, directly or around a circle, counting imports made
    inside functions (which only hide a circle)."""
    edges, sites = file_graph()
    found = cycles(edges)
    detail = [s for comp in found for a in comp for b in comp if (a, b) in sites for s in sites[(a, b)]]
    assert not found, f"import circles between files {found}:\n" + "\n".join(detail)


def eval_floor(module: str) -> str | None:
    """The floor of an eval module (``kernels``, ``stats``, ...), ``__init__``/``functional`` above them, or None."""
    parts = module.split(".")
    if parts[:2] != [PACKAGE.name, "eval"]:
        return None
    return "__init__" if len(parts) == 2 else parts[2]


def test_eval_floors_import_only_floors_below():
    edges, sites = file_graph()
    assert {eval_floor(m) for m in edges if eval_floor(m)} == set(EVAL_FLOORS) | EVAL_TOP, \
        "a new part of eval: add it to EVAL_FLOORS (and README's architecture section)"
    bad = []
    for module, targets in edges.items():
        floor = eval_floor(module)
        if floor is None or floor in EVAL_TOP:
            continue
        for target in targets:
            other = eval_floor(target)
            if other is not None and other != floor and other not in EVAL_FLOORS[floor]:
                bad += sites[(module, target)]
    assert not bad, "eval modules importing a floor above or beside them:\n" + "\n".join(bad)


def test_imports_are_at_the_head_of_the_file_unless_heavy():
    """An import inside a function is allowed only for a heavy optional dependency, or a module of the package whose
    head imports one (deferring it keeps ``devil --help`` and pixel-only evaluation from importing torch)."""
    heavy = heavy_modules()
    modules = package_modules()
    bad = []
    for name, path in modules.items():
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                targets = import_targets(node, name, path.name == "__init__.py")
                submodules = [t for t in targets[1:] if t in modules] if isinstance(node, ast.ImportFrom) else []
                for target in submodules or targets[:1] if isinstance(node, ast.ImportFrom) else targets:
                    root = target.split(".")[0]
                    while root == PACKAGE.name and target and target not in modules:
                        target = target.rpartition(".")[0]
                    if root in HEAVY_DEPENDENCIES or target in heavy or (root == PACKAGE.name and not target) \
                            or (root == PACKAGE.name and unit_of(name) in DEFERRING_UNITS):
                        continue
                    bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {target} inside {fn.name}")
                    break
    assert not bad, "imports that belong at the head of the file:\n" + "\n".join(bad)


def test_ruff_allow_list_matches_the_heavy_modules():
    """ruff's PLC0415 (imports at the head) exempts what TID253's ``banned-module-level-imports`` lists: that list in
    pyproject.toml must be exactly the heavy dependencies and the package's modules computed heavy from the code."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with the standard library")
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-module-level-imports"])
    assert {"PLC0415", "TID253"} <= set(config["tool"]["ruff"]["lint"]["select"])
    assert listed == set(HEAVY_DEPENDENCIES) | set(heavy_modules())


def test_no_function_is_longer_than_100_lines():
    long = [f"{p.relative_to(PACKAGE.parent)}:{fn.lineno} {fn.name} ({fn.end_lineno - fn.lineno + 1} lines)"
            for p in package_modules().values() for fn in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.end_lineno is not None
            and fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, "functions to split into steps:\n" + "\n".join(long)


def test_no_import_hook_and_no_old_module_paths():
    """The 0.1 package never shipped the pre-reorganisation module paths, so no import hook keeps them:
    importing the package adds no finder to ``sys.meta_path`` and an old path does not import."""
    import importlib
    import sys

    import devil_dataset  # noqa: F401

    assert not [f for f in sys.meta_path if type(f).__module__.startswith("devil_dataset")]
    for old in ("devil_dataset.eval.protocol", "devil_dataset.benchmarking", "devil_dataset.eval.results"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


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

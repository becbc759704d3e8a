"""The wheel holds every file the package opens.

A wheel is built (with the build backend pyproject.toml names, no build isolation) from a copy of the checkout, and
a second one from the sdist built from that copy. The checks: every non-code file under ``devil_dataset/`` is in the
wheel; every resource the code looks up (``importlib.resources.files(...).joinpath(...)``, jinja2's
``PackageLoader``) is in the wheel; no module finds a file beside its own source (``__file__``), which only a
checkout has; the wheel built from the sdist holds the same files.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "devil_dataset"
# Modules allowed to use their own ``__file__``, and why: the CLI lists its subcommand modules (Python code, which
# every install ships) with pkgutil.iter_modules over its folder.
FILE_LOOKUP_ALLOWED = {"devil_dataset/cli/_main.py"}
# What a copy of a checkout without git leaves out: version control, environments, build and tool outputs.
COPY_IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.whl")
BUILD_HOOK = "import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))"


@dataclass(frozen=True)
class Dists:
    """The names inside the wheel built from the tree, the sdist, and the wheel built from the sdist."""

    wheel: frozenset[str]
    sdist: frozenset[str]
    wheel_from_sdist: frozenset[str]


def _build(hook: str, source: Path, out: Path) -> Path:
    """Run a PEP 517 hook of setuptools (the backend pyproject.toml names) in ``source``; the file it wrote."""
    done = subprocess.run([sys.executable, "-c", BUILD_HOOK.format(hook=hook), str(out)], cwd=source,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{hook} failed in {source}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return out / done.stdout.strip().splitlines()[-1]


def _package_files(names: frozenset[str]) -> frozenset[str]:
    """The entries of a wheel under the package (its metadata folder left out)."""
    return frozenset(n for n in names if n.startswith(PACKAGE + "/") and not n.endswith("/"))


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> Dists:
    pytest.importorskip("setuptools", minversion="68")  # pyproject.toml's build-system requirement
    work = tmp_path_factory.mktemp("dists")
    tree = work / "tree"  # a copy: the build writes build/ and *.egg-info/ next to its sources
    listed = _git_files(".")
    if listed is None:
        shutil.copytree(REPO, tree, symlinks=True, ignore=COPY_IGNORED)
    for name in listed or ():
        if os.path.lexists(REPO / name):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name, follow_symlinks=False)
    out = work / "out"
    out.mkdir()
    sdist = _build("build_sdist", tree, out)
    wheel = _build("build_wheel", tree, out / "tree")
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        sdist_names = frozenset(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile() and "/" in m.name)
    (unpacked,) = (work / "unpacked").iterdir()
    from_sdist = _build("build_wheel", unpacked, out / "sdist")
    names = [frozenset(zipfile.ZipFile(w).namelist()) for w in (wheel, from_sdist)]
    return Dists(wheel=names[0], sdist=sdist_names, wheel_from_sdist=names[1])


def _git_files(folder: str) -> list[str] | None:
    """The checkout's files under ``folder`` as git sees them (tracked and untracked, not ignored: no outputs,
    environments or caches), POSIX paths from the repository root; None outside a git checkout."""
    try:
        done = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", folder], cwd=REPO,
                              capture_output=True, text=True)
    except OSError:  # no git
        return None
    listed = [n for n in done.stdout.split("\0") if n]
    return listed if done.returncode == 0 and listed else None


def source_package_files() -> list[str]:
    """Every file of the package in the checkout (POSIX, from the repository root), compiled files left out: from
    git (tracked and untracked, not ignored) when the checkout is a repository, else from the folder."""
    listed = _git_files(PACKAGE)
    if listed is None:
        listed = [p.relative_to(REPO).as_posix() for p in (REPO / PACKAGE).rglob("*") if p.is_file()]
    return sorted(n for n in listed if n and "__pycache__/" not in n and not n.endswith((".pyc", ".pyo"))
                  and (REPO / n).is_file())


# --- what the code looks up -------------------------------------------------------------------------------------

RESOURCE_CALLS = {"files"}  # importlib.resources.files(package)
LEGACY_CALLS = {"read_text", "read_binary", "open_text", "open_binary", "path", "is_resource"}  # (package, name)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _text_constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level ``NAME = "text"`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


class LookupReader:
    """Reads the package's resource lookups from one module's syntax tree as (package, relative path) pairs."""

    def __init__(self, path: Path, tree: ast.Module):
        self.where = path.relative_to(REPO).as_posix()
        self.constants = _text_constants(tree)
        self.constants.update(__package__=_package_of(path), __name__=_module_name(path))

    def text(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        raise AssertionError(f"{self.where}:{node.lineno}: a resource lookup whose name is not a literal or a "
                             "module-level text constant (the packaging test cannot check it)")

    def chain(self, node: ast.expr) -> tuple[str, tuple[str, ...]] | None:
        """``files(pkg).joinpath(a).joinpath(b)`` / ``files(pkg) / a`` -> (pkg, (a, b)); None for anything else."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            base = self.chain(node.left)
            return None if base is None else (base[0], (*base[1], self.text(node.right)))
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "joinpath" and isinstance(func, ast.Attribute):
            base = self.chain(func.value)
            return None if base is None else (base[0], (*base[1], *(self.text(a) for a in node.args)))
        if name in RESOURCE_CALLS and _is_resources(func) and node.args:
            return self.text(node.args[0]), ()
        if name in LEGACY_CALLS and _is_resources(func) and len(node.args) >= 2:
            return self.text(node.args[0]), (self.text(node.args[1]),)
        if name == "PackageLoader" and node.args:
            folder = self.text(node.args[1]) if len(node.args) > 1 else "templates"
            return self.text(node.args[0]), (folder,)
        return None


def _is_resources(func: ast.expr) -> bool:
    """``resources.x`` / ``importlib.resources.x`` (a bare ``files(...)`` too: the package imports the module)."""
    if isinstance(func, ast.Name):
        return True
    value = func.value if isinstance(func, ast.Attribute) else None
    return (isinstance(value, ast.Name) and value.id == "resources") or (
        isinstance(value, ast.Attribute) and value.attr == "resources")


def resource_lookups() -> list[tuple[str, str]]:
    """Every (module, path inside the wheel) the package's code looks up as a resource."""
    found = []
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reader = LookupReader(path, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.expr) and (hit := reader.chain(node)) is not None:
                package, parts = hit
                found.append((reader.where, "/".join([*package.split("."), *parts])))
    return found


def own_file_lookups() -> list[str]:
    """``module:line`` of every use of a module's own ``__file__`` in the package."""
    hits = []
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        hits += [f"{where}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Name) and node.id == "__file__"]
    return hits


# --- the checks -------------------------------------------------------------------------------------------------

def test_every_file_of_the_package_is_in_the_wheel(dists):
    missing = [n for n in source_package_files() if n not in dists.wheel]
    assert not missing, f"not in the wheel (add them to setup.cfg [options.package_data]): {missing}"


def test_every_resource_the_code_looks_up_is_in_the_wheel(dists):
    lookups = resource_lookups()
    # The reader finds the lookups the package is known to make (so an empty scan cannot pass).
    assert {"devil_dataset/builder/templates/dataset_card.md", "devil_dataset/sources/devil-sources.json",
            "devil_dataset/eval/report/templates"} <= {path for _, path in lookups}
    packaged = _package_files(dists.wheel)
    folders = {n.rsplit("/", k)[0] for n in packaged for k in range(1, n.count("/") + 1)}
    missing = [f"{where}: {path}" for where, path in lookups if path not in packaged and path not in folders]
    assert not missing, f"looked up but not in the wheel: {missing}"


def test_no_module_finds_a_file_beside_its_own_source():
    hits = [h for h in own_file_lookups() if h.split(":")[0] not in FILE_LOOKUP_ALLOWED]
    assert not hits, (f"{hits}: a path from __file__ exists in a checkout, not always in an install; ship the file "
                      "as package data and read it with importlib.resources")


def test_the_wheel_built_from_the_sdist_holds_the_same_files(dists):
    assert _package_files(dists.wheel_from_sdist) == _package_files(dists.wheel)
    # The sdist carries what builds the wheel and the pins the README's install names; no test or doc half-shipped.
    assert {"setup.cfg", "pyproject.toml", "README.md", "constraints.txt", "MANIFEST.in"} <= dists.sdist
    assert not any(n.startswith(("tests/", "loading_script/")) for n in dists.sdist), sorted(dists.sdist)[:20]


def test_the_card_template_is_package_data_and_loading_script_links_to_it():
    from devil_dataset.builder.dataset_card import card_template

    template = REPO / PACKAGE / "builder" / "templates" / "dataset_card.md"
    assert card_template() == template.read_text(encoding="utf-8")
    link = REPO / "loading_script" / "README.md"
    assert link.is_symlink() and link.resolve() == template.resolve()  # one text, never two copies that drift


def test_the_reader_resolves_a_lookup_through_module_constants():
    """The reader turns a lookup into the wheel path the check compares, and refuses a name it cannot read."""
    path = REPO / PACKAGE / "builder" / "example_module.py"
    code = ('from importlib import resources\nNAME = "x.json"\n'
            'def f():\n    return resources.files(__package__).joinpath("data").joinpath(NAME).read_text()\n')
    reader = LookupReader(path, tree := ast.parse(code))
    hits = [reader.chain(n) for n in ast.walk(tree) if isinstance(n, ast.expr)]
    assert ("devil_dataset.builder", ("data", "x.json")) in hits
    with pytest.raises(AssertionError, match="not a literal"):
        reader.text(ast.parse("f(name)").body[0].value.args[0])

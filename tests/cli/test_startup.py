"""``devil --help``, ``devil <command> --help`` and argument or path errors answer at once: the ``devil`` parser
imports none of the heavy libraries and none of the package's computing modules (each command imports them when it
runs). Measured as modules imported, in a fresh interpreter, not as time; ``benchmarks/cli_startup.py`` measures
the CPU time."""
from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import devil_dataset

ROOT = Path(devil_dataset.__file__).resolve().parents[1]

#: Libraries the parser must not import (seconds between them: torch ~4 s CPU, scipy.stats ~1.7 s).
HEAVY_LIBRARIES = ("torch", "torchvision", "scipy", "skimage", "datasets", "pyarrow", "pandas", "matplotlib",
                   "transformers", "huggingface_hub", "jinja2", "lpips", "pytorch_fid", "av", "decord", "ray", "numba",
                   "scenedetect", "yt_dlp", "PIL", "tqdm", "threadpoolctl")
#: numpy and OpenCV (~0.25 s CPU together): absent from the parser too.
ARRAY_LIBRARIES = ("numpy", "cv2")
#: The package's parts that compute: none is imported before a command runs (``data``: only its light
#: ``dataset_name``, the ``--dataset`` check).
COMPUTING_PARTS = ("eval", "pipeline", "builder", "diagnosis", "demo", "inpaint", "sources", "data.load",
                   "data.train")
#: Modules ``import devil_dataset.cli`` may add to a fresh interpreter, numpy's and OpenCV's not counted (measured:
#: 108, mostly the standard library's argparse, json, tomllib, ...; before the parsers were made light: ~1,000).
MODULE_BUDGET = 160

_PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
import devil_dataset.cli
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = devil_dataset.cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append({"argv": argv, "code": code, "out": out.getvalue(), "err": err.getvalue()})
with open(sys.argv[2], "w") as f:
    json.dump({"results": results, "new": sorted(set(sys.modules) - before)}, f)
"""


def _probe(tmp_path: Path, *argvs: list[str]) -> tuple[list[dict], list[str]]:
    """Run ``devil ARGV`` for each argv in one fresh interpreter (in ``tmp_path``): each run's exit code and output,
    and the modules the import and the runs added."""
    report = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(argvs)), str(report)], cwd=tmp_path, env=env,
                   check=True, timeout=120)
    doc = json.loads(report.read_text())
    return doc["results"], doc["new"]


def _heavy(modules: list[str]) -> list[str]:
    """The heavy libraries and the package's computing modules among ``modules``."""
    parts = tuple(f"devil_dataset.{p}" for p in COMPUTING_PARTS)
    return sorted(m for m in modules if m.split(".")[0] in HEAVY_LIBRARIES
                  or any(m == p or m.startswith(p + ".") for p in parts))


def _command_paths() -> list[list[str]]:
    """Every command and subcommand of the parser: ``["build"]``, ``["masks", "render"]``, ..."""
    from devil_dataset.cli import build_parser

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> list[list[str]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        return [path for name, child in subs[0].choices.items() for path in walk(child, [*prefix, name])]

    return walk(build_parser(), [])


def test_importing_the_cli_imports_no_heavy_module(tmp_path):
    _, new = _probe(tmp_path)
    assert _heavy(new) == []
    counted = [m for m in new if m.split(".")[0] not in ARRAY_LIBRARIES]
    assert len(counted) <= MODULE_BUDGET, f"{len(counted)} modules: {counted}"


def test_importing_the_cli_imports_neither_numpy_nor_opencv(tmp_path):
    _, new = _probe(tmp_path)
    assert sorted({m.split(".")[0] for m in new} & set(ARRAY_LIBRARIES)) == []


def test_every_command_answers_help_without_heavy_imports(tmp_path):
    paths = _command_paths()
    assert ["masks", "render"] in paths and ["evaluate"] in paths and len(paths) >= 20
    results, new = _probe(tmp_path, ["--help"], *([*path, "--help"] for path in paths))
    for r in results:
        assert r["code"] == 0, r
        assert r["out"].startswith("usage: devil " + " ".join(r["argv"][:-1])), r["out"][:200]
    assert _heavy(new) == []


BAD_ARGUMENTS = [
    (["evaluate", "--dataset", "demo-out/datset", "--config", "all", "--predictions", "."],
     "demo-out/datset: no such folder (demo-out/ exists, holding dataset; a typo?)"),
    (["benchmark", "--dataset", "no-such-folder", "--out", "o", "--method", "telea"], "no-such-folder: no such folder"),
    (["inpaint", "--dataset", "./devil-buld", "--config", "all", "--method", "telea", "--out", "o"],
     "./devil-buld: no such folder"),
    (["evaluate", "--gt-dir", "no-gt", "--pred-dir", "."], "no-gt: no such file or directory"),
    (["diagnose", "--dataset", "no-dataset", "--out", "o"], "no-dataset: no such file or directory"),
    (["build", "no-video.mp4", "--out", "o"], "no-video.mp4: no such file or directory"),
    (["report", "no-results.json"], "no-results.json: no such file or directory"),
    (["masks", "render", "--preset", "all", "--out", "o", "--resolution", "832by480"], "malformed resolution"),
    (["evaluate", "--gt-dir", ".", "--pred-dir", ".", "--jobs", "0"], "must be >= 1"),
    (["no-such-command"], "invalid choice: 'no-such-command'"),
]


def test_bad_arguments_and_paths_exit_2_before_any_heavy_import(tmp_path):
    (tmp_path / "demo-out" / "dataset").mkdir(parents=True)
    results, new = _probe(tmp_path, *(argv for argv, _ in BAD_ARGUMENTS))
    for r, (_, message) in zip(results, BAD_ARGUMENTS):
        assert r["code"] == 2, r
        assert message in r["err"], r["err"]
    assert _heavy(new) == []


def _definition(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("copy, definition", [
    ("PROTOCOLS", "devil_dataset.eval.protocols.registry.built_in_protocol_names"),
    ("PROPAINTER_METRICS", "devil_dataset.eval.protocols.propainter.definition.PROPAINTER_METRICS"),
    ("PROVE_METRICS", "devil_dataset.eval.protocols.prove.definition.PROVE_METRICS"),
    ("DIAGNOSIS_ATTRIBUTES", "devil_dataset.diagnosis.attributes.ATTRIBUTES"),
    ("DIAGNOSIS_DEFAULT_METRICS", "devil_dataset.diagnosis.scores.DEFAULT_METRICS"),
])
def test_the_parsers_names_are_the_librarys(copy, definition):
    from devil_dataset.cli import _names

    found = _definition(definition)
    assert getattr(_names, copy) == (found() if callable(found) else found)


def test_the_parsers_method_name_pattern_is_the_pipelines():
    from devil_dataset.cli._names import METHOD_NAME_RE

    assert METHOD_NAME_RE.pattern == _definition("devil_dataset.pipeline.benchmark.METHOD_NAME_RE").pattern


LAZY_PACKAGES = ["devil_dataset", "devil_dataset.data", "devil_dataset.diagnosis", "devil_dataset.eval",
                 "devil_dataset.inpaint", "devil_dataset.pipeline", "devil_dataset.sources"]


def _type_checking_names(package: str) -> set[str]:
    """The names a package's ``__init__`` imports under ``if TYPE_CHECKING:`` (for the type checker)."""
    tree = ast.parse(Path(importlib.import_module(package).__file__).read_text(encoding="utf-8"))
    blocks = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    return {a.asname or a.name for b in blocks for n in b.body if isinstance(n, ast.ImportFrom) for a in n.names}


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_packages_keep_every_public_name(package):
    """Each name of ``__all__`` is reachable and listed by ``dir()``, and the names imported on first use are the
    ones the type checker is shown."""
    module = importlib.import_module(package)
    lazy = set(module.__lazy_exports__)
    assert lazy == _type_checking_names(package)
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in dir(module)
    assert lazy <= set(module.__all__)


def test_a_name_shared_with_a_submodule_stays_the_exported_object():
    """``pipeline.benchmark`` and ``diagnosis.diagnose`` are functions beside modules of the same name: importing
    the module does not replace the function."""
    import devil_dataset.diagnosis.diagnose
    import devil_dataset.pipeline.benchmark  # noqa: F401

    assert callable(devil_dataset.pipeline.benchmark) and callable(devil_dataset.diagnosis.diagnose)
    from devil_dataset.pipeline import benchmark

    assert benchmark.__module__ == "devil_dataset.pipeline.benchmark" and benchmark is devil_dataset.benchmark

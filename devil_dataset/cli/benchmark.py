"""``devil benchmark``: inpaint, evaluate and report your methods (and the baselines) on a built dataset."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import tomllib

from ..core.errors import DevilError
from ._args import (
    EXAMPLE_FORMATTER,
    add_ci_argument,
    add_external_method_arguments,
    add_set_level_ci_argument,
    dataset_name,
    existing_path,
    output_directory,
    positive_int,
)
from ._main import main as devil_main

EPILOG = """\
examples:
  # your method (a command run once per clip) against two baselines, all ten slices, every metric that can run
  devil benchmark --dataset devil-build/ --out bench/ \\
      --method mine --command "python my_method.py --in {input_dir} --out {output_dir}" \\
      --method telea --method flow-propagation

  # a Python function fn(frames uint8 [T,H,W,3], hole bool [T,H,W]) -> uint8 [T,H,W,3], two slices, PSNR/SSIM
  devil benchmark --dataset devil-build/ --out bench/ --method mine --callable my_pkg.model:inpaint \\
      --slices fg_size_low fg_size_high --metrics psnr ssim

  # the methods listed in a TOML file (see below)
  devil benchmark --dataset devil-build/ --out bench/ --methods-file methods.toml

  # your method only, compared with the demo's baselines (their results merged, not re-run)
  devil benchmark --dataset demo-out/dataset --out bench/ --method mine --callable my_pkg.model:inpaint \\
      --baseline-results demo-out/

--method NAME starts a method; a --command TEMPLATE or --callable MODULE:FN right after it says how to run it,
else NAME must be a baseline (telea, navier-stokes, aligned-copy, flow-propagation). The command template's
placeholders: {input_dir} {output_dir} {clip_id} {num_frames} {width} {height} (see docs/inpainting.md).
A methods file (TOML) has one table per method, in order:
  [methods.mine]
  command = "python my_method.py --in {input_dir} --out {output_dir}"   # or callable = "my_pkg.model:inpaint"
  size_divisor = 8          # optional, also hole_pixels = "zero" | "gt" and timeout = SECONDS
  [methods.telea]           # a baseline: no command/callable (or baseline = "telea")

Each distinct (clip, hole) unit is inpainted once per method and shared by the slices that hold it. Outputs in
OUT: predictions/<method>/<slice>/, results/<method>/<slice>.json, table1.md/.tsv, relative_improvement.*,
figures, findings.md/.json, report-html/index.html, timings.json, benchmark.log. Re-running resumes at the clip
level (also after Ctrl-C: finished units are kept); a predictions folder made by another run (another command,
dataset or slice) is refused, not overwritten. Stored work is keyed on what the method is: editing the callable's
source file or a script the command names redoes its units (--rerun METHOD forces it). A method that fails on a
clip does not stop the others: they are finished and reported, then the failures are listed (exit code 2).
"""

METHOD_KEYS = ("baseline", "command", "callable", "hole_pixels", "size_divisor", "timeout")


class _MethodItem(argparse.Action):
    """Collects --method/--command/--callable in command-line order (pairs are formed after parsing)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((self.metavar, values))
        setattr(namespace, self.dest, items)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "benchmark",
        help="inpaint, evaluate and report your methods and the baselines on a built dataset in one run",
        description="Run one or several inpainting methods (baselines, a command run once per clip, or a Python "
        "function) over the slices of a built DEVIL dataset: each distinct (clip, hole) unit inpainted once, every "
        "metric that can run, then the results, Table 1, figures, findings and HTML report, as `devil demo` does "
        "for the baselines.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("--dataset", required=True, type=dataset_name, metavar="DIR_OR_REPO",
                   help="built DEVIL dataset folder (devil build) or Hub repo id")
    p.add_argument("--out", required=True, type=output_directory, metavar="OUT", help="output folder (resumable)")
    p.add_argument("--method", dest="method_items", action=_MethodItem, metavar="NAME",
                   help="a method's name (a baseline name, or followed by --command/--callable)")
    p.add_argument("--command", dest="method_items", action=_MethodItem, metavar="TEMPLATE",
                   help="the preceding --method runs this command once per clip")
    p.add_argument("--callable", dest="method_items", action=_MethodItem, metavar="MODULE:FN",
                   help="the preceding --method is this function (module:function or file.py:function)")
    p.add_argument("--methods-file", type=existing_path, metavar="FILE", help="TOML file listing methods")
    p.add_argument("--slices", nargs="+", metavar="SLICE", help="slices to run (default: the ten DEVIL slices)")
    p.add_argument("--metrics", nargs="+", metavar="NAME",
                   help="metrics (default: every DEVIL metric that can run here: psnr ssim pcons warp_error, "
                   "plus lpips pvcs fid vfid when their weights are cached)")
    add_external_method_arguments(p, size_divisor_for="external methods: ")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local worker processes (default) or Ray tasks (the `ray` extra)")
    p.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: min(2, CPU count))")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"),
                   help="where network metrics run (default cpu, as the demo)")
    add_ci_argument(p)
    add_set_level_ci_argument(p)
    p.add_argument("--baseline-results", action="append", default=[], type=existing_path, metavar="DIR",
                   help="merge the results files under DIR (e.g. demo-out/: its results/<method>/<slice>.json) into "
                   "the report without re-running those methods; repeatable")
    p.add_argument("--allow-mixed", action="store_true",
                   help="report results scored differently (parity, modes, flow, weights, precision) side by side, "
                   "marked § (default: refused, naming the files and the differing fields)")
    p.add_argument("--rerun", nargs="+", metavar="METHOD", default=[],
                   help="make these methods' predictions and values again, ignoring the stored ones (stored work of a "
                   "method whose code changed -- its callable's source file, or a file its command names -- is made "
                   "again without this)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()] or None


def methods_from_items(items: Sequence[tuple[str, str]], args: argparse.Namespace) -> dict:
    """``[("NAME", "a"), ("TEMPLATE", "cmd"), ("NAME", "telea")]`` -> ``{"a": MethodSpec(command=...), "telea":
    MethodSpec(baseline="telea")}``; a --command/--callable without its --method, or two for one method, is an error.

    >>> ns = argparse.Namespace(size_divisor=None, hole_pixels="zero", timeout=None)
    >>> sorted(methods_from_items([("NAME", "a"), ("MODULE:FN", "m:f"), ("NAME", "telea")], ns))
    ['a', 'telea']
    """
    from ..inpaint.method_spec import MethodSpec

    pending: list[tuple[str, str | None, str | None]] = []  # (name, --command/--callable, its value)
    for metavar, value in items:
        if metavar == "NAME":
            pending.append((value, None, None))
            continue
        option = "--command" if metavar == "TEMPLATE" else "--callable"
        if not pending:
            raise DevilError(f"{option} {value!r}: give --method NAME before it")
        if pending[-1][1] is not None:
            raise DevilError(f"--method {pending[-1][0]}: has both {pending[-1][1]} and {option}; give one")
        pending[-1] = (pending[-1][0], option, value)
    out: dict = {}
    for name, kind, how in pending:
        if name in out:
            raise DevilError(f"--method {name}: given twice; method names must be distinct")
        external = {"hole_pixels": args.hole_pixels, "size_divisor": args.size_divisor,
                    "timeout": float(args.timeout) if args.timeout else None}
        if kind == "--command":
            out[name] = MethodSpec(command=how, **external)
        elif kind == "--callable":
            out[name] = MethodSpec(callable=how, hole_pixels=args.hole_pixels, size_divisor=args.size_divisor)
        else:
            out[name] = MethodSpec(baseline=name)
    return out


def methods_from_file(path: str | Path) -> dict:
    """The methods of a TOML file: one ``[methods.NAME]`` table each (keys :data:`METHOD_KEYS`), in file order."""
    from ..inpaint.method_spec import MethodSpec

    if sys.version_info < (3, 11):
        raise DevilError(f"{path}: reading a TOML methods file needs Python 3.11 or newer (tomllib)")

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DevilError(f"{path}: not a readable TOML file ({exc})") from None
    tables = data.get("methods")
    if not isinstance(tables, dict) or not tables or set(data) != {"methods"}:
        raise DevilError(f"{path}: expected only [methods.NAME] tables, one per method")
    out: dict = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise DevilError(f"{path}: methods.{name} must be a table ([methods.{name}])")
        unknown = sorted(set(table) - set(METHOD_KEYS))
        if unknown:
            raise DevilError(f"{path}: methods.{name}: unknown key(s) {', '.join(unknown)}; valid: "
                             f"{', '.join(METHOD_KEYS)}")
        spec = dict(table)
        if not any(k in spec for k in ("baseline", "command", "callable")):
            spec["baseline"] = name
        try:
            out[name] = MethodSpec(**spec)
        except (DevilError, TypeError) as exc:
            raise DevilError(f"{path}: methods.{name}: {exc}") from None
    return out


def run(args: argparse.Namespace) -> int:
    from ..pipeline.benchmark import benchmark

    methods = methods_from_items(args.method_items or [], args)
    if args.methods_file is not None:
        for name, spec in methods_from_file(args.methods_file).items():
            if name in methods:
                raise DevilError(f"method {name}: given by --method and in {args.methods_file}; names must be "
                                 "distinct")
            methods[name] = spec
    if not methods:
        raise DevilError("no method: give --method NAME [--command TEMPLATE | --callable MODULE:FN] or "
                         "--methods-file FILE")
    result = benchmark(args.dataset, methods, args.out, slices=_split(args.slices), metrics=_split(args.metrics),
                       engine=args.engine, jobs=args.jobs, device=args.device, progress=not args.quiet,
                       ci=args.ci, set_level_ci=args.set_level_ci, rerun=_split(args.rerun) or (),
                       baseline_results=args.baseline_results, allow_mixed=args.allow_mixed)
    return 0 if result.results_files else 1


def main() -> None:  # pragma: no cover

    sys.exit(devil_main(["benchmark", *sys.argv[1:]]))

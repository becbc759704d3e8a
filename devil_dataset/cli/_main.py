"""The ``devil`` parser and entry point: every module of this package that does not start with ``_`` adds a
subcommand group (found by name, so this module imports none of them statically)."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Sequence

from ..core.errors import DevilError
from ..core.version import __version__

#: The package whose modules are the subcommands, and where they are.
_PACKAGE = __name__.rpartition(".")[0]
_PACKAGE_PATH = [str(Path(__file__).parent)]
EXIT_BAD_INPUT = 2  # argparse's own exit code for usage errors; we use it for every bad-input error


def build_parser() -> argparse.ArgumentParser:
    """Return the ``devil`` parser with every subcommand registered.

    Example:
        >>> p = build_parser()
        >>> p.prog
        'devil'
    """

    parser = argparse.ArgumentParser(
        prog="devil",
        description="DEVIL video-inpainting benchmark: masks, curation, labels, slices, evaluation.",
        epilog="Example: devil masks render --preset fgs-h_fgm-l_fgd-l --index 0 --out masks/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"devil-dataset {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(_PACKAGE_PATH), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``devil`` console script; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # an argument type may refuse a path with a DevilError (``_args.dataset_name``)
        # The same numbers on every CPU: pinned once the arguments are read (so --help and usage errors stay light)
        # and before the command imports torch or scipy (core/cpu_pins).
        from ..core.cpu_pins import pin_process  # imports OpenCV: not for --help
        from ..core.freed_memory import reuse_freed_memory

        pin_process()
        reuse_freed_memory()  # the command's process: freed blocks reused, not faulted in again (core/freed_memory)
        return int(args.func(args) or 0)
    except DevilError as exc:
        print(f"devil: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("devil: interrupted; completed outputs are kept, re-run to resume", file=sys.stderr)
        return 130


__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]

"""The ``devil`` command. Each module in this package adds one subcommand group.

A command module defines ``register(subparsers)``: it adds its parser(s) with ``help=``, an ``epilog``
holding a runnable example, and ``set_defaults(func=...)``. The function receives the parsed
``argparse.Namespace`` and returns an exit code. Command modules parse and print only; the work is done by
functions of the library, imported inside the command so that ``devil --help`` stays fast.
Errors: a :class:`~devil_dataset.core.errors.DevilError` prints ``devil: error: ...`` and exits 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Sequence

from ..core.errors import DevilError

EXIT_BAD_INPUT = 2  # argparse's own exit code for usage errors; we use it for every bad-input error


def build_parser() -> argparse.ArgumentParser:
    """Return the ``devil`` parser with every subcommand registered.

    Example:
        >>> p = build_parser()
        >>> p.prog
        'devil'
    """
    from ..core.version import __version__

    parser = argparse.ArgumentParser(
        prog="devil",
        description="DEVIL video-inpainting benchmark: masks, curation, labels, slices, evaluation.",
        epilog="Example: devil masks render --preset fgs-h_fgm-l_fgd-l --index 0 --out masks/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"devil-dataset {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``devil`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DevilError as exc:
        print(f"devil: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("devil: interrupted; completed outputs are kept, re-run to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

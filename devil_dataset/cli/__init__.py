"""The ``devil`` command. Each module in this package adds one subcommand group.

A command module defines ``register(subparsers)``: it adds its parser(s) with ``help=``, an ``epilog``
holding a runnable example, and ``set_defaults(func=...)``. The function receives the parsed
``argparse.Namespace`` and returns an exit code. Command modules parse arguments, call one library function and
print; the work is done by the library. A command module imports only light modules at its head (the standard
library, ``core``'s errors and names, ``_args``, ``_names``) and the library inside the function that runs the
command, so that ``devil --help`` and argument errors answer at once (``tests/cli/test_startup.py``). Errors: a
:class:`~devil_dataset.core.errors.DevilError`, while the arguments are read or the command runs, prints
``devil: error: ...`` and exits 2. The parser and the entry point are in :mod:`devil_dataset.cli._main`.
"""
from __future__ import annotations

import sys

from ._main import EXIT_BAD_INPUT, build_parser, main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

__all__ = ["EXIT_BAD_INPUT", "build_parser", "main"]

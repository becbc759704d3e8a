"""Argument types shared by the command modules (argparse ``type=`` callables)."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

_RESOLUTION = re.compile(r"^(\d+)x(\d+)$")


def resolution(text: str) -> tuple[int, int]:
    """Parse ``WxH`` (e.g. ``832x480``) into ``(width, height)``.

    >>> resolution("832x480")
    (832, 480)
    """
    m = _RESOLUTION.match(text.strip())
    if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
        raise argparse.ArgumentTypeError(f"malformed resolution {text!r}: expected WxH with positive integers, "
                                         "e.g. 832x480")
    return int(m.group(1)), int(m.group(2))


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def output_directory(text: str) -> Path:
    """A directory to write into: it may not exist yet, but must not be an existing file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: exists and is not a directory")
    return path


def existing_path(text: str) -> Path:
    """A file or directory that must exist."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path}: no such file or directory")
    return path


def add_parity_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, sets: str) -> None:
    """``--parity release|corrected`` (default release), the one switch of a command's release-versus-corrected
    modes (:mod:`devil_dataset.core.parity`); ``sets`` says which mode flags it sets and to what.

    >>> p = argparse.ArgumentParser(); add_parity_argument(p, "--mode (release | corrected)")
    >>> p.parse_args(["--parity", "corrected"]).parity
    'corrected'
    """
    from ..core.parity import PARITIES

    parser.add_argument("--parity", choices=PARITIES, default="release",
                        help=f"release (default) reproduces the release, corrected uses the fixed definitions: sets "
                        f"{sets}; an explicit mode flag wins, and the outputs record the resolved modes")


EXAMPLE_FORMATTER = argparse.RawDescriptionHelpFormatter


def add_wait_lock_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--wait-lock``: wait for another run writing the same output folder instead of exiting 2."""
    parser.add_argument("--wait-lock", action="store_true",
                        help="if another run is writing the output folder, wait for it to finish (default: name "
                        "that run and exit 2)")


def output_folder_lock(args: argparse.Namespace, folder: Path):
    """The lock of the output ``folder`` for this command (:mod:`devil_dataset.core.folder_lock`), waiting when
    ``--wait-lock`` was given; a context manager."""
    import sys

    from ..core.folder_lock import hold_folder_lock

    return hold_folder_lock(folder, wait=getattr(args, "wait_lock", False),
                            say=lambda line: print(line, file=sys.stderr, flush=True))

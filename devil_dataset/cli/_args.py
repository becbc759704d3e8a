"""Argument types shared by the command modules (argparse ``type=`` callables)."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..core.atomic import unwritable_reason
from ..core.errors import DevilError
from ..core.folder_lock import hold_folder_lock
from ..core.parity import PARITIES
from ..data.dataset_name import check_dataset_name

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
    """A directory to write into, checked before any work: it may not exist yet, but neither it nor the nearest
    existing folder above it may be a file (whether it can be written is the command's check: the folder lock's, or
    :func:`writable_directory`).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "a-file"; _ = f.write_text("x")
    >>> output_directory(str(f / "sub"))
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: ...a-file/sub: ...a-file is a file, not a folder
    """
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: exists and is not a directory")
    for parent in (path, *path.parents):
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{path}: {parent} is a file, not a folder")
            break
    return path


def writable_directory(path: Path, option: str = "--out") -> Path:
    """Create ``path`` (and its parents) and check that a file can be written there, before any work: a
    :class:`~devil_dataset.core.errors.DevilError` naming ``option`` and the folder otherwise.

    >>> import tempfile, pathlib
    >>> writable_directory(pathlib.Path(tempfile.mkdtemp()) / "new").is_dir()
    True
    """
    reason = unwritable_reason(path)
    if reason:
        raise DevilError(f"{option} {path}: cannot write there ({reason})")
    return path


def existing_path(text: str) -> Path:
    """A file or directory that must exist."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path}: no such file or directory")
    return path


def dataset_name(text: str) -> str:
    """``--dataset DIR_OR_REPO``: an existing folder or a Hub repo id ``ORG/NAME``, checked while the arguments are
    read (:func:`devil_dataset.data.dataset_name.check_dataset_name`: a mistyped path is refused with "no such folder",
    naming what exists; a :class:`~devil_dataset.core.errors.DevilError`, which ``devil`` prints and exits 2 on).

    >>> dataset_name("your-org/devil")
    'your-org/devil'
    """
    check_dataset_name(text)
    return text


def add_parity_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, sets: str) -> None:
    """``--parity release|corrected`` (default release), the one switch of a command's release-versus-corrected
    modes (:mod:`devil_dataset.core.parity`); ``sets`` says which mode flags it sets and to what.

    >>> p = argparse.ArgumentParser(); add_parity_argument(p, "--mode (release | corrected)")
    >>> p.parse_args(["--parity", "corrected"]).parity
    'corrected'
    """

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


    return hold_folder_lock(folder, wait=getattr(args, "wait_lock", False),
                            say=lambda line: print(line, file=sys.stderr, flush=True))


#: ``--ci`` of ``devil report``, ``devil demo`` and ``devil benchmark``: what the Table 1 cells carry.
CI_CHOICES = ("interval", "se")


def add_ci_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--ci [{interval,se}]``: Table 1 cells with their uncertainty (``interval`` when given without a value).

    >>> p = argparse.ArgumentParser(); add_ci_argument(p)
    >>> p.parse_args(["--ci"]).ci, p.parse_args(["--ci", "se"]).ci, p.parse_args([]).ci
    ('interval', 'se', None)
    """
    parser.add_argument("--ci", nargs="?", const="interval", choices=CI_CHOICES, metavar="{interval,se}",
                        help="Table 1 cells with their uncertainty over videos: 'interval' (default when given: 95%% "
                        "BCa bootstrap interval) or 'se' (standard error, sample std / sqrt(n)); FID and VFID cells "
                        "show their jackknife interval when the results carry one (--set-level-ci)")


#: What ``--set-level-ci`` costs per (slice, method), measured by ``OPENBLAS_NUM_THREADS=1 python
#: benchmarks/uncertainty.py --quick --set-level`` (150 videos x 90 frames, random features; AMD EPYC): memory of the
#: per-group statistics (+ the jackknife's peak) and CPU seconds (jackknife + keeping the groups during the pass).
SET_LEVEL_CI_COST = ("FID 640 MiB (+290 MiB while the jackknife runs) and 55 CPU s (21 s jackknife, 33 s keeping the "
                     "groups; 1.3%% of the Inception passes); VFID and VFID (clips) 320 MiB (+72 MiB) and 4 CPU s")


def add_set_level_ci_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--set-level-ci``: FID and VFID also get an interval (``EvalOptions(set_level_ci=True)``); the help states
    its measured cost (:data:`SET_LEVEL_CI_COST`).

    >>> p = argparse.ArgumentParser(); add_set_level_ci_argument(p)
    >>> p.parse_args(["--set-level-ci"]).set_level_ci, p.parse_args([]).set_level_ci
    (True, False)
    """
    parser.add_argument("--set-level-ci", action="store_true",
                        help="also give FID and VFID an interval: a delete-a-group jackknife over 10 groups of "
                        "videos, from their Gaussian statistics kept per group. Opt-in because of its memory; cost per "
                        f"(slice, method) for a 150-video slice of 90-frame clips: {SET_LEVEL_CI_COST} (AMD EPYC, one "
                        "BLAS thread; benchmarks/uncertainty.py --set-level)")


def add_external_method_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                                  size_divisor_for: str = "") -> None:
    """``--size-divisor N``, ``--hole-pixels {zero,gt}`` (default zero) and ``--timeout SECONDS`` of an external
    method (:mod:`devil_dataset.inpaint.external`), shared by ``devil inpaint`` and ``devil benchmark``;
    ``size_divisor_for`` prefixes the padding's help with the methods it applies to (``devil benchmark``: external
    methods only).

    >>> p = argparse.ArgumentParser(); add_external_method_arguments(p)
    >>> a = p.parse_args(["--size-divisor", "8"]); a.size_divisor, a.hole_pixels, a.timeout
    (8, 'zero', None)
    """
    parser.add_argument("--size-divisor", type=positive_int, metavar="N",
                        help=f"{size_divisor_for}mirror-pad inputs to multiples of N and crop predictions back "
                        "(the release's padding)")
    parser.add_argument("--hole-pixels", default="zero", choices=("zero", "gt"),
                        help="external methods: hole pixels of the input frames are black (zero, default) or the "
                        "ground truth as in the release (gt)")
    parser.add_argument("--timeout", type=positive_int, metavar="SECONDS",
                        help="--command: fail a clip after this long")

"""Errors the package raises for bad input. The CLI turns them into a message and exit code 2."""
from __future__ import annotations

import difflib
from typing import Iterable


class DevilError(Exception):
    """Bad input or state that a user can fix; the message names the file and the problem.

    Example:
        >>> raise DevilError("clips/a.mp4: not a video file")
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.DevilError: clips/a.mp4: not a video file
    """


class WeightsMissingError(DevilError):
    """Network weights are not in the cache and cannot be downloaded (offline)."""


class WeightsCorruptError(WeightsMissingError):
    """A cached weights file fails its checksum or cannot be read as plain tensors; the message names the file
    and the command that replaces it. A subclass of :class:`WeightsMissingError`, so a default-metric evaluation
    skips the metric with this reason instead of crashing."""


class UnknownNameError(DevilError, ValueError, KeyError):
    """A name (metric, slice, preset, inpainter, backend, layout...) that is not in its table.

    One type everywhere; it is also a ``ValueError`` and a ``KeyError`` so that older ``except`` clauses work.

    Example:
        >>> try:
        ...     raise UnknownNameError("unknown metric 'nope'; valid: psnr, ssim")
        ... except KeyError as exc:
        ...     print(exc)
        unknown metric 'nope'; valid: psnr, ssim
    """

    __str__ = Exception.__str__


def unknown_name(kind: str, name: object, valid: Iterable[str], *, prefix: str = "") -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name`` not among ``valid``: it suggests the closest valid names (a
    typo gets "did you mean ...") and lists them all. ``prefix`` names the argument (``"--config: "``).

    Example (``...`` elides the rest of the list):
        >>> slices = ["fg_size_low", "fg_size_high", "camera_motion_low"]
        >>> print(unknown_name("slice", "fg_sze_low", slices))  # doctest: +ELLIPSIS
        unknown slice 'fg_sze_low'; did you mean 'fg_size_low' or 'fg_size_high'? valid: fg_size_low, ...
        >>> print(unknown_name("metric", "zzz", ["psnr", "ssim"], prefix="--metrics: "))
        --metrics: unknown metric 'zzz'; valid: psnr, ssim
    """
    valid = [str(v) for v in valid]
    close = difflib.get_close_matches(str(name), valid, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return UnknownNameError(f"{prefix}unknown {kind} {name!r}; {hint}valid: {', '.join(valid)}")


class InvalidInputError(DevilError, ValueError):
    """An argument of a library call has the wrong type, dtype, range, layout or shape; the message names it.

    Example:
        >>> raise InvalidInputError("pred: float values must lie in [0, 1], got max 3.2")
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.InvalidInputError: pred: float values must lie in [0, 1], got max 3.2
    """

"""Errors the package raises for bad input. The CLI turns them into a message and exit code 2."""
from __future__ import annotations


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


class InvalidInputError(DevilError, ValueError):
    """An argument of a library call has the wrong type, dtype, range, layout or shape; the message names it.

    Example:
        >>> raise InvalidInputError("pred: float values must lie in [0, 1], got max 3.2")
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.InvalidInputError: pred: float values must lie in [0, 1], got max 3.2
    """

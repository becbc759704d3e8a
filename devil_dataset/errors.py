"""Errors the package raises for bad input. The CLI turns them into a message and exit code 2."""
from __future__ import annotations


class DevilError(Exception):
    """Bad input or state that a user can fix; the message names the file and the problem.

    Example:
        >>> raise DevilError("clips/a.mp4: not a video file")
        Traceback (most recent call last):
        ...
        devil_dataset.errors.DevilError: clips/a.mp4: not a video file
    """


class WeightsMissingError(DevilError):
    """Network weights are not in the cache and cannot be downloaded (offline)."""


class WeightsCorruptError(WeightsMissingError):
    """A cached weights file fails its checksum or cannot be read as plain tensors; the message names the file
    and the command that replaces it. A subclass of :class:`WeightsMissingError`, so a default-metric evaluation
    skips the metric with this reason instead of crashing."""

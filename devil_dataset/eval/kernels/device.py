"""The one device resolver of the evaluation: ``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``.

    >>> resolve_device("cpu")
    'cpu'
"""
from __future__ import annotations

from ...core.errors import DevilError, UnknownNameError


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cpu``/``cuda`` pass through (checked)."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise UnknownNameError(f"device: unknown device {device!r}; valid: auto, cpu, cuda")
    if device == "cpu":
        return device
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise DevilError(f"device {device!r}: no CUDA device is available")
    return device


__all__ = ["resolve_device"]

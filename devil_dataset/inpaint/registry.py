"""The baselines by name: per-frame spatial (two OpenCV methods), aligned-neighbour copy, flow propagation.

    >>> import numpy as np
    >>> sorted(INPAINTERS)
    ['aligned-copy', 'flow-propagation', 'navier-stokes', 'telea']
    >>> frames = np.zeros((3, 32, 48, 3), np.uint8); hole = np.zeros((3, 32, 48), bool); hole[:, 8:16, 8:16] = True
    >>> get_inpainter("telea")(frames, hole).shape
    (3, 32, 48, 3)
"""
from __future__ import annotations

from ..core.errors import unknown_name
from .aligned_copy import aligned_copy
from .contract import Inpainter
from .flow_propagation import flow_propagation
from .padding import divisor_safe
from .spatial import navier_stokes, telea

INPAINTERS: dict[str, Inpainter] = {
    "telea": telea,
    "navier-stokes": navier_stokes,
    "aligned-copy": aligned_copy,
    "flow-propagation": flow_propagation,
}


def get_inpainter(name: str, size_divisor: int | None = None) -> Inpainter:
    """The registered inpainter ``name``; with ``size_divisor`` > 1 it runs on mirror-padded input (the release's
    metrics).

    Raises :class:`~devil_dataset.core.errors.UnknownNameError` naming the valid choices for an unknown name.
    """
    try:
        inpainter = INPAINTERS[name]
    except KeyError:
        raise unknown_name("inpainter", name, sorted(INPAINTERS)) from None
    if size_divisor is not None and size_divisor > 1:
        inpainter = divisor_safe(inpainter, size_divisor)
    return inpainter


__all__ = ["INPAINTERS", "get_inpainter"]

"""Baseline video inpainters and the registry that names them (issue 6).

An *inpainter* is a callable ``(frames uint8 [T, H, W, 3], hole bool [T, H, W], True = hole) -> uint8
[T, H, W, 3]``. The baselines never read hole pixels and return known pixels unchanged.

    >>> import numpy as np
    >>> sorted(INPAINTERS)
    ['aligned-copy', 'flow-propagation', 'navier-stokes', 'telea']
    >>> frames = np.zeros((3, 32, 48, 3), np.uint8); hole = np.zeros((3, 32, 48), bool); hole[:, 8:16, 8:16] = True
    >>> get_inpainter("telea")(frames, hole).shape
    (3, 32, 48, 3)
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.errors import unknown_name

# The inpainter contract: (frames uint8 [T, H, W, 3], hole bool [T, H, W], True = hole) -> uint8 [T, H, W, 3].
Inpainter = Callable[[np.ndarray, np.ndarray], np.ndarray]

from .aligned_copy import aligned_copy  # noqa: E402  (after Inpainter: submodules import it)
from .flow_propagation import flow_propagation  # noqa: E402
from .spatial import navier_stokes, telea  # noqa: E402

# The baselines of issue 6: per-frame spatial (two OpenCV methods), aligned-neighbour copy, flow propagation.
INPAINTERS: dict[str, Inpainter] = {
    "telea": telea,
    "navier-stokes": navier_stokes,
    "aligned-copy": aligned_copy,
    "flow-propagation": flow_propagation,
}


def get_inpainter(name: str, size_divisor: int | None = None) -> Inpainter:
    """The registered inpainter ``name``; with ``size_divisor`` > 1 it runs on mirror-padded input (SPEC section 7).

    Raises ``KeyError`` naming the valid choices for an unknown name.
    """
    try:
        inpainter = INPAINTERS[name]
    except KeyError:
        raise unknown_name("inpainter", name, sorted(INPAINTERS)) from None
    if size_divisor is not None and size_divisor > 1:
        from .padding import divisor_safe

        inpainter = divisor_safe(inpainter, size_divisor)
    return inpainter


__all__ = ["INPAINTERS", "Inpainter", "get_inpainter", "telea", "navier_stokes", "aligned_copy", "flow_propagation"]

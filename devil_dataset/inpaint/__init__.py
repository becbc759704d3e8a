"""Video inpainters: the baselines and their registry, external methods, and the method spec.

An *inpainter* is a callable ``(frames uint8 [T, H, W, 3], hole bool [T, H, W], True = hole) -> uint8
[T, H, W, 3]`` (:data:`Inpainter`). The baselines never read hole pixels and return known pixels unchanged.

    >>> import numpy as np
    >>> from devil_dataset.inpaint import INPAINTERS, get_inpainter
    >>> sorted(INPAINTERS)
    ['aligned-copy', 'flow-propagation', 'navier-stokes', 'telea']
    >>> frames = np.zeros((3, 32, 48, 3), np.uint8); hole = np.zeros((3, 32, 48), bool); hole[:, 8:16, 8:16] = True
    >>> get_inpainter("telea")(frames, hole).shape
    (3, 32, 48, 3)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .aligned_copy import aligned_copy
    from .contract import Inpainter
    from .flow_propagation import flow_propagation
    from .method_spec import MethodSpec
    from .registry import INPAINTERS, get_inpainter
    from .spatial import navier_stokes, telea

# Each name is imported on first use (core/lazy_exports.py).
__getattr__, __dir__ = lazy_exports(__name__, {
    ".aligned_copy": ("aligned_copy",),
    ".contract": ("Inpainter",),
    ".flow_propagation": ("flow_propagation",),
    ".method_spec": ("MethodSpec",),
    ".registry": ("INPAINTERS", "get_inpainter"),
    ".spatial": ("navier_stokes", "telea"),
})

__all__ = ["INPAINTERS", "Inpainter", "MethodSpec", "get_inpainter", "telea", "navier_stokes", "aligned_copy",
           "flow_propagation"]

"""The network-based DEVIL metrics (SPEC section 7), one module per concern; this module re-exports them.

:mod:`~devil_dataset.eval.frechet` (Frechet distance, mergeable Gaussian statistics),
:mod:`~devil_dataset.eval.perceptual` (LPIPS, FID), :mod:`~devil_dataset.eval.i3d_metrics` (PVCS, VFID,
VFID (clips) from one I3D pass) and :mod:`~devil_dataset.eval.warp` (warp error (mask)).

    >>> import numpy as np
    >>> frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3))
    3.0
"""
from __future__ import annotations

from scipy import linalg  # noqa: F401  (tests patch linalg.sqrtm through this module)

from .frechet import FRECHET_EPS, FRECHET_IMAG_ATOL, GaussianStats, frechet_distance, frechet_of
from .frechet import frechet_of as _frechet_of  # noqa: F401  (former private name)
from .i3d_metrics import PVCS_MODES, PVCS_NORM_EPS, PVCS_WINDOW, I3DMetric, I3DVideoPass, PVCSMetric, VFIDMetric
from .perceptual import FIDMetric, LPIPSMetric
from .protocol import EvalOptions, VideoSample  # noqa: F401  (imported from here before the split)
from .warp import (
    OCC_FB_ABS,
    OCC_FB_REL,
    OCC_GRAD_ABS,
    OCC_GRAD_REL,
    WarpErrorMetric,
    occlusion_mask,
    warp_backward,
    warp_error_pair,
)

__all__ = ["FIDMetric", "FRECHET_EPS", "FRECHET_IMAG_ATOL", "GaussianStats", "I3DMetric", "I3DVideoPass", "LPIPSMetric",
           "OCC_FB_ABS", "OCC_FB_REL", "OCC_GRAD_ABS", "OCC_GRAD_REL", "PVCSMetric", "PVCS_MODES", "PVCS_NORM_EPS",
           "PVCS_WINDOW", "VFIDMetric", "WarpErrorMetric", "frechet_distance", "frechet_of", "occlusion_mask",
           "warp_backward", "warp_error_pair"]

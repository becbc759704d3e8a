"""The networks the metrics use (LPIPS, Inception, I3D, RAFT) and their precision modes.

This package module imports no torch, so that the names below can be read (``EvalOptions`` validates them) by a
pixel-only evaluation that never loads a network.
"""
from ..errors import unknown_name

#: The network precisions: float32 is the reference; tf32 and bf16 trade accuracy for speed on a GPU
#: (``EvalOptions.precision``, ``devil evaluate --precision``; :mod:`devil_dataset.core.networks.precision`).
PRECISIONS: tuple[str, ...] = ("float32", "tf32", "bf16")

#: How far a network metric (LPIPS, FID, PVCS, VFID) may move between CPUs where the AVX2 pins of
#: :mod:`devil_dataset.core.cpu_pins` cannot apply (x86-64 without AVX2, arm64), relative to its value. Measured on the
#: determinism probe (random weights, tests/core/test_determinism.py) under simulated SSE4.2 and SSE3 CPUs: at most
#: 1.9e-6 (VFID of three videos, a rank-deficient covariance; LPIPS and PVCS 2e-7, FID 1.3e-7); the bound keeps a
#: margin of 50x. Results files record it beside the values; Table 1 prints network metrics to 4 significant digits.
#: Where the pins apply (x86-64 with AVX2, with or without AVX-512) the values are identical bit for bit.
NETWORK_CPU_TOLERANCE = 1e-4

#: The DINOv2 model of PROVE's RC-S / RC-T: the one PROVE's paper uses (``run_prove_metrics.py``:
#: ``DINO_PATH = ".../dinov2-giant"``), read from the Hugging Face cache (:mod:`devil_dataset.core.networks.dinov2`).
DEFAULT_DINO_MODEL = "facebook/dinov2-giant"


def check_precision(precision: str, *, prefix: str = "", kind: str = "network precision") -> str:
    """``precision`` when it is one of :data:`PRECISIONS`, else an ``UnknownNameError`` with did-you-mean (``kind``
    names it in the message, after ``prefix``): the one check of the networks, ``EvalOptions`` and the CLI.

    >>> check_precision("bf16")
    'bf16'
    """
    if precision not in PRECISIONS:

        raise unknown_name(kind, precision, PRECISIONS, prefix=prefix)
    return precision

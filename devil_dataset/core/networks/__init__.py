"""The networks the metrics use (LPIPS, Inception, I3D, RAFT) and their precision modes.

This package module imports no torch, so that the names below can be read (``EvalOptions`` validates them) by a
pixel-only evaluation that never loads a network.
"""

#: The network precisions (issue 31): float32 is the reference; tf32 and bf16 trade accuracy for speed on a GPU
#: (``EvalOptions.precision``, ``devil evaluate --precision``; :mod:`devil_dataset.core.networks.precision`).
PRECISIONS: tuple[str, ...] = ("float32", "tf32", "bf16")


def check_precision(precision: str, *, prefix: str = "", kind: str = "network precision") -> str:
    """``precision`` when it is one of :data:`PRECISIONS`, else an ``UnknownNameError`` with did-you-mean (``kind``
    names it in the message, after ``prefix``): the one check of the networks, ``EvalOptions`` and the CLI.

    >>> check_precision("bf16")
    'bf16'
    """
    if precision not in PRECISIONS:
        from ..errors import unknown_name

        raise unknown_name(kind, precision, PRECISIONS, prefix=prefix)
    return precision

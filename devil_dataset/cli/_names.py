"""The library's names that the parsers show before any command runs (``choices=``, help text, an argument type),
held here so that ``devil --help`` and an argument error import none of the modules that define them (numpy, the
metric kernels, the pipeline). Each is a copy of the definition named beside it; ``tests/cli/test_startup.py`` checks
every copy against its definition.

    >>> PROTOCOLS
    ('devil', 'propainter', 'prove')
    >>> bool(METHOD_NAME_RE.match("my-method_2")), bool(METHOD_NAME_RE.match("-x"))
    (True, False)
"""
from __future__ import annotations

import re

#: :func:`devil_dataset.eval.protocols.registry.built_in_protocol_names`: the protocols ``devil evaluate --protocol``
#: names in its help (one registered with ``register_protocol`` is looked up when the command runs).
PROTOCOLS: tuple[str, ...] = ("devil", "propainter", "prove")
#: :data:`devil_dataset.eval.protocols.propainter.definition.PROPAINTER_METRICS`: ``--protocol propainter``'s metrics.
PROPAINTER_METRICS: tuple[str, ...] = ("psnr", "ssim", "hole_psnr", "hole_ssim", "hole_lpips", "vfid", "ewarp")
#: :data:`devil_dataset.eval.protocols.prove.definition.PROVE_METRICS`: the metrics of ``--protocol prove``.
PROVE_METRICS: tuple[str, ...] = ("rc_s", "rc_t", "bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim")
#: :data:`devil_dataset.pipeline.benchmark.METHOD_NAME_RE`: a method name of ``--predictions NAME=PATH``.
METHOD_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
#: :data:`devil_dataset.diagnosis.attributes.ATTRIBUTES`: the five attributes ``devil diagnose`` computes, in order.
DIAGNOSIS_ATTRIBUTES: tuple[str, ...] = ("camera_motion", "bg_scene_motion", "fg_size", "fg_displacement",
                                         "fg_motion")
#: :data:`devil_dataset.diagnosis.scores.DEFAULT_METRICS`: ``devil diagnose --metrics``' default.
DIAGNOSIS_DEFAULT_METRICS: tuple[str, ...] = ("psnr", "ssim")

__all__ = ["DIAGNOSIS_ATTRIBUTES", "DIAGNOSIS_DEFAULT_METRICS", "METHOD_NAME_RE", "PROPAINTER_METRICS", "PROTOCOLS",
           "PROVE_METRICS"]

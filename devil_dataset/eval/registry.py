"""The metric table: CLI name -> implementing class and the result keys it produces (one source of truth).

Classes are imported lazily (``"module:Class"``) so that pixel-only evaluation never imports torch networks.

    >>> METRICS["pcons"].keys
    ('pcons_psnr_mask',)
    >>> "fid" in DEVIL_METRICS
    True
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..core.errors import UnknownNameError
from .protocol import EvalOptions, VideoMetric


@dataclass(frozen=True)
class MetricEntry:
    """A metric's CLI name, implementing class path, result keys, better direction and report format."""

    name: str
    target: str  # "module:Class", imported on demand
    keys: tuple[str, ...]
    higher_is_better: tuple[bool, ...]
    formats: tuple[str, ...]  # SPEC/issue 5: the release's number formats per key
    needs_weights: bool

    def load(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def create(self, options: EvalOptions) -> VideoMetric:
        return self.load()(options)


_E = MetricEntry
METRICS: dict[str, MetricEntry] = {
    e.name: e
    for e in (
        # SPEC section 7 (the DEVIL metrics)
        _E("psnr", "devil_dataset.eval.pixel:PSNRMetric", ("psnr",), (True,), (".2f",), False),
        _E("ssim", "devil_dataset.eval.pixel:SSIMMetric", ("ssim",), (True,), (".4f",), False),
        _E("lpips", "devil_dataset.eval.perceptual:LPIPSMetric", ("lpips",), (False,), (".6f",), True),
        _E("pvcs", "devil_dataset.eval.i3d_metrics:PVCSMetric", ("pvcs",), (False,), (".4f",), True),
        _E("fid", "devil_dataset.eval.perceptual:FIDMetric", ("fid",), (False,), (".2f",), True),
        _E("vfid", "devil_dataset.eval.i3d_metrics:VFIDMetric", ("vfid", "vfid_clips"), (False, False), (".4f", ".4f"), True),
        _E("warp_error", "devil_dataset.eval.warp:WarpErrorMetric", ("warp_error_mask",), (False,), (".6f",), False),
        _E("pcons", "devil_dataset.eval.pixel:PConsMetric", ("pcons_psnr_mask",), (True,), (".2f",), False),
        # SPEC section 8 (related benchmarks): reference-free and fidelity metrics
        _E("self_consistency", "devil_dataset.eval.self_consistency:SelfConsistencyMetric", ("self_consistency",), (False,), (".4f",), True),  # default LPIPS sub-metric
        _E("ff_alpha", "devil_dataset.eval.fidelity:FFAlphaMetric", ("ff_alpha",), (False,), (".4f",), False),
        _E("ff_beta", "devil_dataset.eval.fidelity:FFBetaMetric", ("ff_beta",), (False,), (".4f",), False),
        _E("unchanged_region", "devil_dataset.eval.fidelity:UnchangedRegionMetric", ("unchanged_region",), (False,), (".4f",), False),
    )
}

# The nine DEVIL metric keys of the release's evaluation (SPEC section 7), in report order.
DEVIL_METRICS: tuple[str, ...] = ("psnr", "ssim", "lpips", "pvcs", "fid", "vfid", "warp_error", "pcons")


def metric_entry(name: str) -> MetricEntry:
    """Look up a metric by CLI name; the error lists the valid names."""
    try:
        return METRICS[name]
    except KeyError:
        raise UnknownNameError(f"unknown metric {name!r}; valid: {', '.join(METRICS)}") from None
